/*
 * arch/start_generic.c — swarm_arch_start and swarm_arch_resume for back
 * ends that implement only swarm_arch_prepare and swarm_arch_switch
 * (aarch64.S, portable.c): prepare the fresh frame, then switch to it; switch
 * with a save slot nobody reads. x86_64.S has direct versions.
 */
#include "arch/context.h"

void *swarm_arch_start(void **save_sp, void *stack_top,
                       void (*entry)(void *), void *(*after)(void *),
                       void *arg) {
  return swarm_arch_switch(save_sp, swarm_arch_prepare(stack_top, entry),
                           after, arg);
}

_Noreturn void swarm_arch_resume(void *new_sp, void *(*after)(void *),
                                 void *arg) {
  void *scratch;
  swarm_arch_switch(&scratch, new_sp, after, arg);
  __builtin_unreachable();
}
