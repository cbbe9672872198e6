/* dropin_unwind's frame built without -fexceptions: its
 * pthread_cleanup_push saves a jump buffer and registers it
 * (__pthread_register_cancel), which the unwinding must take in its
 * place on the stack. */
#include <pthread.h>

void dropin_unwind_note(int run, char c);
void dropin_unwind_plain(int run, void (*inner)(int));

static void note_plain(void *run) {
  dropin_unwind_note(*(int *)run, 'p');
}

void dropin_unwind_plain(int run, void (*inner)(int)) {
  pthread_cleanup_push(note_plain, &run);
  inner(run);
  pthread_cleanup_pop(0);
}
