#!/usr/bin/env python3
"""make bench-dist: the distributed runtime's figures (issue 7).

1. Thread creation: fib and btc at 1 rank (build/bench/dist) against the
   shared-memory runtime at 1 worker (build/bench), interleaved 3 times;
   ns per spawn+join and the ratio dist / shared memory.
2. One steal's latency and its breakdown (medians over the steals of UTS T1
   at 2 ranks), RMA and message stealing.
3. Throughput (tasks/s) of UTS T1, UTS T3 and BTC at P = 1, 2, RMA and
   message stealing (T1L/T3L, 25x larger, take minutes per run on the
   2-CPU machine: pass --large to run them too).
4. With --cluster (make bench-dist passes it where tools/cluster can make
   nodes): UTS T1 (T1L with --large), T3, BTC and fib across 2 and 4
   simulated nodes x 1-2 ranks (Open MPI over TCP, the created window), RMA
   and message stealing: speed-up against 1 rank, CPU time of all ranks,
   steals and migrations per second, steal latency; and steal_busy (a
   victim that computes for 1 s) on one node and across two.

5. With --t1l-goal (make bench-dist-t1l; alone): issue 14's goal, UTS T1L
   on 2 simulated nodes x 1 rank against 1 rank, with Open MPI and (where
   built) MPICH, steal modes auto (the default) and msg, --rounds rounds
   interleaved: speed-up of the median wall times, CPU time of all ranks,
   per rank the fraction of the wall time spent in thread code and its CPU
   seconds, steals and migrations per run.

Every program's JSON line goes to --out (one per line); a summary is printed.
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TREES = {
    "T1": "-t 1 -a 3 -d 10 -b 4 -r 19",
    "T3": "-t 0 -b 2000 -q 0.124875 -m 8 -r 42",
    "T1L": "-t 1 -a 3 -d 13 -b 4 -r 29",
    "T3L": "-t 0 -b 2000 -q 0.200014 -m 5 -r 7",
}


def run(cmd, out):
    print("+ " + cmd, file=sys.stderr, flush=True)
    r = subprocess.run(shlex.split(cmd), capture_output=True, text=True, timeout=1800)
    rec = None
    for line in r.stdout.splitlines():
        if line.startswith("{"):
            rec = json.loads(line)
    if r.returncode != 0 or rec is None:
        sys.exit(f"bench-dist: failed ({r.returncode}): {cmd}\n{r.stderr[-2000:]}")
    rec["command"] = cmd
    out.write(json.dumps(rec) + "\n")
    out.flush()
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default=None)
    ap.add_argument("--mpirun", default="mpirun --allow-run-as-root --oversubscribe")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--large", action="store_true")
    ap.add_argument("--cluster", action="store_true")
    ap.add_argument("--cluster-only", action="store_true",
                    help="section 4 alone")
    ap.add_argument("--t1l-goal", action="store_true",
                    help="section 5 alone: UTS T1L, 2 nodes x 1 rank vs 1 rank")
    ap.add_argument("--rounds", type=int, default=3,
                    help="interleaved rounds for --t1l-goal")
    a = ap.parse_args()
    b = a.build
    out_path = a.out or os.path.join(b, "bench", "dist-results.jsonl")
    os.makedirs(os.path.dirname(out_path), exist_ok=True)
    mp = a.mpirun
    create, steal, thr, clus = {}, {}, [], None
    with open(out_path, "w") as out:
        if a.t1l_goal:
            t1l_goal(a, b, out)
            return
        if a.cluster_only:
            clus = cluster_runs(a, b, out)
            print_cluster(*clus)
            return
        # 1. creation
        for w, flag in (("fib", "-n 27"), ("btc", "-d 20")):
            for _ in range(3):
                smp = run(f"{b}/bench/{w} -w 1 {flag} --reps {a.reps}" +
                          (" --no-serial" if w == "fib" else ""), out)
                dist = run(f"{mp} -n 1 {b}/bench/dist/{w} {flag} --reps {a.reps}", out)
                create.setdefault(w, []).append((smp["ns_per_task"], dist["ns_per_task"]))
        # 2. steal latency
        for mode in ("rma", "msg"):
            steal[mode] = run(f"{mp} -n 2 {b}/bench/dist/uts {TREES['T1']} --reps 3 --steal {mode}", out)
        # 3. throughput
        trees = ["T1", "T3"] + (["T1L", "T3L"] if a.large else [])
        for name in trees + ["btc"]:
            args = TREES.get(name, "-d 20")
            prog = "uts" if name != "btc" else "btc"
            reps = 3 if name in ("T1", "T3", "btc") else 1
            for p, mode in ((1, "rma"), (2, "rma"), (2, "msg")):
                r = run(f"{mp} -n {p} {b}/bench/dist/{prog} {args} --reps {reps} --steal {mode}", out)
                thr.append((name, p, mode, r))
            for wk in (1, 2):
                r = run(f"{b}/bench/{prog} {args} -w {wk} --reps {reps}", out)
                thr.append((name, wk, "smp", r))

        clus = cluster_runs(a, b, out) if a.cluster else None

    print(f"\nbench-dist: JSON lines in {out_path}\n")
    print("Thread creation (spawn+join, 1 rank vs shared memory at 1 worker; median of 3 interleaved runs):")
    for w, pairs in create.items():
        s = statistics.median(p[0] for p in pairs)
        d = statistics.median(p[1] for p in pairs)
        print(f"  {w:4}  shared {s:7.1f} ns   dist {d:7.1f} ns   ratio {d / s:4.2f}x")
    print("\nOne steal (UTS T1, 2 ranks; medians over the steals of 3 runs):")
    for mode, r in steal.items():
        print(f"  {mode}: {r['steal_ns'] / 1000:.2f} us (p90 {r['steal_p90_ns'] / 1000:.2f} us, "
              f"mean {r['steal_mean_ns'] / 1000:.2f} us) over {r['remote_steals']:.0f} steals/run; "
              f"lock {r['steal_lock_ns']:.0f} ns, top/bottom {r['steal_index_ns']:.0f}, "
              f"entry {r['steal_entry_ns']:.0f}, frames {r['steal_frames_ns']:.0f} "
              f"({r['steal_bytes']:.0f} B), unlock {r['steal_unlock_ns']:.0f}")
    print("\nThroughput (Mtasks/s, median run; dist: CPU seconds of all ranks per run,")
    print("and that over P=1's: the work distribution adds, whatever the machine's load):")
    base_cpu = {}
    for name, p, mode, r in thr:
        rate = r["tasks"] / r["seconds_median"] / 1e6
        label = f"P={p} {mode}" if mode != "smp" else f"shared-memory w={p}"
        extra = ""
        if mode != "smp":
            if p == 1:
                base_cpu[name] = r["cpu_seconds"]
            infl = r["cpu_seconds"] / base_cpu[name] if base_cpu.get(name) else float("nan")
            extra = (f"  cpu {r['cpu_seconds']:.2f} s ({infl:.2f}x)  steals/run {r['remote_steals']:.0f}"
                     f"  migrations/run {r['migrations']:.0f}")
        print(f"  {name:4} {label:20} {rate:6.2f}  correct={r['correct']}{extra}")
    if clus:
        print_cluster(*clus)


CLUSTER_WORK = [("T1", "uts", TREES["T1"]), ("T3", "uts", TREES["T3"]),
                ("btc", "btc", "-d 20"), ("fib", "fib", "-n 27")]


def cluster_runs(a, b, out):
    """Section 4: the workloads at 1 rank, then across simulated nodes."""
    cl = os.path.join(ROOT, "tools", "cluster")
    rsh = os.path.join(ROOT, "tools", "cluster-rsh")
    mp = "mpirun --allow-run-as-root --oversubscribe --bind-to none"
    work = CLUSTER_WORK + ([("T1L", "uts", TREES["T1L"])] if a.large else [])
    base, runs, busy = {}, [], []
    for name, prog, args in work:
        base[name] = run(f"{mp} -n 1 {b}/bench/dist/{prog} {args} --reps 3", out)
    busy.append(run(f"{mp} -n 2 {b}/bench/dist/steal_busy -m 1000 --reps 5", out))
    try:
        for n in (2, 4):
            subprocess.run([cl, "up", str(n)], check=True, capture_output=True)
            for k in (1, 2):
                hosts = ",".join(f"node{i}:{k}" for i in range(1, n + 1))
                cmd = f"{cl} exec node1 {mp} --mca plm_rsh_agent {rsh} --host {hosts} -n {n * k}"
                for name, prog, args in work:
                    for mode in ("auto", "rma", "msg"):
                        reps = 1 if name == "T1L" else 3
                        r = run(f"{cmd} {b}/bench/dist/{prog} {args} --reps {reps} --steal {mode}", out)
                        runs.append((name, n, k, mode, r))
                if n == 2 and k == 1:
                    busy.append(run(f"{cmd} {b}/bench/dist/steal_busy -m 1000 --reps 5", out))
    finally:
        subprocess.run([cl, "down"], capture_output=True)
    return base, runs, busy


def print_cluster(base, runs, busy):
    print("\nAcross simulated nodes (tools/cluster, Open MPI over TCP, created window;")
    print("speed-up = 1 rank's wall time / this one's; needs free cores to mean anything):")
    for name, n, k, mode, r in runs:
        b0 = base[name]
        sec = r["seconds_median"]
        print(f"  {name:4} {n} nodes x {k} {mode}  speed-up {b0['seconds_median'] / sec:5.2f}x"
              f"  cpu {r['cpu_seconds'] / b0['cpu_seconds']:5.2f}x of 1 rank"
              f"  steals/s {r['remote_steals'] / sec:8.0f}  migrations/s {r['migrations'] / sec:8.0f}"
              f"  steal {r['steal_ns'] / 1000:8.1f} us  correct={r['correct']}")
    print("\nA victim computing 1 s without spawning (steal_busy, 5 runs):")
    for r in busy:
        print(f"  {r['nodes']} node(s), {r['window']} window: stolen {r['stolen']}/5, wait median "
              f"{r['wait_us_median']:.1f} us (max {r['wait_us_max']:.1f}), steal {r['steal_us']:.1f} us")


def t1l_goal(a, b, out):
    """Section 5: UTS T1L, 2 simulated nodes x 1 rank against 1 rank."""
    cl = os.path.join(ROOT, "tools", "cluster")
    rsh = os.path.join(ROOT, "tools", "cluster-rsh")
    args = f"{TREES['T1L']} --reps 1 --warmup 0"
    mp = "mpirun --allow-run-as-root --oversubscribe --bind-to none"
    mpis = [("Open MPI", f"{mp} -n 1 {b}/bench/dist/uts",
             f"{cl} exec node1 {mp} --mca plm_rsh_agent {rsh} --host node1,node2 -n 2 "
             f"{b}/bench/dist/uts")]
    hydra = subprocess.run(["sh", "-c", "command -v mpiexec.hydra"], capture_output=True)
    if hydra.returncode == 0 and os.access(f"{b}/bench/dist-mpich/uts", os.X_OK):
        mpis.append(("MPICH", f"mpiexec.hydra -n 1 {b}/bench/dist-mpich/uts",
                     f"{cl} exec node1 mpiexec.hydra -launcher ssh -launcher-exec {rsh} "
                     f"-hosts node1,node2 -n 2 {b}/bench/dist-mpich/uts"))
    res = {}
    subprocess.run([cl, "up", "2"], check=True, capture_output=True)
    try:
        for _ in range(a.rounds):
            for mpi, one, two in mpis:
                res.setdefault((mpi, "1 rank"), []).append(run(f"{one} {args}", out))
                for mode in ("auto", "msg"):
                    res.setdefault((mpi, mode), []).append(
                        run(f"{two} {args} --steal {mode}", out))
    finally:
        subprocess.run([cl, "down"], capture_output=True)
    print(f"\nUTS T1L (102,181,082 nodes), 2 simulated nodes x 1 rank vs 1 rank, "
          f"{a.rounds} interleaved rounds (load {os.getloadavg()[0]:.1f} at the end):")
    for (mpi, mode), rs in res.items():
        base = statistics.median(r["seconds_median"] for r in res[(mpi, "1 rank")])
        wall = statistics.median(r["seconds_median"] for r in rs)
        cpu = statistics.median(r["cpu_seconds"] for r in rs)
        ok = all(r["correct"] for r in rs)
        line = f"  {mpi:8} {mode:6}  wall {wall:7.2f} s  speed-up {base / wall:5.2f}x  cpu {cpu:7.2f} s"
        if mode != "1 rank":
            line += (f"  busy/cpu per rank {rs[len(rs) // 2]['per_rank_busy_cpu']}"
                     f"  steals {statistics.median(r['remote_steals'] for r in rs):.0f}"
                     f"  migrations {statistics.median(r['migrations'] for r in rs):.0f}")
        print(line + f"  correct={ok}")


if __name__ == "__main__":
    main()
