/*
 * pthread/process.c — the signal mask of a process started from a swarm
 * thread (issue 21 item 1). A new process inherits the kernel mask of the
 * kernel thread that made it; a worker blocks nearly every signal
 * (signal.c), which a child would otherwise keep: a `sleep 30` started
 * from a swarm thread ignored SIGTERM. So every call here runs the libc
 * call with the calling thread's recorded mask installed on its worker for
 * the length of the call, and the worker's mask back afterwards: the
 * exec family (the new image starts with it), posix_spawn and
 * posix_spawnp (a child without POSIX_SPAWN_SETSIGMASK takes the caller's),
 * system and popen (glibc spawns through its internal posix_spawn).
 * fork needs nothing: its child execs through the wrappers here, and a
 * child that does not exec runs the drop-in's own signal model.
 *
 * While the thread's mask is on the worker (an exec that fails, a spawn,
 * or the whole wait of system()), a process-directed signal the thread
 * does not block may be delivered to this worker by the kernel: its
 * handler then runs on the calling thread, which NPTL could have chosen
 * as well.
 */
#include <dlfcn.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "pthread/dropin.h"

static void *next_symbol(const char *name) {
  void *p = dlsym(RTLD_NEXT, name);
  if (!p) {
    static const char a[] = "swarm-pthread: cannot find the real ";
    os_write_stderr(a, sizeof a - 1);
    for (const char *c = name; *c; c++)
      os_write_stderr(c, 1);
    os_write_stderr("\n", 1);
    abort();
  }
  return p;
}

/* The real `name` into the local `real` of type `type`. */
#define REAL(type, name)                                                       \
  static type _Atomic real_##name;                                             \
  type real = atomic_load_explicit(&real_##name, memory_order_relaxed);        \
  if (!real) {                                                                 \
    real = (type)next_symbol(#name);                                           \
    atomic_store_explicit(&real_##name, real, memory_order_relaxed);           \
  }

struct mask_window {
  bool on;
  sigset_t worker;
};

static struct mask_window mask_enter(void) {
  struct mask_window m = {false, {{0}}};
  sigset_t mine;
  if (dropin_signal_thread_mask(&mine)) {
    sys_sigmask(SIG_SETMASK, &mine, &m.worker);
    m.on = true;
  }
  return m;
}

/* Puts the worker's mask back; errno survives. */
static void mask_leave(struct mask_window *m) {
  if (!m->on)
    return;
  int e = *os_errno_location();
  sys_sigmask(SIG_SETMASK, &m->worker, NULL);
  *os_errno_location() = e;
}

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execv_fn)(const char *, char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef int (*execveat_fn)(int, const char *, char *const[], char *const[],
                           int);
typedef int (*spawn_fn)(pid_t *, const char *,
                        const posix_spawn_file_actions_t *,
                        const posix_spawnattr_t *, char *const[],
                        char *const[]);
typedef int (*system_fn)(const char *);
typedef FILE *(*popen_fn)(const char *, const char *);

DROPIN_API int execve(const char *path, char *const argv[],
                      char *const envp[]) {
  REAL(execve_fn, execve)
  struct mask_window m = mask_enter();
  int r = real(path, argv, envp);
  mask_leave(&m);
  return r;
}

DROPIN_API int execv(const char *path, char *const argv[]) {
  REAL(execv_fn, execv)
  struct mask_window m = mask_enter();
  int r = real(path, argv);
  mask_leave(&m);
  return r;
}

DROPIN_API int execvp(const char *file, char *const argv[]) {
  REAL(execv_fn, execvp)
  struct mask_window m = mask_enter();
  int r = real(file, argv);
  mask_leave(&m);
  return r;
}

DROPIN_API int execvpe(const char *file, char *const argv[],
                       char *const envp[]) {
  REAL(execve_fn, execvpe)
  struct mask_window m = mask_enter();
  int r = real(file, argv, envp);
  mask_leave(&m);
  return r;
}

DROPIN_API int fexecve(int fd, char *const argv[], char *const envp[]) {
  REAL(fexecve_fn, fexecve)
  struct mask_window m = mask_enter();
  int r = real(fd, argv, envp);
  mask_leave(&m);
  return r;
}

DROPIN_API int execveat(int dirfd, const char *path, char *const argv[],
                        char *const envp[], int flags) {
  REAL(execveat_fn, execveat)
  struct mask_window m = mask_enter();
  int r = real(dirfd, path, argv, envp, flags);
  mask_leave(&m);
  return r;
}

/* The execl family: the arguments into an array, then the v form. */
#define COLLECT_ARGS(first, ap, argv, envp_out)                                \
  size_t n = 1;                                                                \
  va_start(ap, first);                                                         \
  while (va_arg(ap, char *))                                                   \
    n++;                                                                       \
  va_end(ap);                                                                  \
  char *argv[n + 1];                                                           \
  argv[0] = (char *)(first);                                                   \
  va_start(ap, first);                                                         \
  for (size_t i = 1; i <= n; i++)                                              \
    argv[i] = va_arg(ap, char *);                                              \
  envp_out;                                                                    \
  va_end(ap)

DROPIN_API int execl(const char *path, const char *arg, ...) {
  va_list ap;
  COLLECT_ARGS(arg, ap, argv, (void)0);
  return execv(path, argv);
}

DROPIN_API int execlp(const char *file, const char *arg, ...) {
  va_list ap;
  COLLECT_ARGS(arg, ap, argv, (void)0);
  return execvp(file, argv);
}

DROPIN_API int execle(const char *path, const char *arg, ...) {
  va_list ap;
  char **envp;
  COLLECT_ARGS(arg, ap, argv, envp = va_arg(ap, char **));
  return execve(path, argv, envp);
}

DROPIN_API int posix_spawn(pid_t *pid, const char *path,
                           const posix_spawn_file_actions_t *fa,
                           const posix_spawnattr_t *attr, char *const argv[],
                           char *const envp[]) {
  REAL(spawn_fn, posix_spawn)
  struct mask_window m = mask_enter();
  int r = real(pid, path, fa, attr, argv, envp);
  mask_leave(&m);
  return r;
}

DROPIN_API int posix_spawnp(pid_t *pid, const char *file,
                            const posix_spawn_file_actions_t *fa,
                            const posix_spawnattr_t *attr, char *const argv[],
                            char *const envp[]) {
  REAL(spawn_fn, posix_spawnp)
  struct mask_window m = mask_enter();
  int r = real(pid, file, fa, attr, argv, envp);
  mask_leave(&m);
  return r;
}

DROPIN_API int system(const char *command) {
  REAL(system_fn, system)
  struct mask_window m = mask_enter();
  int r = real(command);
  mask_leave(&m);
  return r;
}

DROPIN_API FILE *popen(const char *command, const char *type) {
  REAL(popen_fn, popen)
  struct mask_window m = mask_enter();
  FILE *f = real(command, type);
  mask_leave(&m);
  return f;
}
