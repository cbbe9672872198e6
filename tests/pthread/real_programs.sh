#!/bin/sh
# Unmodified programs from Debian's packages on swarm threads (issue 4's
# proof): pigz -p 64, xz -T8 and zstd -T8 compress the same input under
# swarmrun and under NPTL, and GNU sort --parallel=8 sorts it. Checks, for
# each: exit status 0; output bytes identical to NPTL's; decompression gives
# back the input (sort: the output is sorted); and swarmrun
# --stats shows at least MIN threads spawned on swarm (the program really ran
# on swarm threads, not on kernel threads the preload missed).
# Usage: real_programs.sh SWARMRUN
set -u
swarmrun=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
for p in pigz xz zstd; do
  command -v $p >/dev/null 2>&1 || { echo "FAIL: $p not installed (make deps installs it)"; exit 1; }
done
# 12 MB of text that compresses (base64 of a fixed pseudo-random stream).
awk 'BEGIN { srand(42); for (i = 0; i < 190000; i++) { s = ""; for (j = 0; j < 8; j++) s = s sprintf("%08x", int(rand() * 4294967296)); print s } }' >"$work/in"

run() { # name min compress... -- decompress...
  name=$1 min=$2; shift 2
  comp=""; while [ "$1" != "--" ]; do comp="$comp $1"; shift; done; shift
  decomp="$*"
  if ! "$swarmrun" -w 2 --stats $comp <"$work/in" >"$work/$name.swarm" 2>"$work/$name.stats"; then
    echo "FAIL: $name exited non-zero under swarmrun"; cat "$work/$name.stats"; fail=1; return
  fi
  $comp <"$work/in" >"$work/$name.nptl"
  if ! cmp -s "$work/$name.swarm" "$work/$name.nptl"; then
    echo "FAIL: $name: compressed output differs from NPTL's"; fail=1; return
  fi
  if ! $decomp <"$work/$name.swarm" | cmp -s - "$work/in"; then
    echo "FAIL: $name: decompressed output differs from the input"; fail=1; return
  fi
  spawned=$(awk '/^swarm stats: [0-9]/ { s += $4 } END { print s + 0 }' "$work/$name.stats")
  if [ "$spawned" -lt "$min" ]; then
    echo "FAIL: $name: only $spawned threads on swarm (expected >= $min)"; cat "$work/$name.stats"; fail=1; return
  fi
  echo "ok  $name: identical to NPTL, round-trips, $spawned threads on swarm"
}
run pigz 64 pigz -p 64 -c -- gzip -dc
# xz starts a thread only when no started one is idle, so how many it starts
# depends on scheduling (6-8 of its 8 seen on 2 workers).
run xz 4 xz -T8 --block-size=1MiB -c -- xz -dc
run zstd 2 zstd -T8 -q -c -- zstd -dc -q
# GNU sort (coreutils) sorts in parallel only past a few tens of MB.
cat "$work/in" "$work/in" "$work/in" "$work/in" >"$work/in4"
if ! "$swarmrun" -w 2 --stats sort --parallel=8 -S 100M "$work/in4" >"$work/sort.swarm" 2>"$work/sort.stats"; then
  echo "FAIL: sort exited non-zero under swarmrun"; cat "$work/sort.stats"; fail=1
else
  sort --parallel=8 -S 100M "$work/in4" >"$work/sort.nptl"
  spawned=$(awk '/^swarm stats: [0-9]/ { s += $4 } END { print s + 0 }' "$work/sort.stats")
  if ! cmp -s "$work/sort.swarm" "$work/sort.nptl"; then
    echo "FAIL: sort: output differs from NPTL's"; fail=1
  elif ! sort -c "$work/sort.swarm"; then
    echo "FAIL: sort: output is not sorted"; fail=1
  elif [ "$spawned" -lt 4 ]; then
    echo "FAIL: sort: only $spawned threads on swarm (expected >= 4)"; cat "$work/sort.stats"; fail=1
  else
    echo "ok  sort: identical to NPTL, sorted, $spawned threads on swarm"
  fi
fi
[ $fail = 0 ] && echo "real programs: passed"
exit $fail
