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

--cache-sim adds callgrind's cache simulation (--cache-sim=yes) and, per
round trip, first-level data misses (D1mr reads, D1mw writes: about the
lines a round trip touches once C connections no longer fit in 32 KiB)
and last-level ones (DLmr, DLmw) of a 2 MiB, 16-way last level (--LL, an
L2-sized cache: misses there once C connections' lines outgrow it;
PP_LL=SIZE,WAYS,LINE in the environment sets another), per function too, the table sorted by D1 misses. Deterministic enough to
compare builds; the idle loop is not taken out of the miss totals.
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


LL = "--LL=" + os.environ.get("PP_LL", "2097152,16,64")


def run(exe, conns, trips, out, cache_sim=False):
    env = dict(os.environ, SWARM_WORKERS="1")
    sim = ["--cache-sim=yes", LL] if cache_sim else []
    p = subprocess.Popen(["taskset", "-c", "0", "valgrind", "--tool=callgrind"]
                         + sim + ["--callgrind-out-file=" + out, exe],
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


COUNT = r"(?:([\d,]+)(?: \(\s*[\d.]+%\))?|\.)\s+"


def per_function(out, events=("Ir",)):
    """({event: total}, {function: {event: count}}) of one profile."""
    text = subprocess.run(["callgrind_annotate", "--inclusive=no", "--auto=no",
                           "--threshold=100", "--show=" + ",".join(events),
                           out],
                          capture_output=True, text=True).stdout
    line_re = re.compile(r"\s*" + COUNT * len(events) + r"(\S.*)$")
    fns = {}
    total = {}
    for line in text.splitlines():
        m = line_re.match(line)
        if not m or m.group(1) is None:
            continue
        counts = {ev: int((m.group(i + 1) or "0").replace(",", ""))
                  for i, ev in enumerate(events)}
        rest = m.group(len(events) + 1)
        if rest.startswith("PROGRAM TOTALS"):
            total = counts
            continue
        name = re.sub(r"\s*\[.*", "", rest).rsplit(":", 1)[-1]
        name = re.sub(r"'\d+$", "", name)  # recursion levels: one function
        f = fns.setdefault(name, dict.fromkeys(events, 0))
        for ev in events:
            f[ev] += counts[ev]
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
    ap.add_argument("--cache-sim", action="store_true",
                    help="D1 and last-level misses per round trip too")
    a = ap.parse_args()
    events = (("Ir", "D1mr", "D1mw", "DLmr", "DLmw") if a.cache_sim
              else ("Ir",))
    lo, hi = (int(x) for x in a.trips.split(","))
    exes = {"swarm": f"{a.build}/bench/pingpong-server-swarm",
            "epoll": f"{a.build}/bench/peers/pingpong-server-epoll"}
    tmp = tempfile.mkdtemp(prefix="pp-callgrind-")
    for server in a.servers.split(","):
        res = []
        for trips in (lo, hi):
            out = os.path.join(tmp, f"{server}.{trips}.out")
            run(exes[server], a.conns, trips, out, a.cache_sim)
            res.append(per_function(out, events))
        (t0, f0), (t1, f1) = res
        n = hi - lo
        zero = dict.fromkeys(events, 0)
        diff = {k: {ev: (f1.get(k, zero)[ev] - f0.get(k, zero)[ev]) / n
                    for ev in events}
                for k in set(f0) | set(f1)}
        idle = sum(diff.get(k, zero)["Ir"] for k in a.idle.split(","))
        total = {ev: (t1.get(ev, 0) - t0.get(ev, 0)) / n for ev in events}
        print(f"\n{server}, C = {a.conns}: {total['Ir'] - idle:.0f} "
              f"instructions per round trip, and {idle:.0f} in the idle loop "
              f"({a.idle}) ({lo} and {hi} round trips)\n")
        if a.cache_sim:
            print("misses per round trip: " + ", ".join(
                f"{ev} {total[ev]:.2f}" for ev in events[1:]) + "\n")
            print("| function | Ir | D1mr | D1mw | DLmr | DLmw |")
            print("| --- | ---: | ---: | ---: | ---: | ---: |")
            key = lambda kv: -(kv[1]["D1mr"] + kv[1]["D1mw"])
        else:
            print("| function | instructions per round trip |")
            print("| --- | ---: |")
            key = lambda kv: -kv[1]["Ir"]
        for k, v in sorted(diff.items(), key=key)[:a.top]:
            print(f"| `{k}` | " + " | ".join(f"{v[ev]:.1f}" if ev == "Ir"
                                             else f"{v[ev]:.2f}"
                                             for ev in events) + " |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
