/*
 * os/libc_next.c — os/sys.h's libc_X functions for libswarm-pthread.so:
 * libc's X, looked up once with dlsym(RTLD_NEXT, "X"), i.e. the next
 * definition after this library in the lookup order — glibc's, wherever
 * that glibc keeps it (libpthread.so.0 before 2.34, libc.so.6 since). The
 * drop-in defines these names itself, so calling them by name here would
 * call the drop-in. Nothing depends on glibc's internal or versioned names.
 * A missing function is fatal and says which. Linked into the drop-in only;
 * libswarm links os/libc_direct.c instead.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "os/os.h"
#include "os/sys.h"

static void *resolve(const char *name) {
  void *p = dlsym(RTLD_NEXT, name);
  if (!p) {
    static const char a[] = "swarm-pthread: cannot find the real ";
    os_write_stderr(a, sizeof a - 1);
    os_write_stderr(name, strlen(name));
    os_write_stderr("\n", 1);
    abort();
  }
  return p;
}

/* The real `name`, resolved on first use. Racing first calls store the
 * same value. */
#define OS_LIBC_NEXT(ret, name, params, args)                                  \
  ret libc_##name params {                                                     \
    static ret(*_Atomic real) params;                                          \
    ret(*f) params = atomic_load_explicit(&real, memory_order_relaxed);        \
    if (!f) {                                                                  \
      f = (ret(*) params)resolve(#name);                                       \
      atomic_store_explicit(&real, f, memory_order_relaxed);                   \
    }                                                                          \
    return f args;                                                             \
  }
OS_LIBC_FUNCTIONS(OS_LIBC_NEXT)

_Noreturn void libc_pthread_exit(void *value) {
  static void (*_Atomic real)(void *);
  void (*f)(void *) = atomic_load_explicit(&real, memory_order_relaxed);
  if (!f) {
    f = (void (*)(void *))resolve("pthread_exit");
    atomic_store_explicit(&real, f, memory_order_relaxed);
  }
  f(value);
  abort(); /* it does not return */
}
