#!/usr/bin/env python3
"""check_dist_trace.py — traces test_dist_trace under mpirun and checks the
one file rank 0 wrote, through tools/swarm-trace (its --json summary and
its --to-json events), against what the runtime counted on every rank:

  - one process track per rank, named "rank R on <host>", each with its
    worker's track below it;
  - every steal names a victim rank (another rank, in range) and a kind
    (rma/msg, same-node/remote) that matches the steal mode, and same-node
    steals are the runtime's node_steals;
  - per rank: spawns, steals, migrations, spawn_ons and join parks in the
    trace equal the runtime's spawns, steals, migrations, remote_spawns
    and suspensions; threads in the trace (spawns + starts) equal the
    threads of the run (spawns + remote spawns + the root);
  - the forced steal and migration are there.

usage: check_dist_trace.py SWARM_TRACE_TOOL STEAL -- MPIEXEC ARGS... PROGRAM
       (the command runs as given, with --steal STEAL appended; STEAL
       auto, where the runtime has it, accepts steals of either mode)
"""
import json
import os
import subprocess
import sys
import tempfile


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def main():
    if len(sys.argv) < 5 or "--" not in sys.argv:
        sys.exit(__doc__)
    tool, steal = sys.argv[1], sys.argv[2]
    cmd = sys.argv[sys.argv.index("--") + 1:] + ["--steal", steal]
    with tempfile.TemporaryDirectory(prefix="dist-trace-") as tmp:
        trace = os.path.join(tmp, "job.pftrace")
        expect = os.path.join(tmp, "expect.json")
        env = dict(os.environ, SWARM_TRACE=trace, SWARM_DIST_TEST_EXPECT=expect,
                   SWARM_STATS="1")
        r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=100)
        print(r.stdout[-3000:])
        if r.returncode != 0:
            fail(f"the traced run exited with {r.returncode}")
        with open(expect) as f:
            want = json.load(f)
        summary = json.loads(subprocess.run(
            [sys.executable, tool, trace, "--json"], check=True,
            stdout=subprocess.PIPE, text=True).stdout)
        events_file = os.path.join(tmp, "job.json")
        subprocess.run([sys.executable, tool, trace, "--to-json", events_file],
                       check=True, stdout=subprocess.DEVNULL)
        with open(events_file) as f:
            events = json.load(f)["traceEvents"]
        size = os.path.getsize(trace)

    P = len(want["ranks"])
    ranks = summary["ranks"]
    if [r["rank"] for r in ranks] != list(range(P)):
        fail(f"process tracks {[r['rank'] for r in ranks]}, want one per rank 0..{P - 1}")
    procs = {e["pid"]: e["args"]["name"] for e in events
             if e["ph"] == "M" and e["name"] == "process_name"}
    for r in ranks:
        name = procs.get(r["rank"] + 1, "")
        if name != f"rank {r['rank']} on {r['host']}" or not r["host"]:
            fail(f"rank {r['rank']}'s process track is named {name!r}")
        if r["workers"] != 1:
            fail(f"rank {r['rank']} has {r['workers']} worker tracks, want 1")

    mode = "msg" if steal == "msg" else "rma"
    steals = [e for e in events if e.get("name") == "steal" and e["ph"] != "M"]
    for e in steals:
        me, v = e["pid"] - 1, e["args"].get("victim", -1)
        kind = e["args"].get("kind", "")
        if not (0 <= v < P) or v == me:
            fail(f"rank {me}'s steal names victim {v}")
        kinds = ("rma", "msg") if steal == "auto" else (mode,)
        if kind not in [f"{m} {w}" for m in kinds for w in ("same-node", "remote")]:
            fail(f"rank {me}'s steal has kind {kind!r} under --steal {steal}")

    for r, w in zip(ranks, want["ranks"]):
        same = sum(n for k, n in r["steals_by_kind"].items() if k.endswith("same-node"))
        pairs = [("spawns", r["spawns"], w["spawns"]),
                 ("steals", r["steals"], w["steals"]),
                 ("same-node steals", same, w["node_steals"]),
                 ("migrations", r["migrations"], w["migrations"]),
                 ("spawn_ons", r["spawn_ons"], w["remote_spawns"]),
                 ("join parks", r["parks"], w["suspensions"])]
        for what, got, exp in pairs:
            if got != exp:
                fail(f"rank {r['rank']}: {got} {what} in the trace, the runtime "
                     f"counted {exp}")
    threads = sum(w["spawns"] + w["remote_spawns"] for w in want["ranks"]) + want["runs"]
    if summary["threads"] != threads:
        fail(f"{summary['threads']} threads in the trace, the run had {threads}")
    if not steals or sum(r["migrations"] for r in ranks) == 0:
        fail("the forced steal and migration are missing")
    print(f"ok: {P} rank tracks, {threads} threads, {len(steals)} steals "
          f"({', '.join(sorted({e['args']['kind'] for e in steals}))}), "
          f"{sum(r['migrations'] for r in ranks)} migrations, {size} bytes")


if __name__ == "__main__":
    main()
