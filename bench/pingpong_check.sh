#!/bin/sh
# bench/pingpong_check.sh — CTest's check of build/bench/pingpong's clients
# (issue 17): one short run must count round trips, see no errors, and run
# the client it was asked for; 77 (skipped) where io_uring is refused.
#   pingpong_check.sh PINGPONG CLIENT SERVER CONNS ACTIVE
pp=$1 client=$2 server=$3 conns=$4 active=$5
out=$("$pp" --server "$server" --conns "$conns" --active "$active" \
  --seconds 0.3 --warmup 0.1 --client "$client" 2>/tmp/pingpong_check.$$)
rc=$?
err=$(cat /tmp/pingpong_check.$$)
rm -f /tmp/pingpong_check.$$
echo "$out"
[ -n "$err" ] && echo "$err" >&2
if [ "$client" = uring ] && echo "$err" | grep -q "io_uring client cannot run"; then
  exit 77
fi
[ $rc -eq 0 ] || { echo "pingpong exited $rc"; exit 1; }
echo "$out" | grep -q "\"transactions\": [1-9][0-9]*," || { echo "no round trips counted"; exit 1; }
echo "$out" | grep -q "\"errors\": 0," || { echo "errors at the client"; exit 1; }
echo "$out" | grep -q "\"client\": \"$client\"" || { echo "not the $client client"; exit 1; }
