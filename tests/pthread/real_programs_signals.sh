#!/bin/sh
# Unmodified Debian programs that use signals on threads (issue 16 items 1
# and 8), under swarmrun -w W (default 2) and checked against what NPTL
# gives:
#  - pbzip2 -p4 ends its SignalHandlerThread (a thread in sigwait) with
#    pthread_kill(SIGQUIT) when done: exit 0, no "Couldn't signal", the
#    output round-trips, and the stats show its threads ran on swarm;
#  - pbzip2 sent SIGINT mid-run: its signal thread takes it, quits and
#    deletes the partial output (exit 1, as under NPTL), no hang;
#  - iperf -s sent SIGINT after serving a client: its handler (which calls
#    pthread_self) runs and the server exits 0, as under NPTL (it used to
#    die of SIGSEGV).
# Usage: real_programs_signals.sh SWARMRUN [WORKERS]
set -u
swarmrun=$1
workers=${2:-2}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
for p in pbzip2 iperf bzip2; do
  command -v $p >/dev/null 2>&1 || { echo "FAIL: $p not installed (make deps installs it)"; exit 1; }
done

# Waits up to $2 tenths of a second for pid $1 to end; 1 if it did not.
wait_gone() {
  n=0
  while kill -0 "$1" 2>/dev/null; do
    n=$((n + 1))
    [ $n -gt "$2" ] && return 1
    sleep 0.1
  done
  return 0
}

# 1. a normal run: the signal thread is ended with pthread_kill
awk 'BEGIN { srand(7); for (i = 0; i < 120000; i++) { s = ""; for (j = 0; j < 8; j++) s = s sprintf("%08x", int(rand() * 4294967296)); print s } }' >"$work/in"
if ! "$swarmrun" -w "$workers" --stats pbzip2 -p4 -c <"$work/in" >"$work/in.bz2" 2>"$work/pb.err"; then
  echo "FAIL: pbzip2 exited non-zero under swarmrun"; cat "$work/pb.err"; fail=1
elif grep -q "Couldn't signal" "$work/pb.err"; then
  echo "FAIL: pbzip2 could not signal its signal thread"; cat "$work/pb.err"; fail=1
elif ! bzip2 -dc "$work/in.bz2" | cmp -s - "$work/in"; then
  echo "FAIL: pbzip2 output does not round-trip"; fail=1
else
  spawned=$(awk '/^swarm stats: [0-9]/ { s += $4 } END { print s + 0 }' "$work/pb.err")
  if [ "$spawned" -lt 4 ]; then
    echo "FAIL: pbzip2: only $spawned threads on swarm"; cat "$work/pb.err"; fail=1
  else
    echo "ok  pbzip2: signal thread ended by pthread_kill, round-trips, $spawned threads on swarm"
  fi
fi

# 2. SIGINT while it compresses (80 MB of random data: seconds of work)
head -c 80000000 /dev/urandom >"$work/big"
"$swarmrun" -w "$workers" pbzip2 -p4 -k -f "$work/big" 2>"$work/pbi.err" &
pid=$!
sleep 0.5
kill -INT $pid
if ! wait_gone $pid 300; then
  echo "FAIL: pbzip2 still running 30 s after SIGINT"; kill -9 $pid; fail=1
else
  wait $pid; st=$?
  if [ $st -ne 1 ] || [ -e "$work/big.bz2" ] || ! grep -q "caught \[sig=2\]" "$work/pbi.err"; then
    echo "FAIL: pbzip2 after SIGINT: status $st (NPTL: 1), partial output kept or message missing"
    cat "$work/pbi.err"; fail=1
  else
    echo "ok  pbzip2: SIGINT taken by its signal thread, partial output deleted, status 1"
  fi
fi

# 3. iperf -s: SIGINT after a client
port=$((20000 + $$ % 20000))
"$swarmrun" -w "$workers" iperf -s -p $port >"$work/ip.out" 2>&1 &
pid=$!
sleep 0.5
iperf -c 127.0.0.1 -p $port -t 1 >"$work/ipc.out" 2>&1 || { echo "FAIL: iperf client"; cat "$work/ipc.out"; fail=1; }
kill -INT $pid
if ! wait_gone $pid 100; then
  echo "FAIL: iperf -s still running 10 s after SIGINT"; kill -9 $pid; fail=1
else
  wait $pid; st=$?
  if [ $st -ne 0 ]; then
    echo "FAIL: iperf -s after SIGINT: status $st (NPTL: 0)"; cat "$work/ip.out"; fail=1
  else
    echo "ok  iperf -s: SIGINT handled (pthread_self in the handler), exit 0"
  fi
fi
exit $fail
