/*
 * bench/pingpong_client.h — the client loops of build/bench/pingpong: what a
 * loop gets (the connections, the active ones, the counting window) and
 * what it gives back (round trips counted inside the window, errors). Both
 * loops keep one 1-byte message in flight per active connection, check
 * every echo (a read of n bytes is n round trips and is answered with n
 * bytes; a close, a failed read or a short write is an error) and count
 * only the round trips whose echo is seen after the warm-up (t >= t0).
 */
#ifndef PINGPONG_CLIENT_H
#define PINGPONG_CLIENT_H

struct pp_run {
  const int *fd;    /* the connections, all of them */
  long conns;       /* how many */
  long active;      /* fd[k] for k = i * (conns / active), i < active */
  long first, step; /* this loop's share: i = first, first + step, ... */
  double t0, t1;    /* count from t0 (after the warm-up) until t1 */
  long long transactions;
  long errors;
  /* called once by the loop when it first sees t >= t0 (may be NULL) */
  void (*window_opens)(struct pp_run *);
  void *arg;
};

double pp_now(void);
/* the active connection number i's index into fd */
static inline long pp_active_index(const struct pp_run *r, long i) {
  return i * (r->conns / r->active);
}

/* level-triggered epoll, a read and a write per echo (the old client) */
/* A client loop's clock, once per turn: -1 once the run is over, else
 * whether round trips count now (the window opened: r->window_opens is
 * called the first time, *opened remembers it). */
static inline int pp_turn(struct pp_run *r, int *opened) {
  double t = pp_now();
  if (t >= r->t1)
    return -1;
  int counting = t >= r->t0;
  if (counting && !*opened) {
    *opened = 1;
    if (r->window_opens)
      r->window_opens(r);
  }
  return counting;
}

void pp_client_epoll(struct pp_run *r);
/* whether pp_client_uring can run here (0), or -errno and *why */
int pp_uring_usable(const char **why);
/* io_uring: a multishot recv armed per active connection on a provided
 * buffer ring, sends queued as SQEs, one io_uring_enter per batch. Returns
 * 0 when it ran, or -errno with *why set when io_uring is unusable here
 * (nothing sent or counted then: the caller falls back to epoll). */
int pp_client_uring(struct pp_run *r, const char **why);

#endif
