#!/usr/bin/env python3
"""bench/pingpong_cpu.py — who is the bottleneck of a ping-pong run: the
CPU time of the server and of the client per round trip, and each CPU's
idle share, from `perf record -a -e cpu-clock` samples over the counted
window (issue 17): perf records the whole run on CLOCK_MONOTONIC and only
the samples between the window's ends that `pingpong --cpu-stat` reports
count; the round trips are the window's.

Samples are split by process: the client (build/bench/pingpong), the
server (its child and that child's threads), idle (pid 0), and other
(anything else, ksoftirqd included: other users of a shared machine). Softirq work runs
in the context of whichever task raised it; on loopback that is the sender,
so a side's figure includes the receive processing of what it sends.
Counting samples per process keeps the figures meaningful on a loaded
machine, where /proc/stat's per-CPU busy time is not.

  bench/pingpong_cpu.py [--build build] [--servers epoll,swarm,go,nptl,swarmrun]
                        [--conns 1,128,1024,8192] [--clients epoll,uring,uring:0]
                        [--seconds 3] [--freq 4000]

A client is epoll, uring (with its default idle-priority helpers) or
uring:N (N helpers; 0: the client's own CPU only). Prints a Markdown
table: round trips/s, then per round trip the server's and the client's
CPU microseconds (all CPUs; x 4 = samples per thousand round trips at
4,000 Hz), and for each CPU its shares by side and its idle share.
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import signal
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def children(pid):
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    return {int(p) for p in out}


def one(build, server, conns, client, seconds, freq):
    exe = os.path.join(build, "bench", "pingpong")
    warm = 0.5
    cmd = [exe, "--server", server, "--conns", str(conns), "--active", str(conns),
           "--seconds", str(seconds), "--warmup", str(warm), "--client", client.split(":")[0]]
    if ":" in client:  # uring:N: N idle-priority helpers (0: the client's own CPU only)
        cmd += ["--idle-helpers", client.split(":")[1]]
    cmd += ["--cpu-stat"]  # the JSON then has the counted window's ends on CLOCK_MONOTONIC
    with tempfile.TemporaryDirectory() as d:
        data = os.path.join(d, "perf.data")
        # the whole run, time-stamped on CLOCK_MONOTONIC; started first, since
        # perf's start-up reads every thread of the machine (an NPTL server's too)
        perf = subprocess.Popen(["perf", "record", "-q", "-a", "-k", "CLOCK_MONOTONIC", "-e", "cpu-clock",
                                 "-F", str(freq), "-o", data], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        time.sleep(1.0)
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        srv = set()
        while p.poll() is None:  # the server: pingpong's child (swarmrun execs in place)
            srv |= children(p.pid)
            time.sleep(0.2)
        out, err = p.communicate()
        perf.send_signal(signal.SIGINT)
        perf.wait()
        script = subprocess.run(["perf", "script", "-i", data, "-F", "time,pid,tid,cpu"],
                                capture_output=True, text=True).stdout
    rec = next((json.loads(l) for l in out.splitlines() if l.startswith("{")), None)
    if rec is None:
        return None, f"pingpong failed: {err.strip()[-200:]}"
    by = collections.Counter()  # (cpu, side) -> samples
    t0, t1 = rec["cpu"]["t0"], rec["cpu"]["t1"]
    window = t1 - t0
    for line in script.splitlines():
        f = line.replace(":", " ").split()
        if len(f) < 3:
            continue
        try:
            pid = int(f[0].split("/")[0])
            cpu = int(f[1].strip("[]"))
            t = float(f[2])
        except ValueError:
            continue
        if not t0 <= t <= t1:
            continue
        side = ("client" if pid == p.pid else "server" if pid in srv else "idle" if pid == 0
                else "other")
        by[(cpu, side)] += 1
    rts = rec["transactions"]
    cpus = sorted({c for c, _ in by})
    name = rec.get("client", "epoll")
    if name == "uring":
        name += f" +{rec.get('client_idle_helpers', 0)} idle"
    res = {"server": server, "client": name, "conns": conns, "tps": rec["tps"],
           "errors": rec["errors"], "window_s": window, "freq": freq, "samples": {f"{c}:{s}": n for (c, s), n in by.items()}}
    for side in ("server", "client", "other"):
        n = sum(v for (c, s), v in by.items() if s == side)
        res[f"{side}_us_per_rt"] = n / freq * 1e6 / rts if rts else None
    for c in cpus:
        tot = sum(v for (cc, s), v in by.items() if cc == c) or 1
        res[f"cpu{c}"] = {s: 100.0 * by[(c, s)] / tot for s in ("server", "client", "other", "idle")}
    return res, None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--servers", default="epoll,swarm,go,nptl,swarmrun")
    ap.add_argument("--conns", default="1,128,1024,8192")
    ap.add_argument("--clients", default="epoll,uring")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--freq", type=int, default=4000)
    ap.add_argument("--json", help="also write the records here")
    a = ap.parse_args()
    rows = []
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}", file=sys.stderr)
    print("| C | client | server | round trips/s | server us/rt | client us/rt | CPU0 server/client/other/idle % "
          "| CPU1 server/client/other/idle % |")
    print("| ---: | --- | --- | ---: | ---: | ---: | --- | --- |")
    for c in [int(x) for x in a.conns.split(",")]:
        for cl in a.clients.split(","):
            for s in a.servers.split(","):
                r, why = one(a.build, s, c, cl, a.seconds, a.freq)
                if r is None:
                    print(f"| {c} | {cl} | {s} | {why} | | | | |")
                    continue
                rows.append(r)
                def cpu(k):
                    v = r.get(k)
                    return "/".join(f"{v[x]:.0f}" for x in ("server", "client", "other", "idle")) if v else "-"
                print(f"| {c:,} | {r['client']} | {s} | {r['tps']:,.0f} | {r['server_us_per_rt']:.2f} | "
                      f"{r['client_us_per_rt']:.2f} | {cpu('cpu0')} | {cpu('cpu1')} |", flush=True)
    print(f"load after: {os.getloadavg()[0]:.2f}", file=sys.stderr)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
