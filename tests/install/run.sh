#!/usr/bin/env bash
# Installs the built library into a scratch prefix and builds tiny consumers
# against it, with CMake's find_package(swarm) and with pkg-config, in C
# (swarm.h) and in C++ (swarm.hpp), then runs them; checks the tools are
# installed. Proves the installed package is usable as the
# README says. Usage: tests/install/run.sh BUILD_DIR
set -euo pipefail
build=$(cd "${1:?usage: run.sh BUILD_DIR}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
prefix=$scratch/prefix

cmake --install "$build" --prefix "$prefix" >/dev/null

# 1. CMake package: find_package(swarm) and the imported target swarm::swarm
cmake -S "$here/consumer" -B "$scratch/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$scratch/cmake-build" >/dev/null
out=$(LD_LIBRARY_PATH="$prefix/lib:$prefix/lib64:${LD_LIBRARY_PATH:-}" "$scratch/cmake-build/consumer")
echo "find_package consumer: $out"
[ "$out" = "fib(20) = 6765" ]
out=$(LD_LIBRARY_PATH="$prefix/lib:$prefix/lib64:${LD_LIBRARY_PATH:-}" "$scratch/cmake-build/cxx_consumer")
echo "find_package C++ consumer: $out"
[ "$out" = "fib(20) = 6765" ]

# 2. pkg-config: cflags and libs from swarm.pc
pcdir=$(dirname "$(find "$prefix" -name swarm.pc | head -n1)")
flags=$(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs swarm)
cc -std=gnu11 -O2 "$here/consumer/consumer.c" -o "$scratch/pc-consumer" $flags
out=$(LD_LIBRARY_PATH="$prefix/lib:$prefix/lib64:${LD_LIBRARY_PATH:-}" "$scratch/pc-consumer")
echo "pkg-config consumer: $out"
[ "$out" = "fib(20) = 6765" ]
c++ -std=c++17 -O2 "$here/consumer/cxx_consumer.cpp" -o "$scratch/pc-cxx-consumer" $flags
out=$(LD_LIBRARY_PATH="$prefix/lib:$prefix/lib64:${LD_LIBRARY_PATH:-}" "$scratch/pc-cxx-consumer")
echo "pkg-config C++ consumer: $out"
[ "$out" = "fib(20) = 6765" ]

# 3. the tools: swarmrun and swarm-trace, runnable from the prefix
for t in swarmrun swarm-trace; do
  [ -x "$prefix/bin/$t" ] || { echo "test-install: $t not installed"; exit 1; }
done
"$prefix/bin/swarm-trace" --help >/dev/null
echo "test-install: passed"
