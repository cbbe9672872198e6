#!/usr/bin/env bash
# Installs the built library into a scratch prefix and builds two tiny
# consumers against it, one with CMake's find_package(swarm) and one with
# pkg-config, then runs both. Proves the installed package is usable as the
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

# 2. pkg-config: cflags and libs from swarm.pc
pcdir=$(dirname "$(find "$prefix" -name swarm.pc | head -n1)")
flags=$(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs swarm)
cc -std=gnu11 -O2 "$here/consumer/consumer.c" -o "$scratch/pc-consumer" $flags
out=$(LD_LIBRARY_PATH="$prefix/lib:$prefix/lib64:${LD_LIBRARY_PATH:-}" "$scratch/pc-consumer")
echo "pkg-config consumer: $out"
[ "$out" = "fib(20) = 6765" ]
echo "test-install: passed"
