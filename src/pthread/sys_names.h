/*
 * pthread/sys_names.h — force-included (-include) when core, os and sync
 * are compiled for libswarm-pthread.so, never for libswarm.
 *
 * The drop-in defines pthread_create, pthread_mutex_lock, sched_yield, ...
 * and exports them, so that an unmodified program's calls reach swarm. The
 * runtime underneath needs the real ones (its workers are real kernel
 * threads, its few internal locks are NPTL mutexes). Inside one shared
 * object a call to an exported name would bind to our own definition, so
 * these macros give the runtime's calls other names; pthread/sys.c defines
 * those names by looking the real functions up with dlsym(RTLD_NEXT). The
 * test dropin_symbols checks that no compiled runtime object still refers to
 * a name the drop-in defines.
 */
#ifndef SWARM_PTHREAD_SYS_NAMES_H
#define SWARM_PTHREAD_SYS_NAMES_H

#define pthread_create swarm_sys_pthread_create
#define pthread_join swarm_sys_pthread_join
#define pthread_self swarm_sys_pthread_self
#define pthread_mutex_lock swarm_sys_pthread_mutex_lock
#define pthread_mutex_unlock swarm_sys_pthread_mutex_unlock
#define pthread_mutex_trylock swarm_sys_pthread_mutex_trylock
#define pthread_once swarm_sys_pthread_once
#define pthread_sigmask swarm_sys_pthread_sigmask
#define pthread_setaffinity_np swarm_sys_pthread_setaffinity_np
#define pthread_getattr_np swarm_sys_pthread_getattr_np
#define pthread_kill swarm_sys_pthread_kill
#define sched_yield swarm_sys_sched_yield
#define nanosleep swarm_sys_nanosleep
#define clock_nanosleep swarm_sys_clock_nanosleep
#define usleep swarm_sys_usleep
#define sleep swarm_sys_sleep
/* the I/O calls the drop-in interposes (pthread/io.c) that the runtime
 * itself makes: its stats descriptor, os.c's stderr and probes */
#define close swarm_sys_close
#define write swarm_sys_write
#define fcntl swarm_sys_fcntl
#define pipe swarm_sys_pipe
#define read swarm_sys_read

#endif
