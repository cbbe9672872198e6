#!/usr/bin/env python3
"""tests/trace/check_trace.py — runs trace_workload with SWARM_TRACE and checks
the file against the scheduler's own counters.

Usage: check_trace.py WORKLOAD MODE [--buffer N] [--fifo] [--swarm-trace TOOL]
                      [--perfetto TOOL] [--emulator "qemu-aarch64 -L SYSROOT"]
  MODE: finalize | exit (how the workload ends; see trace_workload.c)
  --buffer N: SWARM_TRACE_BUFFER=N, so buffers fill and are written while
              the program runs; the checks then prove nothing was lost
  --fifo:     trace into a FIFO: no spill file, full buffers are formatted
              into it as they fill
  --swarm-trace TOOL: also run tools/swarm-trace on the file and check its
              summary and that it wrote a PNG
  --perfetto TOOL: trace in Perfetto's protobuf (out.pftrace) instead of
              JSON, read back into the JSON's events by TOOL (swarm-trace
              --to-json), and make the same checks on those, plus: the file
              is protobuf, and (but into a FIFO) at most 40 bytes per thread

What it asserts: the file is one JSON object with a traceEvents list and
names every worker's track; per worker, spawn events equal the spawn
counter, steal events the successful steals, park events (other than
swarm_finalize's own) the park counter, sleep slices at least the sleeps
counted (but one still in progress at exit), run slices at least the
threads run; run slices on a worker never overlap; every spawned child
runs; parks name join, mutex, cond, sleep, yield and io, and readies join,
mutex, cond and sleep (an io ready may come from the monitor, which records
none); the trailer's event count is the events'.
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import threading


def fail(msg):
    print("check_trace: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("workload")
    ap.add_argument("mode", choices=["finalize", "exit"])
    ap.add_argument("--buffer", type=int)
    ap.add_argument("--swarm-trace")
    ap.add_argument("--perfetto", metavar="TOOL")
    ap.add_argument("--emulator", help="run the workload under this (qemu)")
    ap.add_argument("--fifo", action="store_true",
                    help="trace into a FIFO (not a regular file: no spill "
                         "file, buffers are formatted as they fill)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as td:
        path = os.path.join(td, "out.pftrace" if a.perfetto else "out.json")
        env = dict(os.environ, SWARM_TRACE=path)
        env.pop("SWARM_WORKERS", None)
        if a.buffer:
            env["SWARM_TRACE_BUFFER"] = str(a.buffer)
        received = []
        if a.fifo:
            os.mkfifo(path)
            reader = threading.Thread(
                target=lambda: received.append(open(path, "rb").read()))
            reader.start()
        cmd = (a.emulator.split() if a.emulator else []) + [a.workload, a.mode]
        r = subprocess.run(cmd, env=env, capture_output=True, text=True,
                           timeout=500)
        sys.stderr.write(r.stderr)
        if r.returncode != 0:
            fail(f"workload exited {r.returncode}")
        line = json.loads(r.stdout.strip().splitlines()[-1])
        stats, regular = line["workers"], line["regular"]
        if a.fifo:
            reader.join(60)
            if not received:
                fail("nothing came through the FIFO")
            data = received[0]
        else:
            with open(path, "rb") as f:
                data = f.read()
        if a.perfetto:
            doc = from_perfetto(a.perfetto, data, td, line, not a.fifo)
        else:
            try:
                doc = json.loads(data)
            except json.JSONDecodeError as e:
                fail(f"not JSON: {e}")
        check(doc, stats, regular, a.buffer)
        if a.swarm_trace:
            check_tool(a.swarm_trace, path, td, regular)
    print("check_trace: ok")


def from_perfetto(tool, data, td, line, bounded):
    if data[:1] != b"\x0a" or data.lstrip()[:1] == b"{":
        fail("not Perfetto's protobuf (a Trace starts with packet tag 0x0a)")
    spawned = sum(s["spawned"] for s in line["workers"])
    # each worker's sequence opens with about 750 bytes of clock, defaults,
    # names and track: counted apart, so that many workers do not fail this
    headers = 1024 * len(line["workers"])
    per_thread = max(0, len(data) - headers) / max(1, spawned)
    if bounded and per_thread > 40:  # a FIFO trace names every slice's thread
        fail(f"{len(data)} bytes for {spawned} threads: {per_thread:.1f} per thread")
    src, conv = os.path.join(td, "copy.pftrace"), os.path.join(td, "conv.json")
    with open(src, "wb") as f:
        f.write(data)
    r = subprocess.run([sys.executable, tool, src, "--to-json", conv],
                       capture_output=True, text=True, timeout=240)
    if r.returncode != 0:
        fail(f"swarm-trace --to-json exited {r.returncode}: {r.stderr}")
    with open(conv) as f:
        doc = json.load(f)
    print(f"check_trace: protobuf {len(data)} bytes, {per_thread:.1f} per thread")
    return doc


def check(doc, stats, regular, buffer):
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        fail("no traceEvents list")
    evs = doc["traceEvents"]
    nworkers = regular
    meta = [e for e in evs if e["ph"] == "M"]
    names = {e["tid"]: e["args"]["name"] for e in meta if e["name"] == "thread_name"}
    # regular workers always; spare workers (the monitor's) only if they ran
    want = {i: f"worker {i}" for i in range(nworkers)}
    want.update({i: f"worker {i} (spare)" for i in names
                 if nworkers <= i < len(stats)})
    if names != want:
        fail(f"worker tracks named {names}")
    real = [e for e in evs if e["ph"] != "M"]
    if doc.get("otherData", {}).get("events") != len(real):
        fail(f"trailer says {doc.get('otherData')} events, file has {len(real)}")
    for e in real:
        for k in ("name", "ph", "ts", "pid", "tid"):
            if k not in e:
                fail(f"event without {k}: {e}")
        if e["tid"] not in names:
            fail(f"event on an unknown worker: {e}")
    per = collections.defaultdict(collections.Counter)
    reasons = collections.Counter()
    ready_reasons = collections.Counter()
    finalize_parks = collections.Counter()
    children, ran = set(), set()
    slices = collections.defaultdict(list)
    for e in real:
        w, n = e["tid"], e["name"]
        if n == "park":
            reasons[e["args"]["reason"]] += 1
            if e["args"]["reason"] == "finalize":
                finalize_parks[w] += 1
                continue
        if n == "ready":
            ready_reasons[e["args"]["reason"]] += 1
        if n == "spawn":
            children.add(e["args"]["child"])
        if n == "run":
            ran.add(e["args"]["thread"])
            slices[w].append((e["ts"], e["dur"]))
        if e["ph"] == "X" and e["dur"] < 0:
            fail(f"negative duration: {e}")
        per[w][n] += 1
    for i, s in enumerate(stats):
        c = per[i]
        if c["spawn"] != s["spawned"]:
            fail(f"worker {i}: {c['spawn']} spawn events, counter {s['spawned']}")
        if c["steal"] != s["steals"]:
            fail(f"worker {i}: {c['steal']} steal events, counter {s['steals']}")
        if c["park"] != s["parks"]:
            fail(f"worker {i}: {c['park']} park events, counter {s['parks']}")
        # a sleep still in progress when the trace closes at exit is lost
        if c["sleep"] < s["sleeps"] - 1:
            fail(f"worker {i}: {c['sleep']} sleep slices, counter {s['sleeps']}")
        if c["run"] < s["run"]:
            fail(f"worker {i}: {c['run']} run slices, counter {s['run']}")
        prev_end = -1.0
        for ts, dur in sorted(slices[i]):
            if ts < prev_end - 1e-9:  # float parsing only: ends are exact
                fail(f"worker {i}: slice at {ts} starts before {prev_end}")
            prev_end = ts + dur
    total = {k: sum(per[i][k] for i in per) for k in ("spawn", "steal", "park", "run", "sleep")}
    if total["spawn"] < 377 * 2 or total["steal"] == 0 or total["sleep"] == 0:
        fail(f"the workload made too few events: {total}")
    missing = children - ran
    if missing:
        fail(f"{len(missing)} spawned threads never ran, e.g. {sorted(missing)[:3]}")
    for want in ("join", "mutex", "cond", "sleep", "yield", "io"):
        if reasons[want] == 0:
            fail(f"no park with reason {want}: {dict(reasons)}")
    for want in ("join", "mutex", "cond", "sleep"):
        if ready_reasons[want] == 0:
            fail(f"no ready with reason {want}: {dict(ready_reasons)}")
    if set(ready_reasons) - set(reasons):
        fail(f"ready reasons {dict(ready_reasons)} vs park reasons {dict(reasons)}")
    if buffer and len(real) < 4 * buffer * nworkers:
        fail(f"only {len(real)} events with {buffer}-record buffers: "
             "the test did not make the buffers fill")
    print(f"check_trace: {len(real)} events, per worker "
          f"{ {i: dict(per[i]) for i in sorted(per)} }, park reasons {dict(reasons)}")


def check_tool(tool, path, td, nworkers):
    png = os.path.join(td, "timeline.png")
    r = subprocess.run([sys.executable, tool, path, "--png", png, "--json"],
                       capture_output=True, text=True, timeout=240)
    sys.stderr.write(r.stderr)
    if r.returncode != 0:
        fail(f"swarm-trace exited {r.returncode}")
    summary = json.loads(r.stdout)
    if len([w for w in summary["workers"] if w["worker"] < nworkers]) != nworkers:
        fail(f"swarm-trace summarised {len(summary['workers'])} workers")
    for w in summary["workers"]:
        if w["worker"] < nworkers and w["busy_us"] <= 0 or w["busy_us"] > summary["span_us"] * 1.001:
            fail(f"busy time out of range: {w}")
        if abs(w["busy_us"] + w["idle_us"] - summary["span_us"]) > 0.01 * summary["span_us"]:
            fail(f"busy + idle is not the span: {w}")
    if not (0 < summary["critical_path_us"] <= summary["work_us"] * 1.001):
        fail(f"critical path {summary['critical_path_us']} vs work {summary['work_us']}")
    if not summary["parallelism_over_time"]:
        fail("no parallelism profile")
    with open(png, "rb") as f:
        if f.read(8) != b"\x89PNG\r\n\x1a\n":
            fail("swarm-trace did not write a PNG")
    print(f"check_trace: swarm-trace ok: work {summary['work_us']:.0f} us, "
          f"critical path {summary['critical_path_us']:.0f} us")


if __name__ == "__main__":
    main()
