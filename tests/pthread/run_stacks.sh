#!/bin/sh
# run_stacks.sh SWARMRUN PROGRAM — the drop-in's stacks against plain NPTL's.
# 1. Under several stack limits (ulimit -s: 8 MiB, 1 MiB, 64 MiB, unlimited
#    (NPTL: ARCH_STACK_DEFAULT_SIZE), 64 KiB; below that the process's own
#    start-up fails, with or without swarm) PROGRAM report prints the same lines with
#    and without the drop-in: the default attr's size, pthread_getattr_np's
#    size and guard of a running thread, and that the thread could fill it.
# 2. SWARM_STACK_SIZE still overrides the default under the drop-in.
# 3. Overflows (deep recursion in a thread, a frame that skips a one-page
#    guard, main's own stack) end the drop-in's process with SIGSEGV and the
#    message naming the thread in the program's terms: its pthread_t, its
#    name, its start routine.
set -u
swarmrun=$1 prog=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

for lim in 8192 1024 65536 unlimited 64; do
  (ulimit -s "$lim" && "$prog" report) >"$tmp/plain" 2>&1 ||
    fail "plain run, ulimit -s $lim: $(cat "$tmp/plain")"
  (ulimit -s "$lim" && "$swarmrun" -w "${DROPIN_WORKERS:-2}" -- "$prog" report) >"$tmp/swarm" 2>&1 ||
    fail "drop-in run, ulimit -s $lim: $(cat "$tmp/swarm")"
  grep -q '^on swarm: yes$' "$tmp/swarm" || fail "ulimit -s $lim: not on swarm"
  grep -q '^on swarm: no$' "$tmp/plain" || fail "ulimit -s $lim: plain run on swarm"
  grep -v '^on swarm' "$tmp/plain" >"$tmp/plain.cmp"
  grep -v '^on swarm' "$tmp/swarm" >"$tmp/swarm.cmp"
  echo "ulimit -s $lim: NPTL says"
  sed 's/^/  /' "$tmp/plain.cmp"
  cmp -s "$tmp/plain.cmp" "$tmp/swarm.cmp" ||
    fail "ulimit -s $lim: the drop-in says otherwise: $(cat "$tmp/swarm")"
done

SWARM_STACK_SIZE=1M "$swarmrun" -w "${DROPIN_WORKERS:-2}" -- "$prog" report >"$tmp/env" 2>&1 ||
  fail "SWARM_STACK_SIZE=1M: $(cat "$tmp/env")"
grep -q '^thread getattr_np stacksize 1048576 ' "$tmp/env" ||
  fail "SWARM_STACK_SIZE=1M not honoured: $(cat "$tmp/env")"

# expect_overflow MODE PATTERN... : SIGSEGV (139 from the shell) and each
# pattern on stderr; @T@ in a pattern stands for the printed pthread_t.
expect_overflow() {
  mode=$1
  shift
  (ulimit -s 8192 && exec "$swarmrun" -w "${DROPIN_WORKERS:-2}" -- "$prog" "$mode") >"$tmp/out" 2>"$tmp/err"
  rc=$?
  cat "$tmp/err"
  [ $rc -eq 139 ] || fail "$mode: exit status $rc, expected death by SIGSEGV"
  grep -q 'not reached' "$tmp/out" && fail "$mode: the fault went unseen"
  t=$(sed -n 's/^pthread_t //p' "$tmp/out")
  for p in "$@"; do
    p=$(printf '%s' "$p" | sed "s/@T@/$t/")
    grep -qF -- "$p" "$tmp/err" || fail "$mode: no '$p' in the message"
  done
}
expect_overflow overflow "swarm: stack overflow in thread @T@ \"deep\" (pthread_t; start routine overflow_routine in " \
  "stack size 8388608 bytes" "pthread_attr_setstacksize()" "ulimit -s"
expect_overflow clash "swarm: stack overflow in thread @T@ (pthread_t; start routine clash_routine in "
expect_overflow main "swarm: stack overflow in the main thread"
echo OK
