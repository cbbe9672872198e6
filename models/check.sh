#!/usr/bin/env bash
# models/check.sh — run every spin model (make check-models). Each model is
# checked as the code is, and in variants that must FAIL: a model that
# cannot tell a broken order from a right one proves nothing, so each
# expected failure is part of the check. Needs spin and a C compiler.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0

# run MODEL EXPECT DEFINES... : EXPECT is pass or fail
run() {
  local model=$1 expect=$2
  shift 2
  local name="$model ${*:-(as coded)}"
  (cd "$work" && rm -f pan* ./*.trail &&
    spin -a "$@" "$here/$model" >spin.log 2>&1 &&
    cc -O2 -DSAFETY -DVECTORSZ=4096 -o pan pan.c >cc.log 2>&1 &&
    ./pan -m1000000 >pan.log 2>&1) || true
  local errors
  errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$work/pan.log" 2>/dev/null)
  if [ -z "$errors" ]; then
    echo "check-models: $name: spin/pan did not run"; cat "$work"/*.log; fail=1
    return
  fi
  if grep -q "depth too small\|max search depth too small" "$work/pan.log"; then
    echo "check-models: $name: search truncated (raise -m)"; fail=1
    return
  fi
  local got=pass
  [ "$errors" = 0 ] || got=fail
  local why
  why=$(grep -m1 "^pan:1:" "$work/pan.log" || true)
  if [ "$got" = "$expect" ]; then
    echo "check-models: ok   $name: ${got}${why:+ ($why)}"
  else
    echo "check-models: FAIL $name: expected $expect, got $got${why:+ ($why)}"
    fail=1
  fi
}

run deque.pml pass
run deque.pml fail -DNO_TAKE_FENCE
run deque.pml fail -DNO_PUSH_RELEASE
# sched.c fences a push into a deque that looked empty (make_runnable) and
# the sleeper's re-check (worker_sleep). The model's deque holds only P, so
# its push is that case.
run park_ready.pml pass
run park_ready.pml fail -DCOMMIT_BEFORE_SAVE
# Without the waker's fence the wake-up is lost: the fence is needed.
run park_ready.pml fail -DNO_WAKER_FENCE

# The spawn fast path pushes the parent before its switch; thieves wait for
# the saved sp (sched.c: push_parent_early, thread_wait_saved).
run early_push.pml pass
run early_push.pml fail -DNO_WAIT
run early_push.pml fail -DPUBLISH_EARLY
run early_push.pml fail -DNO_RELEASE
run early_push.pml fail -DWRITE_AFTER

# The exit that keeps its stack publishes EXITED only once off it, so the
# joiner may reuse the stack at once (spawn.c: resume_publish).
run kept_stack.pml pass
run kept_stack.pml fail -DPUBLISH_ON_S

# Who lets a rwlock waiter in (sync/rwlock.c: rw_wake, woken_, handoff_).
run rwlock_wake.pml pass
run rwlock_wake.pml pass -DPREFER_WRITER
run rwlock_wake.pml fail -DPREFER_WRITER -DOLD_GRANT
run rwlock_wake.pml fail -DPREFER_WRITER -DNO_WAKE_AFTER_QUEUE
run rwlock_wake.pml fail -DNO_WOKEN_DEC

[ $fail = 0 ] && echo "check-models: all models behave as expected"
exit $fail
