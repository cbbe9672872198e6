#!/bin/sh
# Python's ThreadingHTTPServer (Debian's python3) under swarmrun under load
# (issue 16 item 8): a server on swarm threads (-w ${PY_WORKERS:-2}), a
# client under NPTL with 8 threads making ${PY_REQUESTS:-4000} requests,
# each on its own connection; every status and body is checked, and the
# server's log must have one line per request and no traceback (the stale
# errno of issue 16 surfaced as an OSError from sys.stderr.write there).
# Usage: python_http.sh SWARMRUN
set -u
swarmrun=$1
py=/usr/bin/python3
dir=$(dirname "$0")
[ -x "$py" ] || { echo "FAIL: $py not installed (make deps installs python3)"; exit 1; }
work=$(mktemp -d)
"$swarmrun" -w "${PY_WORKERS:-2}" --stats -- "$py" "$dir/python_http_server.py" \
  >"$work/port" 2>"$work/log" &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$work"' EXIT
i=0
while [ ! -s "$work/port" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
port=$(head -n 1 "$work/port")
[ -n "$port" ] || { echo "FAIL: the server did not start"; cat "$work/log"; exit 1; }
requests=${PY_REQUESTS:-4000}
"$py" "$dir/python_http_client.py" "$port" "$requests" 8
rc=$?
"$py" -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/quit', timeout=30).read()"
i=0
while kill -0 $server 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
kill $server 2>/dev/null
wait $server 2>/dev/null
fail=0
[ $rc -eq 0 ] || { echo "FAIL: the client saw failures"; fail=1; }
if grep -q -e Traceback -e Error "$work/log"; then
  echo "FAIL: the server's log shows errors:"; grep -B2 -A8 -m3 Traceback "$work/log"; fail=1
fi
logged=$(grep -c '"GET /[0-9]' "$work/log")
[ "$logged" -eq "$requests" ] || { echo "FAIL: $logged requests logged, $requests made"; fail=1; }
spawned=$(awk '/^swarm stats: worker/ {n++} n==1 && /^swarm stats: [0-9]/ {s += $4} END {print s+0}' "$work/log")
echo "server on swarm: $spawned threads spawned, $logged requests logged"
[ "$spawned" -ge 100 ] || { echo "FAIL: the server did not run its threads on swarm"; fail=1; }
[ $fail -eq 0 ] && echo OK
exit $fail
