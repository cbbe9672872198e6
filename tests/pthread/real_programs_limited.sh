#!/bin/sh
# Debian's pigz with 8 compression threads under `ulimit -v 262144` (a
# 256 MiB address-space cap, as a batch job may have), on swarm threads
# (issue 20): it exits 0, its output decompresses to the input and equals
# what pigz writes with no limit, and swarmrun --stats shows it ran at least
# 8 threads on swarm. (Under NPTL the same command cannot make its threads:
# 8 MiB stacks and a 64 MiB malloc arena each; this pigz then says
# "resource unavailable" and waits for ever, so NPTL is not run limited.)
# Usage: real_programs_limited.sh SWARMRUN
set -u
swarmrun=$1
command -v pigz >/dev/null 2>&1 || { echo "FAIL: pigz not installed (make deps installs it)"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
awk 'BEGIN { srand(7); for (i = 0; i < 190000; i++) { s = ""; for (j = 0; j < 8; j++) s = s sprintf("%08x", int(rand() * 4294967296)); print s } }' >"$work/in"
fail() { echo "FAIL: $*"; cat "$work/err"; exit 1; }
( ulimit -v 262144 && exec "$swarmrun" -w 2 --stats -- pigz -p 8 -c "$work/in" ) >"$work/out" 2>"$work/err" ||
  fail "pigz -p 8 exited non-zero under swarmrun and ulimit -v 262144"
pigz -p 8 -c "$work/in" >"$work/free"
cmp -s "$work/out" "$work/free" || fail "output differs from pigz's without a limit"
pigz -d -c "$work/out" | cmp -s - "$work/in" || fail "output does not decompress to the input"
spawned=$(awk '/^swarm stats: [0-9]/ { s += $4 } END { print s + 0 }' "$work/err")
[ "$spawned" -ge 8 ] || fail "only $spawned threads on swarm"
grep -v '^swarm stats' "$work/err" | grep -q swarm && fail "swarm printed a refusal"
echo "ok  pigz -p 8 under ulimit -v 262144: identical output, $spawned threads on swarm"
