#!/bin/sh
# dropin_iperf.sh SWARMRUN — an unmodified threaded network program from
# Debian (iperf 2: a thread per connection on both ends) on swarm threads:
# server and client both under swarmrun, four parallel TCP streams over
# loopback for a second. Passes when both exit 0, each reports the four
# streams, every stream's byte count is the same at both ends and not
# zero, and swarm's stats show the threads ran on swarm in both processes.
set -u
swarmrun=$1
command -v iperf >/dev/null 2>&1 || { echo "FAIL: iperf not installed (make deps installs it)"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# A busy port ends the server, sometimes only after the 0.5 s look (a
# loaded machine): then the client finds nobody listening. Try another
# port in either case.
crc=1 src=1
: >"$work/cli.out"
: >"$work/srv.out"
for try in 1 2 3 4 5; do
  port=$((20000 + ($$ * 7 + try * 131) % 30000))
  timeout 60 "$swarmrun" -w 2 --stats -- iperf -s -p $port -P 4 -y C \
    >"$work/srv.out" 2>"$work/srv.err" &
  spid=$!
  sleep 0.5
  kill -0 $spid 2>/dev/null || continue
  timeout 60 "$swarmrun" -w 2 --stats -- iperf -c 127.0.0.1 -p $port -t 1 -P 4 -y C \
    >"$work/cli.out" 2>"$work/cli.err"
  crc=$?
  wait $spid
  src=$?
  grep -q "bind failed" "$work/srv.err" || break
done
fail=0
[ $crc -eq 0 ] || { echo "FAIL: iperf client exit status $crc"; cat "$work/cli.err"; fail=1; }
[ $src -eq 0 ] || { echo "FAIL: iperf server exit status $src"; cat "$work/srv.err"; fail=1; }
# CSV: time,local,lport,remote,rport,id,interval,bytes,bits/s; key a stream
# by the client's port (both ends print it third), keep its byte count.
awk -F, 'NF >= 9 {print $3, $8}' "$work/cli.out" | sort >"$work/cli.bytes"
awk -F, 'NF >= 9 {print $3, $8}' "$work/srv.out" | sort >"$work/srv.bytes"
n=$(wc -l <"$work/cli.bytes")
[ "$n" -eq 4 ] || { echo "FAIL: client reported $n streams, expected 4"; cat "$work/cli.out"; fail=1; }
if ! cmp -s "$work/cli.bytes" "$work/srv.bytes"; then
  echo "FAIL: byte counts differ between client and server"; cat "$work/cli.out" "$work/srv.out"; fail=1
fi
if awk '$2 <= 0 {bad = 1} END {exit !bad}' "$work/cli.bytes"; then
  echo "FAIL: a stream carried no data"; fail=1
fi
for side in cli srv; do
  spawned=$(awk '/^swarm stats: worker/ {n++} n==1 && /^swarm stats: [0-9]/ {s += $4} END {print s+0}' "$work/$side.err")
  [ "$spawned" -ge 4 ] || { echo "FAIL: $side: only $spawned threads on swarm"; fail=1; }
done
[ $fail = 0 ] && echo "PASS dropin_iperf: 4 streams, $(awk '{s += $2} END {print s}' "$work/cli.bytes") bytes, same at both ends"
exit $fail
