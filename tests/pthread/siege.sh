#!/bin/sh
# siege on swarm threads (issue 16): Debian's siege, one pthread per
# simulated user, runs under swarmrun -w ${SG_WORKERS:-2} against a Python
# origin server (NPTL). It used to segfault in a memset some 390 KB into
# its thread's stack when the drop-in's stacks were 256 KiB; stacks now
# follow NPTL's rule (RLIMIT_STACK). Every transaction must succeed, the
# count must be users x repetitions, and swarm's stats must show siege's
# users ran as swarm threads.
# Usage: siege.sh SWARMRUN
set -u
swarmrun=$1
py=/usr/bin/python3
sg=/usr/bin/siege
dir=$(dirname "$0")
for f in $py $sg; do
  [ -x "$f" ] || { echo "FAIL: $f not installed (make deps installs it)"; exit 1; }
done
work=$(mktemp -d)
"$py" "$dir/python_http_server.py" >"$work/port" 2>/dev/null &
origin=$!
trap 'kill $origin 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
i=0
while [ ! -s "$work/port" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
port=$(head -n 1 "$work/port")
[ -n "$port" ] || { echo "FAIL: the origin server did not start"; exit 1; }
users=${SG_USERS:-32}
reps=${SG_REPS:-20}
# siege keeps its settings in $HOME/.siege: a private HOME leaves the
# user's alone; its log goes to the work directory.
HOME=$work "$swarmrun" -w "${SG_WORKERS:-2}" --stats -- "$sg" -b -q \
  -c "$users" -r "$reps" --log="$work/siege.log" -j \
  "http://127.0.0.1:$port/5" >"$work/out" 2>"$work/err"
rc=$?
fail=0
[ $rc -eq 0 ] || { echo "FAIL: siege exited with $rc"; cat "$work/err"; fail=1; }
# -j prints the summary as a JSON object, among siege's other lines.
hits=$("$py" -c 'import json,re,sys; t=open(sys.argv[1]).read(); d=json.loads(re.search(r"\{.*?\}", t, re.S).group(0)); print(d["transactions"], d["failed_transactions"])' "$work/out" 2>/dev/null)
echo "siege on swarm: transactions, failed: ${hits:-none}"
set -- $hits
[ "${1:-0}" -eq $((users * reps)) ] && [ "${2:-1}" -eq 0 ] ||
  { echo "FAIL: expected $((users * reps)) transactions and none failed"; cat "$work/out"; fail=1; }
# siege starts a helper process (its own stats block, printed first): the
# last block is siege's.
spawned=$(awk '/^swarm stats: worker/ {s = 0} /^swarm stats: [0-9]/ {s += $4} END {print s+0}' "$work/err")
echo "siege on swarm: $spawned threads spawned for $users users"
[ "$spawned" -ge "$users" ] || { echo "FAIL: siege's users did not run on swarm"; fail=1; }
[ $fail -eq 0 ] && echo OK
exit $fail
