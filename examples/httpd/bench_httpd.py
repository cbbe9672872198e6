#!/usr/bin/env python3
"""examples/httpd/bench_httpd.py — examples/httpd against nginx and NPTL.

For every file size and keep-alive connection count, runs wrk against
  swarm  build/examples/httpd       (SWARM_WORKERS = --workers)
  nptl   build/examples/httpd-nptl  (the same source, a kernel thread per
                                     connection)
  nginx  Debian's nginx             (worker_processes = --workers,
                                     access_log off, sendfile on)
and reports requests/s, latency p50/p99 (wrk --latency) and the server's
CPU time per request (utime + stime of the server's processes from /proc,
before and after the run, divided by the requests wrk completed). The
servers alternate within each point (their order rotates per repetition),
so load from elsewhere on the machine falls on all of them alike; the load
average is printed with every point. Results: JSON lines to --json, and a
Markdown table on stdout.

  bench_httpd.py --build build [--workers 2] [--conns 100,1000,10000]
                 [--sizes 1k,1m] [--seconds 3] [--reps 3] [--threads 2]
                 [--servers swarm,nptl,nginx] [--json results/httpd.jsonl]
"""
import argparse
import json
import os
import re
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time

SIZES = {"1k": 1024, "1m": 1 << 20}


def raise_nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_listening(port, proc):
    for _ in range(200):
        if proc.poll() is not None:
            sys.exit("bench_httpd: server exited with %s" % proc.returncode)
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    sys.exit("bench_httpd: server did not listen on %d" % port)


def nginx_conf(tmp, root, port, workers):
    conf = os.path.join(tmp, "nginx.conf")
    with open(conf, "w") as f:
        f.write("""daemon off;
master_process on;
%s
worker_processes %d;
worker_rlimit_nofile 40000;
pid %s/nginx.pid;
error_log %s/error.log;
events { worker_connections 20000; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  tcp_nodelay on;
  keepalive_timeout 65;
  keepalive_requests 100000000;
  default_type application/octet-stream;
  client_body_temp_path %s;
  proxy_temp_path %s;
  fastcgi_temp_path %s;
  uwsgi_temp_path %s;
  scgi_temp_path %s;
  server {
    listen 127.0.0.1:%d backlog=4096;
    root %s;
  }
}
""" % ("user root;" if os.geteuid() == 0 else "", workers, tmp, tmp, tmp, tmp,
       tmp, tmp, tmp, port, root))
    return conf


def start(server, args, root, tmp):
    port = free_port()
    env = dict(os.environ, SWARM_WORKERS=str(args.workers))
    if server == "nginx":
        cmd = [args.nginx, "-c", nginx_conf(tmp, root, port, args.workers),
               "-p", tmp]
    else:
        exe = "httpd" if server == "swarm" else "httpd-nptl"
        cmd = [os.path.join(args.build, "examples", exe), "--addr",
               "127.0.0.1", "--port", str(port), "--root", root]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL,
                            preexec_fn=raise_nofile)
    wait_listening(port, proc)
    return proc, port


def cpu_seconds(pid):
    """utime + stime of pid and its children processes (nginx workers)."""
    pids = [pid]
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open("/proc/%s/stat" % p) as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                if int(fields[1]) == pid:
                    pids.append(int(p))
            except OSError:
                pass
    ticks = 0
    for p in pids:
        try:
            with open("/proc/%d/stat" % p) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])
        except OSError:
            pass
    return ticks / os.sysconf("SC_CLK_TCK")


def to_ms(value, unit):
    return float(value) * {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 6e4}[unit]


def parse_wrk(out):
    r = {}
    m = re.search(r"Requests/sec:\s+([\d.]+)", out)
    r["rps"] = float(m.group(1)) if m else 0.0
    m = re.search(r"(\d+) requests in", out)
    r["requests"] = int(m.group(1)) if m else 0
    for pct in ("50", "99"):
        m = re.search(r"^\s+%s%%\s+([\d.]+)(us|ms|s|m)\s*$" % pct, out, re.M)
        r["p%s_ms" % pct] = to_ms(*m.groups()) if m else None
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    r["non2xx"] = int(m.group(1)) if m else 0
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), "
                  r"timeout (\d+)", out)
    r["socket_errors"] = sum(map(int, m.groups())) if m else 0
    return r


def run_point(server, args, root, tmp, size, conns):
    proc, port = start(server, args, root, tmp)
    try:
        url = "http://127.0.0.1:%d/%s.bin" % (port, size)
        # warm up: open the connections, fill the page cache
        subprocess.run([args.wrk, "-t%d" % args.threads, "-c%d" % conns,
                        "-d1s", url], stdout=subprocess.DEVNULL,
                       preexec_fn=raise_nofile, check=False)
        cpu0 = cpu_seconds(proc.pid)
        out = subprocess.run(
            [args.wrk, "-t%d" % args.threads, "-c%d" % conns,
             "-d%ds" % args.seconds, "--latency", "--timeout", "10s", url],
            stdout=subprocess.PIPE, preexec_fn=raise_nofile, text=True,
            check=False).stdout
        cpu = cpu_seconds(proc.pid) - cpu0
        if proc.poll() is not None:
            sys.exit("bench_httpd: %s died during the run" % server)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    r = parse_wrk(out)
    r.update(server=server, size=size, conns=conns, workers=args.workers,
             seconds=args.seconds, server_cpu_s=round(cpu, 3),
             load=os.getloadavg()[0])
    r["cpu_us_per_req"] = (round(cpu / r["requests"] * 1e6, 2)
                           if r["requests"] else None)
    return r


def table(results, servers):
    print("\n| size | conns | " + " | ".join(
        "%s req/s | p50 / p99 ms | CPU µs/req" % s for s in servers) +
        " | swarm/nginx | swarm/nptl |")
    print("| --- | ---: |" + " ---: | ---: | ---: |" * len(servers) +
          " ---: | ---: |")
    points = sorted({(r["size"], r["conns"]) for r in results},
                    key=lambda p: (SIZES[p[0]], p[1]))
    for size, conns in points:
        med = {}
        cells = []
        for s in servers:
            rs = sorted((r for r in results if r["server"] == s and
                         r["size"] == size and r["conns"] == conns),
                        key=lambda r: r["rps"])
            if not rs:
                cells.append("- | - | -")
                continue
            r = rs[len(rs) // 2]  # the median by requests/s
            med[s] = r["rps"]
            cells.append("%.0f | %s / %s | %s" % (
                r["rps"], fmt(r["p50_ms"]), fmt(r["p99_ms"]),
                r["cpu_us_per_req"]))
        ratio = [("%.2f" % (med["swarm"] / med[o])
                  if med.get("swarm") and med.get(o) else "-")
                 for o in ("nginx", "nptl")]
        print("| %s | %d | %s | %s |" % (size, conns, " | ".join(cells),
                                         " | ".join(ratio)))
    loads = [r["load"] for r in results]
    reps = max(sum(1 for r in results if r["server"] == servers[0] and
                   (r["size"], r["conns"]) == p) for p in points)
    print("\nmedian of %d interleaved repetitions of %d s; load average %.1f "
          "to %.1f during the run" % (reps, results[0]["seconds"],
                                       min(loads), max(loads)))


def fmt(ms):
    return "-" if ms is None else "%.2f" % ms


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--workers", type=int, default=os.cpu_count())
    ap.add_argument("--conns", default="100,1000,10000")
    ap.add_argument("--sizes", default="1k,1m")
    ap.add_argument("--seconds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2, help="wrk threads")
    ap.add_argument("--servers", default="swarm,nptl,nginx")
    ap.add_argument("--json", default="results/httpd.jsonl")
    ap.add_argument("--wrk", default=shutil.which("wrk") or "wrk")
    ap.add_argument("--nginx", default=shutil.which("nginx") or
                    "/usr/sbin/nginx")
    args = ap.parse_args()
    servers = args.servers.split(",")
    for tool in ([args.wrk] + ([args.nginx] if "nginx" in servers else [])):
        if not (shutil.which(tool) or os.access(tool, os.X_OK)):
            sys.exit("bench_httpd: %s not found; make deps DEPS_GROUPS=web "
                     "(tools/deps/web.txt)" % tool)
    raise_nofile()
    tmp = tempfile.mkdtemp(prefix="httpd-bench-")
    os.chmod(tmp, 0o755)
    root = os.path.join(tmp, "www")
    os.mkdir(root)
    for name, n in SIZES.items():
        with open(os.path.join(root, name + ".bin"), "wb") as f:
            f.write(os.urandom(n))
    if os.path.dirname(args.json):
        os.makedirs(os.path.dirname(args.json), exist_ok=True)
    results = []
    try:
        with open(args.json, "w") as out:
            for size in args.sizes.split(","):
                for conns in map(int, args.conns.split(",")):
                    for rep in range(args.reps):
                        k = rep % len(servers)
                        for s in servers[k:] + servers[:k]:
                            r = run_point(s, args, root, tmp, size, conns)
                            results.append(r)
                            out.write(json.dumps(r) + "\n")
                            out.flush()
                            print("%-5s %s c=%-5d %9.0f req/s p50 %s p99 %s "
                                  "ms  %s µs CPU/req  load %.2f" % (
                                      s, size, conns, r["rps"],
                                      fmt(r["p50_ms"]), fmt(r["p99_ms"]),
                                      r["cpu_us_per_req"], r["load"]),
                                  flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    table(results, servers)


if __name__ == "__main__":
    main()
