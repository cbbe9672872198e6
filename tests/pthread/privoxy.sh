#!/bin/sh
# A thread-per-connection proxy on swarm threads (issue 16 item 8): Debian's
# privoxy under swarmrun -w ${PX_WORKERS:-2} forwards ${PX_REQUESTS:-3000}
# requests from an 8-thread client (NPTL) to a Python origin server (NPTL),
# each on its own connection; every status and body is checked, and
# swarm's stats must show privoxy's threads ran on swarm (one per request).
# Usage: privoxy.sh SWARMRUN
set -u
swarmrun=$1
py=/usr/bin/python3
px=/usr/sbin/privoxy
dir=$(dirname "$0")
for f in $py $px; do
  [ -x "$f" ] || { echo "FAIL: $f not installed (make deps installs it)"; exit 1; }
done
work=$(mktemp -d)
"$py" "$dir/python_http_server.py" >"$work/port" 2>/dev/null &
origin=$!
pxpid=
trap 'kill $origin $pxpid 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
# A free port for privoxy, which cannot be given port 0.
pxport=$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$work/config" <<CONF
confdir /etc/privoxy
templdir /etc/privoxy/templates
listen-address 127.0.0.1:$pxport
max-client-connections 512
toggle 0
enable-remote-toggle 0
enable-edit-actions 0
keep-alive-timeout 0
CONF
"$swarmrun" -w "${PX_WORKERS:-2}" --stats -- "$px" --no-daemon "$work/config" \
  >"$work/pxlog" 2>&1 &
pxpid=$!
listening() {
  "$py" -c "import socket; socket.create_connection(('127.0.0.1', $pxport), 1)" 2>/dev/null
}
i=0
while { [ ! -s "$work/port" ] || ! listening; } && [ $i -lt 100 ]; do
  sleep 0.1; i=$((i + 1))
done
port=$(head -n 1 "$work/port")
[ -n "$port" ] || { echo "FAIL: the origin server did not start"; exit 1; }
listening || { echo "FAIL: privoxy did not start"; cat "$work/pxlog"; exit 1; }
requests=${PX_REQUESTS:-3000}
"$py" "$dir/python_http_client.py" "$port" "$requests" 8 "$pxport"
rc=$?
kill $pxpid # privoxy exits on SIGTERM; swarm prints its stats
i=0
while kill -0 $pxpid 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
fail=0
[ $rc -eq 0 ] || { echo "FAIL: the client saw failures"; fail=1; }
spawned=$(awk '/^swarm stats: worker/ {n++} n==1 && /^swarm stats: [0-9]/ {s += $4} END {print s+0}' "$work/pxlog")
echo "privoxy on swarm: $spawned threads spawned for $requests requests"
[ "$spawned" -ge "$requests" ] || { echo "FAIL: privoxy's threads did not run on swarm"; fail=1; }
[ $fail -eq 0 ] && echo OK
exit $fail
