#!/usr/bin/env python3
"""bench/pingpong_callgrind.py — user-space instructions per ping-pong round
trip, per function, counted by callgrind (docs/io.md, "Accounting per round
trip"). Counting, not timing: the figures hold on a loaded machine.

  bench/pingpong_callgrind.py [--build build] [--servers swarm,epoll]
                              [--conns 128] [--trips 20000,60000] [--top 25]

For each server: runs it under `valgrind --tool=callgrind` on one CPU
(SWARM_WORKERS=1; the epoll loop sizes itself by its affinity: one loop),
drives it with a small client of our own (C connections, each sending one
byte and waiting for its echo, until the total is reached), once for each
of the two trip counts; the difference of the two runs, divided by the
difference of the counts, is the cost of one round trip (start-up and
shutdown cancel out). Prints the total per round trip, less what the
idle loop spun (--idle: sched_loop and hook_poll's skipped polls, whose
amount depends on how long the worker waited for the client, here a
Python one), and a Markdown table of instructions per round trip per
function (exclusive), the top ones.
"""
import argparse
import os
import re
import selectors
import socket
import subprocess
import sys
import tempfile


def drive(port, conns, trips):
    sel = selectors.DefaultSelector()
    socks = []
    for _ in range(conns):
        s = socket.create_connection(("127.0.0.1", port))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.setblocking(False)
        socks.append(s)
        sel.register(s, selectors.EVENT_READ)
    sent = 0
    done = 0
    for s in socks:
        if sent < trips:
            s.send(b"x")
            sent += 1
    while done < trips:
        for key, _ in sel.select():
            s = key.fileobj
            got = s.recv(64)
            if not got:
                sys.exit("server closed a connection")
            done += len(got)
            for _ in range(len(got)):
                if sent < trips:
                    s.send(b"x")
                    sent += 1
    for s in socks:
        s.close()


def run(exe, conns, trips, out):
    env = dict(os.environ, SWARM_WORKERS="1")
    p = subprocess.Popen(["taskset", "-c", "0", "valgrind", "--tool=callgrind",
                          "--callgrind-out-file=" + out, exe],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         env=env, text=True)
    line = p.stdout.readline()
    m = re.match(r"port (\d+)", line)
    if not m:
        p.kill()
        sys.exit(f"{exe}: no port line ({line!r})")
    drive(int(m.group(1)), conns, trips)
    p.terminate()
    p.wait()


def per_function(out):
    text = subprocess.run(["callgrind_annotate", "--inclusive=no", "--auto=no",
                           "--threshold=100", out],
                          capture_output=True, text=True).stdout
    fns = {}
    total = 0
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*)$", line)
        if not m:
            continue
        count = int(m.group(1).replace(",", ""))
        rest = m.group(2)
        if rest.startswith("PROGRAM TOTALS"):
            total = count
            continue
        name = re.sub(r"\s*\[.*", "", rest).rsplit(":", 1)[-1]
        name = re.sub(r"'\d+$", "", name)  # recursion levels: one function
        fns[name] = fns.get(name, 0) + count
    return total, fns


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--servers", default="swarm,epoll")
    ap.add_argument("--conns", type=int, default=128)
    ap.add_argument("--trips", default="20000,60000")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--idle", default="sched_loop,hook_poll",
                    help="functions that only spin while the worker waits "
                         "(counted apart: how much depends on timing)")
    a = ap.parse_args()
    lo, hi = (int(x) for x in a.trips.split(","))
    exes = {"swarm": f"{a.build}/bench/pingpong-server-swarm",
            "epoll": f"{a.build}/bench/peers/pingpong-server-epoll"}
    tmp = tempfile.mkdtemp(prefix="pp-callgrind-")
    for server in a.servers.split(","):
        res = []
        for trips in (lo, hi):
            out = os.path.join(tmp, f"{server}.{trips}.out")
            run(exes[server], a.conns, trips, out)
            res.append(per_function(out))
        (t0, f0), (t1, f1) = res
        n = hi - lo
        diff = {k: (f1.get(k, 0) - f0.get(k, 0)) / n for k in set(f0) | set(f1)}
        idle = sum(diff.get(k, 0) for k in a.idle.split(","))
        total = (t1 - t0) / n
        print(f"\n{server}, C = {a.conns}: {total - idle:.0f} instructions "
              f"per round trip, and {idle:.0f} in the idle loop "
              f"({a.idle}) ({lo} and {hi} round trips)\n")
        print("| function | instructions per round trip |")
        print("| --- | ---: |")
        for k, v in sorted(diff.items(), key=lambda kv: -kv[1])[:a.top]:
            print(f"| `{k}` | {v:.1f} |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
