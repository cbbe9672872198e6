#!/usr/bin/env python3
"""tests/trace/check_size.py — the Perfetto trace of fib(N) (a thread per
call) is at most LIMIT bytes per thread, and tools/swarm-trace reads it back
whole: as many spawns as threads spawned, every one of them a thread that
ran, and a critical path no longer than the work.

Usage: check_size.py TRACE_FIB TOOL N LIMIT [--emulator "qemu-aarch64 -L ..."]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def fail(msg):
    print("check_size: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("workload")
    ap.add_argument("tool")
    ap.add_argument("n", type=int)
    ap.add_argument("limit", type=float)
    ap.add_argument("--emulator")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as td:
        path = os.path.join(td, "fib.pftrace")
        env = dict(os.environ, SWARM_TRACE=path)
        env.setdefault("SWARM_WORKERS", "2")  # the suite sets 1, 2 or 4
        cmd = (a.emulator.split() if a.emulator else []) + [a.workload, str(a.n)]
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=500)
        sys.stderr.write(r.stderr)
        if r.returncode != 0:
            fail(f"workload exited {r.returncode}")
        threads = int(r.stdout.split()[-1])
        size = os.path.getsize(path)
        per = size / threads
        print(f"check_size: fib({a.n}): {threads} threads, {size} bytes, "
              f"{per:.1f} bytes per thread (limit {a.limit})")
        if per > a.limit:
            fail(f"{per:.1f} bytes per thread")
        conv = os.path.join(td, "fib.json")
        r = subprocess.run([sys.executable, a.tool, path, "--json", "--to-json", conv],
                           capture_output=True, text=True, timeout=500)
        if r.returncode != 0:
            fail(f"swarm-trace exited {r.returncode}: {r.stderr}")
        summary = json.loads(r.stdout)
        spawns = sum(w["spawns"] for w in summary["workers"])
        if spawns != threads:
            fail(f"{spawns} spawns read back, {threads} spawned")
        with open(conv) as f:
            evs = json.load(f)["traceEvents"]
        ran = {e["args"]["thread"] for e in evs if e.get("name") == "run"}
        children = {e["args"]["child"] for e in evs if e.get("name") == "spawn"}
        if children - ran:
            fail(f"{len(children - ran)} spawned threads never ran")
        if not 0 < summary["critical_path_us"] <= summary["work_us"] * 1.001:
            fail(f"critical path {summary['critical_path_us']} vs work {summary['work_us']}")
    print("check_size: ok")


if __name__ == "__main__":
    main()
