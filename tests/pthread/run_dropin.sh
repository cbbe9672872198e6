#!/bin/sh
# run_dropin.sh SWARMRUN PROGRAM MIN_SPAWNED
# Runs PROGRAM under swarmrun -w 2 --stats (-w N with DROPIN_WORKERS=N).
# Passes when it exits 0, its stdout ends with "OK", it reports running on swarm, and swarm's stats show
# at least MIN_SPAWNED threads spawned.
set -u
swarmrun=$1 prog=$2 min=$3
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
"$swarmrun" -w "${DROPIN_WORKERS:-2}" --stats -- "$prog" >"$out" 2>"$err"
rc=$?
cat "$out"
grep -v '^swarm stats:' "$err" >&2
if [ $rc -ne 0 ]; then echo "FAIL: exit status $rc" >&2; exit 1; fi
grep -q '^on swarm: yes$' "$out" || { echo "FAIL: program did not see the drop-in" >&2; exit 1; }
tail -n 1 "$out" | grep -q '^OK' || { echo "FAIL: no final OK line" >&2; exit 1; }
# Sum the spawned column of the stats of the main process (the first table).
spawned=$(awk '/^swarm stats: worker/ {n++} n==1 && /^swarm stats: [0-9]/ {s += $4} END {print s+0}' "$err")
if [ "$spawned" -lt "$min" ]; then
  echo "FAIL: swarm spawned $spawned threads, expected at least $min" >&2
  exit 1
fi
echo "swarm spawned $spawned threads"
