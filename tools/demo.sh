#!/usr/bin/env bash
# tools/demo.sh — what `make demo` runs after `make deps build`: builds the
# benchmark programs and the peers, then runs the short benchmark (~1 minute):
# swarm's fib on 1 and all workers in detail, then fib, btc, uts and nqueens
# on swarm, serial C, OpenMP, oneTBB, NPTL and Go, printed as a table of
# ratios. Results land in BUILD/bench/demo.json (and demo.png when
# matplotlib is there). Usage: tools/demo.sh [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
cd "$root"
# Re-run the configure step: peers installed since the first configure
# (oneTBB, OpenSSL) are found only then.
cmake -S . -B "$build" -DSWARM_BUILD_BENCH=ON >/dev/null
cmake --build "$build" --target bench_all -j "$(nproc)" ||
  echo "demo: some benchmark programs failed to build; they show as unavailable"
exec python3 tools/bench.py --mode demo --build "$build"
