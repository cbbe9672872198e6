#!/bin/bash
# bench/pingpong_perf.sh — where a ping-pong server's CPU goes, by library
# and by function (issue 17): runs `build/bench/pingpong --server S --conns C
# --active C` for 6 s, samples the server process with `perf record -e
# cpu-clock` (a software clock: no hardware counters needed) over 2 s of
# its steady state, and prints the round trips/s, the server's samples by
# shared object and its top functions in libswarm.
#
#   bench/pingpong_perf.sh SERVER C [LIBDIR]
#
# LIBDIR (optional) goes first in LD_LIBRARY_PATH, so that two builds of
# libswarm.so.0 can be compared against the same server binary, run after
# run (the figures of one run vary by 20% on a shared machine; the share of
# the server's time spent in user space varies less than its throughput).
set -euo pipefail
server=${1:?usage: pingpong_perf.sh SERVER C [LIBDIR]}
conns=${2:?usage: pingpong_perf.sh SERVER C [LIBDIR]}
libdir=${3:-}
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
command -v perf >/dev/null || { echo "pingpong_perf: perf is not installed (make deps)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
env ${libdir:+LD_LIBRARY_PATH=$libdir} "$build/bench/pingpong" --server "$server" \
  --conns "$conns" --active "$conns" --seconds 6 > "$tmp/run.json" &
runner=$!
sleep 4
pid=$(pgrep -P "$runner" | head -1 || true)
if [ -z "$pid" ]; then
  wait "$runner" || true
  echo "pingpong_perf: no server process found" >&2
  exit 1
fi
perf record -q -e cpu-clock -F 4000 -p "$pid" -o "$tmp/perf.data" -- sleep 2 \
  > /dev/null 2>&1 || true
wait "$runner"
grep -o '"tps": [0-9]*' "$tmp/run.json"
perf report -i "$tmp/perf.data" --sort dso --stdio 2>/dev/null | grep -v '^#' | grep -v '^$' | head -6
perf report -i "$tmp/perf.data" --sort sym --stdio --dsos libswarm.so.0,libswarm.so.0.1.0 2>/dev/null |
  grep -v '^#' | grep -v '^$' | head -14
