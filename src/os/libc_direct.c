/*
 * os/libc_direct.c — os/sys.h's libc_X functions for libswarm: libc's X,
 * called by its name. In libswarm nothing else defines these names, so a
 * direct call (through the PLT) reaches libc, and no dlsym is needed (a
 * statically linked program has none). Linked into libswarm only; the
 * drop-in links os/libc_next.c instead.
 */
#include "os/sys.h"

#define OS_LIBC_DIRECT(ret, name, params, args)                                \
  ret libc_##name params {                                                     \
    return name args;                                                          \
  }
OS_LIBC_FUNCTIONS(OS_LIBC_DIRECT)

_Noreturn void libc_pthread_exit(void *value) {
  pthread_exit(value);
}
