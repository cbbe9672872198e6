#!/usr/bin/env bash
# Every public function has a man page that renders: the functions the
# built libraries export (nm -D: libswarm, and libswarm-dist/-cio when
# built) plus the static inline ones the headers define (swarm_equal,
# swarm_gptr_add), each with BUILD_DIR/man/man3/<name>.3 that `man -l`
# renders with its name, a NAME line and a SYNOPSIS; swarmrun(1) as well.
# The list of functions is taken from the libraries, not from the
# generator, so a function the generator misses fails here. The C++ ABI's
# __cxa_get_globals(_fast), which libswarm defines for the C++ runtime
# (src/sync/cxx_eh.c), are not the API and have none.
# Usage: tests/install/man_pages.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=${1:?usage: man_pages.sh BUILD_DIR SOURCE_DIR}
src=${2:?usage: man_pages.sh BUILD_DIR SOURCE_DIR}
man=$build/man
fail() { echo "FAIL: $*"; exit 1; }
funcs=$(
  for l in "$build"/lib/libswarm.so "$build"/lib/libswarm-dist.so "$build"/lib/libswarm-cio.so; do
    [ -f "$l" ] && nm -D --defined-only "$l" |
      awk '($2 == "T" || $2 == "W") && $3 !~ /^__cxa_/ { print $3 }'
  done
  grep -ho 'static inline [^(]*\bswarm_[a-z_0-9]*(' "$src"/include/swarm.h "$src"/include/swarm/*.h |
    grep -o 'swarm_[a-z_0-9]*(' | tr -d '('
)
funcs=$(sort -u <<<"$funcs")
[ "$(wc -l <<<"$funcs")" -ge 60 ] || fail "only $(wc -l <<<"$funcs") functions found"
n=0
for f in $funcs; do
  page=$man/man3/$f.3
  [ -f "$page" ] || fail "no man page for $f"
  out=$(MANWIDTH=100 man -l "$page" 2>&1)
  grep -q "^NAME" <<<"$out" && grep -q "^SYNOPSIS" <<<"$out" || fail "$page: no NAME or SYNOPSIS"
  grep -Eq "^ *$f +- +." <<<"$out" || fail "$page: NAME line is not '$f - ...'"
  grep -q "[^_]$f(" <<<"$out" || fail "$page: the prototype of $f is missing"
  grep -qi "warning" <<<"$out" && fail "$page: groff warns: $out"
  n=$((n + 1))
done
out=$(MANWIDTH=100 man -l "$man/man1/swarmrun.1" 2>&1)
grep -q -- "--stats" <<<"$out" || fail "swarmrun(1) lacks --stats"
echo "ok  $n public functions, each with a man page that renders; swarmrun(1) renders"
