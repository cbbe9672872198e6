/*
 * models/deque.pml — the Chase-Lev deque of src/core/deque.h (orders of Le,
 * Pop, Cohen, Zappa Nardelli, PPoPP 2013) checked with spin: one owner that
 * pushes and takes, two thieves that steal; every item is taken exactly
 * once, never lost, never duplicated, and a thief never reads a slot before
 * its item is there.
 *
 * Weak memory. Spin is sequentially consistent, so the owner's stores go
 * through store buffers that a separate process drains in any order between
 * locations and in order within one (PSO: stores may pass stores to other
 * locations and loads; loads see their own thread's latest store). This is
 * exactly the reordering the deque's fences exist to stop:
 *   push    release fence before the store to bottom: the item's store
 *           drains first (without it, NO_PUSH_RELEASE, a thief sees the new
 *           bottom and an empty slot: assertion fails).
 *   take    seq_cst fence between the store to bottom and the load of top:
 *           the store drains before top is read (without it,
 *           NO_TAKE_FENCE, the owner and a thief both take the last item).
 *   CAS     seq_cst read-modify-write on top: drains the buffers and is
 *           atomic; owner and thieves race for the last item with it.
 * Not modelled, argued instead (deque.h has the same at each line):
 *   - thieves' loads are performed in program order. In C11 the acquire on
 *     top and bottom gives that; the steal-side seq_cst fence pairs with
 *     take's so that of "owner stored bottom-1" and "thief loaded top",
 *     one is seen by the other (SC-fence axiom); under PSO thieves have no
 *     stores to reorder, so the fence is a no-op here and the model cannot
 *     show it is needed (it is, on POWER/ARM: Le et al. section 4).
 *   - push's acquire load of top pairs with the thieves' CAS so a slot a
 *     thief has just read is not overwritten; with N slots and at most
 *     ITEMS < N items the model never wraps, so this is not exercised.
 *   - array growth: the new array is published with a release store and
 *     loaded with acquire (stronger than the paper's consume); the model
 *     has a fixed array.
 */
#define N 4        /* array slots: more than items, so no growth */
#define ITEMS 3
#define EMPTY 0
#define ABORT 255

int top = 0;
int bottom = 0;
byte slot[N];                          /* memory, as thieves see it */
chan sb_bottom = [4] of { int };       /* owner's pending stores to bottom */
chan sb_slot = [4] of { byte, byte };  /* owner's pending stores to slots */
byte taken[ITEMS + 1];                 /* times each item was taken */
byte finished = 0;

/* Drains one pending store at a time, any location first. */
active proctype memory() {
  int v; byte i, x;
end:
  do
  :: atomic { sb_bottom?v -> bottom = v }
  :: atomic { sb_slot?i, x -> slot[i] = x }
  od
}

inline fence_seq_cst() { empty(sb_bottom) && empty(sb_slot) }

inline record(x) {
  if
  :: x != EMPTY && x != ABORT -> taken[x]++
  :: else -> skip
  fi
}

active proctype owner() {
  int b, t, my_bottom = 0;
  byte my_slot[N], x, item = 1, round = 0;

  /* push(1) push(2) take() push(3) take() take() take() */
  do
  :: round == 7 -> break
  :: round == 0 || round == 1 || round == 3 ->  /* push(item) */
     b = my_bottom;
     t = top;                     /* acquire */
     assert(b - t < N);
     my_slot[b % N] = item; sb_slot!(b % N), item;   /* relaxed */
#ifndef NO_PUSH_RELEASE
     empty(sb_slot);              /* fence(release) */
#endif
     my_bottom = b + 1; sb_bottom!(b + 1);           /* relaxed */
     item++; round++
  :: round == 2 || round >= 4 && round <= 6 ->       /* take() */
     b = my_bottom - 1;
     my_bottom = b; sb_bottom!b;                     /* relaxed */
#ifndef NO_TAKE_FENCE
     fence_seq_cst();             /* fence(seq_cst) */
#endif
     t = top;                     /* relaxed (deque_take_begin) */
     if
     :: t < b -> x = my_slot[b % N]
     :: else ->
        t = top;                  /* deque_take_end reads top again */
        if
        :: t == b ->              /* last item: CAS(top, t, t+1) */
           x = my_slot[b % N];
           atomic { fence_seq_cst();
                    if :: top == t -> top = t + 1
                       :: else -> x = EMPTY fi }
        :: else -> x = EMPTY
        fi;
        my_bottom = b + 1; sb_bottom!(b + 1)
     fi;
     record(x);
     round++
  od;
  finished++
}

active [2] proctype thief() {
  int t, b;
  byte x, tries = 0;
  do
  :: tries == 2 -> break
  :: else ->
     t = top;                     /* acquire */
     /* fence(seq_cst): thieves buffer no stores, nothing to drain */
     b = bottom;                  /* acquire */
     if
     :: t < b ->
        x = slot[t % N];          /* relaxed, read before the CAS */
        atomic {
          if
          :: top == t -> top = t + 1;
             assert(x != EMPTY)   /* the item was published */
          :: else -> x = ABORT
          fi
        }
     :: else -> x = EMPTY
     fi;
     record(x);
     tries++
  od;
  finished++
}

/* Once everyone is done: each item taken exactly once. */
active proctype check() {
  byte i = 1;
  finished == 3;
  do
  :: i <= ITEMS -> assert(taken[i] == 1); i++
  :: else -> break
  od
}
