/* tests/pthread/preempt_tls_lib.c — a shared object with thread-local
 * storage of its own, for dropin_preempt_tls: tls_work counts to `iters`
 * in a TLS variable, a load and a store per step with some work between,
 * as an allocator's thread cache updates its lists. Run by one kernel
 * thread at a time, the count it returns is `iters`; two threads switched
 * on one kernel thread in the middle of it mix their counts. Built twice:
 * linked to the program, and loaded later with dlopen. */
static __thread volatile long counter;

long tls_work(long iters) {
  counter = 0;
  for (long i = 0; i < iters; i++) {
    long v = counter;
    for (volatile int k = 0; k < 20; k++) {
    }
    counter = v + 1;
  }
  return counter;
}
