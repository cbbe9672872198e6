#!/bin/bash
# examples/httpd/syscalls.sh SERVER CONNS [SIZE] [BUILD] — system calls per
# request of one server under wrk, the accounting in docs/io.md.
#   SERVER: swarm (build/examples/httpd), nptl (httpd-nptl) or nginx
#   (Debian's, configured as bench_httpd.py does), 2 workers each
#   SIZE:   1k (default) or 1m
# Runs `strace -c -f -p` on every server process over `wrk -t1 -cCONNS
# -d3s` (after a 1 s warm-up) and prints each call's count divided by the
# requests wrk completed. strace slows the server: counts, not times.
set -eu
srv=$1 conns=$2 size=${3:-1k} build=${4:-build}
tmp=$(mktemp -d)
trap 'kill $pid 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$tmp"' EXIT
mkdir "$tmp/www"
head -c 1024 /dev/urandom >"$tmp/www/1k.bin"
head -c 1048576 /dev/urandom >"$tmp/www/1m.bin"
ulimit -n "$(ulimit -Hn)"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
case $srv in
swarm | nptl)
  exe=$build/examples/httpd
  [ "$srv" = nptl ] && exe=$build/examples/httpd-nptl
  SWARM_WORKERS=2 "$exe" --addr 127.0.0.1 --port "$port" --root "$tmp/www" >/dev/null &
  pid=$!
  sleep 0.5
  pids=$pid
  ;;
nginx)
  cat >"$tmp/nginx.conf" <<EOC
daemon off; master_process on; $([ "$(id -u)" = 0 ] && echo "user root;")
worker_processes 2; worker_rlimit_nofile 40000;
pid $tmp/nginx.pid; error_log $tmp/error.log;
events { worker_connections 20000; }
http { access_log off; sendfile on; tcp_nopush on; tcp_nodelay on;
  keepalive_timeout 65; keepalive_requests 100000000;
  default_type application/octet-stream;
  client_body_temp_path $tmp; proxy_temp_path $tmp; fastcgi_temp_path $tmp;
  uwsgi_temp_path $tmp; scgi_temp_path $tmp;
  server { listen 127.0.0.1:$port backlog=4096; root $tmp/www; } }
EOC
  nginx -c "$tmp/nginx.conf" -p "$tmp" &
  pid=$!
  sleep 0.5
  pids=$(pgrep -P $pid | tr '\n' ' ')
  ;;
*)
  echo "usage: $0 swarm|nptl|nginx CONNS [1k|1m] [BUILD]" >&2
  exit 2
  ;;
esac
url=http://127.0.0.1:$port/$size.bin
wrk -t1 -c"$conns" -d1s "$url" >/dev/null
args=()
for p in $pids; do args+=(-p "$p"); done
strace -qq -c -f "${args[@]}" -o "$tmp/strace" &
sp=$!
sleep 1
out=$(wrk -t1 -c"$conns" -d3s "$url")
kill -INT $sp
wait $sp || true
req=$(echo "$out" | awk '/requests in/ {print $1}')
echo "$srv c=$conns $size: $req requests; system calls per request:"
awk -v r="$req" 'NR > 2 && $NF == "total" {printf "  total %.2f\n", $4 / r}
  NR > 2 && $NF != "total" && $4 ~ /^[0-9]+$/ {printf "  %s %.2f\n", $NF, $4 / r}' \
  "$tmp/strace" | sort -k2 -nr
