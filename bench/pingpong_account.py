#!/usr/bin/env python3
"""bench/pingpong_account.py — where a ping-pong round trip's time goes.

Counts, per round trip, the server's system calls by name (the kernel's
syscall tracepoints, through `perf stat -p` on the server process while
build/bench/pingpong runs it), its context switches, and the readiness
batches (round trips per epoll_wait/epoll_pwait call). Counting, not
timing: the figures hold on a loaded machine, where throughput does not.

  bench/pingpong_account.py [--build build] [--servers swarm,epoll,go,nptl]
                            [--conns 1,128,1024] [--seconds 4]

For each point: pingpong --server S --conns C --active C --seconds T
--warmup 1 runs; perf counts the server for the middle T-1.5 s; the round
trips of that window are the server's successful writes (one per echo). Prints
a Markdown table (docs/io.md "Accounting per round trip").
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

CALLS = ["read", "write", "preadv2", "pwritev2", "recvfrom", "sendto",
         "epoll_wait", "epoll_pwait", "futex", "sched_yield", "ppoll",
         "fcntl", "getsockopt", "nanosleep", "tgkill", "io_uring_enter"]


def children(pid):
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True,
                         text=True).stdout.split()
    return [int(p) for p in out]


def server_pid(pingpong_pid, kind):
    """The server process under pingpong (swarmrun's exec keeps the pid)."""
    for _ in range(100):
        kids = children(pingpong_pid)
        if kids:
            return kids[0]
        time.sleep(0.02)
    sys.exit("pingpong_account: no server process for %s" % kind)


def point(args, server, conns):
    exe = os.path.join(args.build, "bench", "pingpong")
    p = subprocess.Popen([exe, "--server", server, "--conns", str(conns),
                          "--active", str(conns), "--seconds",
                          str(args.seconds), "--warmup", "1"],
                         stdout=subprocess.PIPE, text=True)
    pid = server_pid(p.pid, server)
    time.sleep(1.5)  # connections up, warm-up done
    window = args.seconds - 1.5
    cmd = ["perf", "stat", "-x,", "-p", str(pid)]
    for e in ["raw_syscalls:sys_enter", "context-switches"] + \
            ["syscalls:sys_enter_" + c for c in CALLS]:
        cmd += ["-e", e]
    # round trips = the server's successful writes (each echo is one);
    # failed reads = attempts that said EAGAIN (or another error)
    for c in ("write", "pwritev2", "sendto"):
        cmd += ["-e", "syscalls:sys_exit_" + c, "--filter", "ret > 0"]
    for c in ("read", "preadv2", "recvfrom"):
        cmd += ["-e", "syscalls:sys_exit_" + c, "--filter", "ret < 0"]
    for c in ("epoll_wait", "epoll_pwait"):
        cmd += ["-e", "syscalls:sys_exit_" + c, "--filter", "ret > 0"]
    perf = subprocess.run(cmd + ["--", "sleep", str(window)],
                          capture_output=True, text=True)
    out, _ = p.communicate()
    line = [l for l in out.splitlines() if l.startswith("{")]
    if not line:
        sys.exit("pingpong_account: pingpong said nothing for %s" % server)
    tps = json.loads(line[-1])["tps"]
    counts = {}
    for l in perf.stderr.splitlines():
        f = l.split(",")
        if len(f) > 2 and f[0].strip().isdigit():
            name = f[2].replace("syscalls:sys_enter_", "")
            counts[name] = counts.get(name, 0) + int(f[0])
    trips = sum(counts.get("syscalls:sys_exit_" + c, 0)
                for c in ("write", "pwritev2", "sendto"))
    if not trips:
        sys.exit("pingpong_account: no writes counted for %s: %s"
                 % (server, perf.stderr[-500:]))
    counts["failed_reads"] = sum(counts.get("syscalls:sys_exit_" + c, 0)
                                 for c in ("read", "preadv2", "recvfrom"))
    counts["busy_waits"] = sum(counts.get("syscalls:sys_exit_" + c, 0)
                               for c in ("epoll_wait", "epoll_pwait"))
    per = {k: v / trips for k, v in counts.items()}
    return tps, per


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--servers", default="swarm,epoll,go,nptl")
    ap.add_argument("--conns", default="1,128,1024")
    ap.add_argument("--seconds", type=float, default=4)
    args = ap.parse_args()
    print("load average %.2f" % os.getloadavg()[0])
    print("| server | C | round trips/s | syscalls | reads | writes | "
          "failed reads | epoll waits | round trips per non-empty wait | futex | "
          "context switches | other calls |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | "
          "---: | --- |")
    for conns in map(int, args.conns.split(",")):
        for server in args.servers.split(","):
            tps, per = point(args, server, conns)
            reads = sum(per.get(c, 0) for c in ("read", "preadv2", "recvfrom"))
            writes = sum(per.get(c, 0) for c in ("write", "pwritev2",
                                                  "sendto"))
            waits = per.get("epoll_wait", 0) + per.get("epoll_pwait", 0)
            other = ", ".join("%s %.2f" % (c, per[c]) for c in
                              ("ppoll", "fcntl", "getsockopt", "sched_yield",
                               "nanosleep", "tgkill", "io_uring_enter")
                              if per.get(c, 0) >= 0.005)
            busy = per.get("busy_waits", 0)
            print("| %s | %d | %.0f | %.2f | %.2f | %.2f | %.2f | %.2f | %s | "
                  "%.2f | %.2f | %s |" % (
                      server, conns, tps, per.get("raw_syscalls:sys_enter", 0),
                      reads, writes, per.get("failed_reads", 0), waits,
                      "%.1f" % (1 / busy) if busy else "-",
                      per.get("futex", 0),
                      per.get("context-switches", 0), other or "-"),
                  flush=True)


if __name__ == "__main__":
    main()
