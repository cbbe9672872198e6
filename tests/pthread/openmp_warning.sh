#!/bin/sh
# openmp_warning.sh SWARMRUN OPENMP_PROGRAM PLAIN_PROGRAM
# The drop-in warns, once, naming libgomp, when the program loads OpenMP's
# runtime (pthread/compat.c), and the program still runs to its end; a
# program without it gets no warning.
set -u
swarmrun=$1 omp=$2 plain=$3
err=$(mktemp) out=$(mktemp)
trap 'rm -f "$err" "$out"' EXIT
fail() { echo "FAIL: $*"; cat "$err"; exit 1; }
"$swarmrun" -w 2 -- "$omp" >"$out" 2>"$err" || fail "the OpenMP program exited with $?"
grep -q '^on swarm: yes$' "$out" || fail "the OpenMP program did not see the drop-in"
tail -n 1 "$out" | grep -q '^OK$' || fail "the OpenMP program did not finish"
n=$(grep -c '^swarm-pthread: warning: .*/libgomp\.so.* is loaded: OpenMP .*hang' "$err")
[ "$n" -eq 1 ] || fail "expected one warning naming libgomp, got $n"
"$swarmrun" -w 2 -- "$plain" >"$out" 2>"$err" || fail "the plain program exited with $?"
if grep -q 'swarm-pthread: warning' "$err"; then fail "a warning for a program without libgomp"; fi
echo "PASS: one warning naming libgomp; none without it"
