/*
 * examples/httpd/rt.h — the only place httpd.c names its thread runtime.
 *
 * httpd.c is written as plain blocking code, one thread per connection.
 * Built normally, each connection is a swarm thread and its reads and writes
 * are swarm's (they park the swarm thread, never the worker). Built with
 * -DHTTPD_NPTL the very same source runs one kernel thread (NPTL) per
 * connection with libc's blocking calls: the comparison make bench-httpd
 * draws. Both give every connection thread the same stack size.
 */
#ifndef HTTPD_RT_H
#define HTTPD_RT_H

#include <stddef.h>
#include <sys/uio.h>

enum { RT_STACK_SIZE = 64 * 1024 };

#ifdef HTTPD_NPTL
#include <pthread.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#define rt_read read
#define rt_write write
#define rt_writev writev
#define rt_pread pread
#define rt_send send
#define rt_sendfile sendfile
#define rt_accept accept
#define rt_close close

static pthread_attr_t rt_attr;

static inline int rt_start(void) {
  pthread_attr_init(&rt_attr);
  pthread_attr_setdetachstate(&rt_attr, PTHREAD_CREATE_DETACHED);
  /* NPTL refuses less than its minimum, which is 128 KiB on aarch64 */
  long min = sysconf(_SC_THREAD_STACK_MIN);
  size_t size = min > RT_STACK_SIZE ? (size_t)min : RT_STACK_SIZE;
  return pthread_attr_setstacksize(&rt_attr, size);
}
/* 0, or an errno value (EAGAIN: no memory or thread limit reached). */
static inline int rt_spawn(void *(*fn)(void *), void *arg) {
  pthread_t t;
  return pthread_create(&t, &rt_attr, fn, arg);
}
static inline void rt_nap_ms(int ms) {
  usleep((useconds_t)ms * 1000);
}
static inline const char *rt_name(void) {
  return "nptl";
}
static inline int rt_workers(void) {
  return 0;
}
static inline void rt_flags_changed(void) {}
#else
#include "swarm.h"
#include "swarm/io.h"

#define rt_read swarm_read
#define rt_write swarm_write
#define rt_writev swarm_writev
#define rt_pread swarm_pread
#define rt_send swarm_send
#define rt_sendfile swarm_sendfile
#define rt_accept swarm_accept
#define rt_close swarm_close

static swarm_attr_t rt_attr;

/* Workers come from SWARM_WORKERS (default: one per CPU). The server sets
 * its sockets' options before their first wait, and says so after the one
 * change it makes later (rt_flags_changed), so swarm may keep what the
 * kernel said of O_NONBLOCK and the timeouts per descriptor instead of asking
 * before every wait (swarm_io_cache_flags: two system calls fewer). */
static inline int rt_start(void) {
  int e = swarm_init(NULL);
  if (e != 0)
    return e;
  swarm_io_cache_flags();
  swarm_attr_init(&rt_attr);
  swarm_attr_setdetachstate(&rt_attr, SWARM_CREATE_DETACHED);
  return swarm_attr_setstacksize(&rt_attr, RT_STACK_SIZE);
}
static inline int rt_spawn(void *(*fn)(void *), void *arg) {
  return swarm_spawn(NULL, &rt_attr, fn, arg);
}
static inline void rt_nap_ms(int ms) {
  swarm_sleep_ns((uint64_t)ms * 1000000);
}
static inline const char *rt_name(void) {
  return "swarm";
}
static inline int rt_workers(void) {
  return swarm_num_workers();
}
static inline void rt_flags_changed(void) {
  swarm_io_flags_changed();
}
#endif

#endif
