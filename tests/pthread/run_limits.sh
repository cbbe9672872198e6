#!/bin/sh
# run_limits.sh SWARMRUN PROGRAM -v|-d KIB EXPECT -- ARGS...
# Runs PROGRAM ARGS under swarmrun -w 2 (-w N with LIMITS_WORKERS=N) with `ulimit -v KIB` (address
# space) or `ulimit -d KIB` (data) set first, as a batch job's limit would
# be. Passes when it exits 0, reports running on swarm, ends with "OK", and
# swarm's stderr is: nothing (EXPECT "-"), or exactly one line from swarm
# that contains EXPECT (the limit it names) and says EAGAIN.
set -u
swarmrun=$1 prog=$2 flag=$3 kib=$4 expect=$5
shift 5
[ "${1:-}" = "--" ] && shift
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
( ulimit "$flag" "$kib" && exec "$swarmrun" -w "${LIMITS_WORKERS:-2}" -- "$prog" "$@" ) >"$out" 2>"$err"
rc=$?
cat "$out"
cat "$err" >&2
fail() { echo "FAIL: $*" >&2; exit 1; }
[ $rc -eq 0 ] || fail "exit status $rc under ulimit $flag $kib"
grep -q '^on swarm: yes$' "$out" || fail "program did not see the drop-in"
tail -n 1 "$out" | grep -q '^OK' || fail "no final OK line"
lines=$(grep -c 'swarm' "$err")
if [ "$expect" = "-" ]; then
  [ "$lines" -eq 0 ] || fail "swarm printed $lines lines, expected none"
else
  [ "$lines" -eq 1 ] || fail "swarm printed $lines lines, expected one naming $expect"
  grep 'swarm' "$err" | grep -q -- "$expect" || fail "the line does not name $expect"
  grep 'swarm' "$err" | grep -q 'EAGAIN' || fail "the line does not say EAGAIN"
fi
echo "passed under ulimit $flag $kib"
