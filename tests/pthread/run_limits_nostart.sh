#!/bin/sh
# run_limits_nostart.sh SWARMRUN PROGRAM
# Under an address-space limit too small for the runtime to start, an
# unmodified program still runs under swarmrun: pthread_create says EAGAIN
# on each of 20 calls, and stderr has one line saying the runtime cannot
# start (not one per call) and at most one line from swarm naming the
# limit. The limit is found by raising `ulimit -v` in 256 KiB steps from
# 2 MiB until the program runs (its size depends on the libraries here).
set -u
swarmrun=$1 prog=$2
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
kib=2048
while [ $kib -le 65536 ]; do
  ( ulimit -v $kib && exec "$swarmrun" -w 2 -- "$prog" refused 20 ) >"$out" 2>"$err"
  rc=$?
  if grep -q '^on swarm: yes$' "$out"; then
    break
  fi
  kib=$((kib + 256))
done
cat "$out"
cat "$err" >&2
[ $kib -le 65536 ] || fail "the program never ran under ulimit -v up to 64 MiB"
grep -q 'cannot start the runtime' "$err" ||
  fail "at the smallest limit it runs under ($kib KiB) the runtime started"
[ $rc -eq 0 ] || fail "exit status $rc under ulimit -v $kib"
tail -n 1 "$out" | grep -q '^OK' || fail "no final OK line"
n=$(grep -c 'cannot start the runtime' "$err")
[ "$n" -eq 1 ] || fail "'cannot start the runtime' printed $n times, expected once"
n=$(grep -c '^swarm:' "$err")
[ "$n" -le 1 ] || fail "swarm printed $n lines, expected at most one"
if [ "$n" -eq 1 ]; then
  grep '^swarm:' "$err" | grep -q 'RLIMIT_AS' || fail "swarm's line does not name RLIMIT_AS"
fi
echo "passed under ulimit -v $kib"
