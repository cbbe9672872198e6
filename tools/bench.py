#!/usr/bin/env python3
"""tools/bench.py — the benchmark driver (issue 3): runs every workload on
every system at 1 worker and at all workers, keeps the JSON lines the
programs print, prints a table of ratios against serial and against each
peer, and draws grouped bars with matplotlib.

  tools/bench.py --mode full   [--build build]   # make bench: results/bench.json, results/bench.png
  tools/bench.py --mode demo   [--build build]   # make demo: ~1 minute, smaller sizes
  tools/bench.py --mode instr  [--build build]   # make bench-instr: callgrind instructions per task
  tools/bench.py --mode pingpong [--build build] # just the I/O benchmark: results/pingpong.json + .png
      [--pp-conns 128,1024,8192] [--pp-servers swarm,epoll] [--pp-shapes all] [--reps 3]  # fewer points

Programs: build/bench/<workload> (swarm) and build/bench/peers/<workload>-<system>
(serial, omp, tbb, pthread, go). The Go peers are built here with `go build`
(whatever `go` is on PATH); a system whose program is missing is reported as
unavailable with the reason, never dropped silently. Peers run with their
documented knobs only: -w becomes omp_set_num_threads, TBB's global_control,
GOMAXPROCS, or a CPU affinity mask for NPTL. The full run adds libgomp with
OMP_WAIT_POLICY=passive at all workers (system "omp-passive"), its documented
knob for the second-thread slowdown, beside the default.

Ratios compare medians of ns_per_task; every system runs the same tasks for
a workload, so that is the ratio of times. The NPTL peer times create+join
pairs instead where a thread per task is not feasible; its rows are marked *.
"""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SYSTEMS = ["serial", "swarm", "swarm-inline", "swarm-cxx", "omp", "tbb", "pthread", "go"]
# swarm-inline: the same programs with --inline, the opt-in that lets a child
# run as a call (swarm_attr_setinline): the freedom OpenMP's tasks have.
SYSTEM_ARGS = {"swarm-inline": ["--inline"]}
WORKLOADS = ["fib", "btc", "uts", "nqueens"]

T1 = ["-t", "1", "-a", "3", "-d", "10", "-b", "4", "-r", "19"]
T1D8 = ["-t", "1", "-a", "3", "-d", "8", "-b", "4", "-r", "19"]
T3 = ["-t", "0", "-b", "2000", "-q", "0.124875", "-m", "8", "-r", "42"]

# (label, workload, size flags) per mode
CASES = {
    "full": [
        ("fib n=30", "fib", ["-n", "30"]),
        ("btc d=21", "btc", ["-d", "21"]),
        ("uts T1", "uts", T1),
        ("uts T3", "uts", T3),
        ("nqueens n=13", "nqueens", ["-n", "13"]),
    ],
    "demo": [
        ("fib n=25", "fib", ["-n", "25"]),
        ("btc d=17", "btc", ["-d", "17"]),
        ("uts T1d8", "uts", T1D8),
        ("nqueens n=11", "nqueens", ["-n", "11"]),
    ],
}
REPS = {"full": (5, 1), "demo": (3, 1)}  # (reps, warm-up reps)
# issue 2's view of swarm's fib alone: per-thread cost, overhead over serial,
# page faults, scaling (its goal: >= 1.9x on 2 workers for fib(33))
FIB_DETAIL = {"full": [30, 33], "demo": [30]}
TIMEOUT = {"full": 900, "demo": 120}


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def program(build, workload, system):
    if system in ("swarm", "swarm-inline"):
        return os.path.join(build, "bench", workload)
    if system == "swarm-cxx":  # include/swarm.hpp: fib and uts only
        return os.path.join(build, "bench", f"cxx_{workload}")
    return os.path.join(build, "bench", "peers", f"{workload}-{system}")


def build_go(build):
    """Builds the Go peers into build/bench/peers; returns None or why not."""
    go = shutil.which("go")
    if not go:
        return "`go` is not on PATH (make deps installs golang-go)"
    src = os.path.join(ROOT, "bench", "peers", "go")
    out = os.path.join(build, "bench", "peers")
    os.makedirs(out, exist_ok=True)
    # stdlib only, no module downloads; GOTOOLCHAIN=local keeps a newer go
    # from trying to fetch another toolchain. Caches go under the build
    # directory when there is no $HOME (a bare CI shell).
    env = dict(os.environ, GOTOOLCHAIN="local", GO111MODULE="on", GOFLAGS="-mod=mod")
    if not env.get("HOME"):
        env.setdefault("GOCACHE", os.path.join(build, "bench", "go-cache"))
        env.setdefault("GOPATH", os.path.join(build, "bench", "go-path"))
    for w in WORKLOADS:
        r = subprocess.run([go, "build", "-o", os.path.join(out, f"{w}-go"), f"./cmd/{w}"],
                           cwd=src, env=env, capture_output=True, text=True)
        if r.returncode != 0:
            return f"go build failed: {r.stderr.strip()[-300:]}"
    # pingpong's Go server (issue 5)
    r = subprocess.run([go, "build", "-o", os.path.join(out, "pingpong-server-go"), "./cmd/pingpong"],
                       cwd=src, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        return f"go build failed: {r.stderr.strip()[-300:]}"
    return None


def run_one(build, system, workload, size, workers, reps, warmup, timeout, env_extra=None):
    """Runs one program; returns its JSON record (or one saying what failed)."""
    base = {"bench": workload, "system": system, "workers_asked": workers}
    exe = program(build, workload, "omp" if system == "omp-passive" else system)
    if not os.path.exists(exe):
        return dict(base, available=False, note=f"{os.path.relpath(exe, ROOT)} not built")
    cmd = [exe] + size + SYSTEM_ARGS.get(system, []) + ["-w", str(workers), "--reps", str(reps), "--warmup", str(warmup)]
    env = dict(os.environ, **(env_extra or {}))
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return dict(base, available=False, note=f"timed out after {timeout} s", command=" ".join(cmd))
    rec = None
    for line in r.stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                pass
    if rec is None:
        return dict(base, available=False, command=" ".join(cmd),
                    note=f"exit {r.returncode}, no JSON; stderr: {r.stderr.strip()[-300:]}")
    rec["system"] = system
    rec["workers_asked"] = workers
    rec["command"] = " ".join([os.path.relpath(exe, ROOT)] + cmd[1:])
    if env_extra:
        rec["env"] = env_extra
    if r.returncode != 0:
        rec["exit_code"] = r.returncode
    return rec


def machine():
    info = {"nproc": len(os.sched_getaffinity(0)), "kernel": platform.release()}
    try:
        with open("/proc/cpuinfo") as f:
            m = re.search(r"model name\s*:\s*(.*)", f.read())
            info["cpu"] = m.group(1).strip() if m else platform.processor()
    except OSError:
        pass
    try:
        with open("/etc/os-release") as f:
            m = re.search(r'PRETTY_NAME="?([^"\n]*)', f.read())
            info["os"] = m.group(1) if m else ""
    except OSError:
        pass
    for name, cmd in [("cc", ["cc", "--version"]), ("go", ["go", "version"])]:
        try:
            info[name] = subprocess.run(cmd, capture_output=True, text=True).stdout.splitlines()[0]
        except (OSError, IndexError):
            info[name] = "unavailable"
    return info


# ---- the table ------------------------------------------------------------

def ns(rec):
    if not rec or rec.get("available") is False or rec.get("ns_per_task") is None:
        return None
    return rec["ns_per_task"]


def fmt_ns(x):
    if x is None:
        return "-"
    return f"{x:,.0f}" if x >= 100 else f"{x:.1f}"


def fmt_ratio(x):
    if x is None:
        return "-"
    if x < 0.1:
        return f"{x:.3f}x"
    return f"{x:.2f}x" if x < 100 else f"{x:,.0f}x"


def ratio(a, b):
    return a / b if a is not None and b else None


def table(runs, n_all):
    """Per case: ns/task at 1 and N workers, scaling, speed vs serial, and
    how many times faster swarm is than each peer (>1: swarm faster)."""
    out = []
    cases = []
    for r in runs:
        if r["case"] not in cases:
            cases.append(r["case"])
    wcols = [1] if n_all == 1 else [1, n_all]
    notes = set()
    for case in cases:
        rs = [r for r in runs if r["case"] == case]
        by = {(r["system"], r["workers_asked"]): r for r in rs}
        systems = []
        for r in rs:
            if r["system"] not in systems:
                systems.append(r["system"])
        serial = ns(by.get(("serial", 1)))
        tasks = next((r.get("tasks") for r in rs if r.get("tasks") and r.get("mode") != "create_join_microbenchmark"), None)
        head = f"{case}" + (f"  ({tasks:,} tasks)" if tasks else "")
        out.append(head)
        cols = ["system"] + [f"ns/task {w}w" for w in wcols]
        if len(wcols) > 1:
            cols.append(f"{n_all}w/1w speedup")
        cols += [f"vs serial {w}w" for w in wcols] + [f"swarm faster {w}w" for w in wcols] + ["ok"]
        rows = [cols]
        for s in systems:
            recs = [by.get((s, w)) for w in wcols]
            if s == "serial":
                recs = [by.get(("serial", 1))] + [None] * (len(wcols) - 1)
            vals = [ns(r) for r in recs]
            name = s
            if any(r and r.get("mode") == "create_join_microbenchmark" for r in recs):
                name += "*"
                notes.add("* create+join microbenchmark: a thread per task is not feasible at this size")
            if any(r and r.get("create_failures") for r in recs):
                name += "!"
                notes.add("! some pthread_create calls failed (EAGAIN); those tasks ran inline")
            row = [name] + [fmt_ns(v) for v in vals]
            if len(wcols) > 1:
                row.append("-" if s == "serial" else fmt_ratio(ratio(vals[0], vals[1])))
            row += [fmt_ratio(ratio(serial, v)) for v in vals]
            swarm = [ns(by.get(("swarm", w))) for w in wcols]
            row += ["-" if s in ("swarm", "serial") else fmt_ratio(ratio(v, sw)) for v, sw in zip(vals, swarm)]
            oks = [r.get("correct") for r in recs if r]
            unavailable = [r for r in recs if r and r.get("available") is False]
            if unavailable:
                ok = "n/a"
                notes.add(f"n/a {s}: {unavailable[0].get('note', '')}")
            elif any(o is False for o in oks):
                ok = "WRONG"
            elif all(o is None for o in oks):
                ok = "-"
            else:
                ok = "yes"
            row.append(ok)
            rows.append(row)
        widths = [max(len(r[i]) for r in rows) for i in range(len(cols))]
        for r in rows:
            out.append("  " + "  ".join(c.rjust(wd) if i else c.ljust(wd) for i, (c, wd) in enumerate(zip(r, widths))))
        out.append("")
    out.append("ns/task: median time / tasks.  vs serial: serial time / system time (>1: faster than serial).")
    out.append("swarm faster: system time / swarm time at the same workers (>1: swarm is faster).")
    if any(r["system"] == "swarm-inline" for r in runs):
        out.append("swarm-inline: swarm with the inline opt-in (--inline, swarm_attr_setinline: a child may run as a")
        out.append("  call when the worker has stealable work), the freedom OpenMP's tasks have; swarm's row is plain threads.")
    for n in sorted(notes):
        out.append(n)
    return "\n".join(out)


def fib_detail(build, ns_list, wlist, reps, warmup, timeout):
    """Runs swarm's fib at each n on 1 and all workers; returns records and
    a readable table (issue 2's fields)."""
    recs = []
    for n in ns_list:
        for w in wlist:
            rec = run_one(build, "swarm", "fib", ["-n", str(n)], w, reps, warmup, timeout)
            rec["case"] = f"fib n={n} (swarm detail)"
            recs.append(rec)
    cols = ["n", "workers", "threads", "seconds", "ns/thread", "serial s", "overhead ns/thread",
            "minflt", "speedup", "ok"]
    rows = [cols]
    for rec in recs:
        if rec.get("available") is False:
            rows.append([str(rec.get("params", {}).get("n", "?")) if isinstance(rec.get("params"), dict) else "?",
                         str(rec["workers_asked"]), "failed: " + rec.get("note", "")[:60]] + [""] * 7)
            continue
        one = next((r for r in recs if r.get("n") == rec.get("n") and r["workers_asked"] == 1
                    and r.get("seconds_median")), None)
        sp = ratio(one["seconds_median"], rec["seconds_median"]) if one else None
        rows.append([str(rec["n"]), str(rec["workers"]), f"{rec['threads']:,}", f"{rec['seconds_median']:.4f}",
                     fmt_ns(rec["ns_per_thread"]), f"{rec.get('serial_seconds_median', 0):.4f}",
                     fmt_ns(rec.get("overhead_ns_per_thread")), str(rec.get("minflt")),
                     fmt_ratio(sp), "yes" if rec.get("correct") else "WRONG"])
    widths = [max(len(r[i]) for r in rows) for i in range(len(cols))]
    lines = ["swarm fib, one thread per call (build/bench/fib; median of %d)" % reps]
    for r in rows:
        lines.append("  " + "  ".join(c.rjust(wd) for c, wd in zip(r, widths)))
    lines.append("overhead ns/thread = (T - T_serial/W) / threads; minflt: minor faults in the timed runs; "
                 "speedup: T(1 worker) / T")
    return recs, "\n".join(lines)


# ---- the plot ---------------------------------------------------------------

def pyplot_or_rerun(flag, in_path, png_path):
    """(matplotlib.pyplot, None), or (None, None) when the plot was drawn by
    Debian's /usr/bin/python3 (python3-matplotlib is installed for that one;
    another python3 first on PATH, pyenv or a venv, does not see it), or
    (None, why) when it cannot be drawn."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt, None
    except ImportError:
        alt = "/usr/bin/python3"
        if os.path.exists(alt) and os.path.realpath(sys.executable) != os.path.realpath(alt):
            r = subprocess.run([alt, os.path.abspath(__file__), flag, in_path, png_path],
                               capture_output=True, text=True)
            if r.returncode == 0:
                return None, None
        return None, "matplotlib not importable (make deps installs python3-matplotlib); plot skipped"


def plot(results_path, png_path):
    """Grouped bars of ns/task per system, 1 and N workers, one panel per case.
    Returns None or why it could not draw."""
    plt, why = pyplot_or_rerun("--plot-only", results_path, png_path)
    if plt is None:
        return why
    with open(results_path) as f:
        data = json.load(f)
    runs = data["runs"]
    n_all = data["workers_all"]
    cases = []
    for r in runs:
        if r["case"] not in cases:
            cases.append(r["case"])
    ncols = min(3, len(cases))
    nrows = (len(cases) + ncols - 1) // ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.6 * ncols, 4.0 * nrows), squeeze=False)
    flat = [ax for row in axes for ax in row]
    for ax in flat[len(cases):]:
        ax.axis("off")
    wcols = [1] if n_all == 1 else [1, n_all]
    for ax, case in zip(flat, cases):
        rs = [r for r in runs if r["case"] == case]
        systems = []
        for r in rs:
            if r["system"] not in systems:
                systems.append(r["system"])
        width = 0.8 / len(wcols)
        for i, w in enumerate(wcols):
            vals, labels = [], []
            for s in systems:
                rec = next((r for r in rs if r["system"] == s and r["workers_asked"] == (1 if s == "serial" else w)), None)
                v = ns(rec)
                if s == "serial" and w != 1:
                    v = None
                vals.append(v if v else 0)
            xs = [k + (i - (len(wcols) - 1) / 2) * width for k in range(len(systems))]
            ax.bar(xs, vals, width, label=f"{w} worker{'s' if w > 1 else ''}")
        names = []
        for s in systems:
            micro = any(r.get("mode") == "create_join_microbenchmark" for r in rs if r["system"] == s)
            names.append(s + ("*" if micro else ""))
        ax.set_xticks(range(len(systems)))
        ax.set_xticklabels(names, rotation=35, ha="right", fontsize=8)
        ax.set_yscale("log")
        ax.set_title(case)
        ax.set_ylabel("ns per task (log)")
        ax.grid(axis="y", which="both", alpha=0.3)
    flat[0].legend(fontsize=8)
    m = data.get("machine", {})
    fig.suptitle(f"swarm vs peers — median of {data['reps']}, {m.get('cpu', '')}, {m.get('nproc', '')} CPUs"
                 "   (* pthread: create+join microbenchmark)", fontsize=9)
    fig.tight_layout()
    fig.savefig(png_path, dpi=110)
    return None


# ---- callgrind mode --------------------------------------------------------------

def function_costs(cg_out):
    """Self instructions per file:function from callgrind_annotate, or {}.
    Recursion levels (fn'2) are merged into fn; code inlined from a header
    is its own row (core.h:swarm_join), which is what a breakdown wants."""
    try:
        r = subprocess.run(["callgrind_annotate", "--inclusive=no", "--auto=no", "--threshold=100", cg_out],
                           capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    costs = {}
    for line in r.stdout.splitlines():
        m = re.match(r"^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(\S+?:\S+)(?:\s+\[.*\])?\s*$", line)
        if not m:
            continue
        path, fn = m.group(2).rsplit(":", 1)
        key = f"{os.path.basename(path)}:{fn.split(chr(39))[0]}"
        costs[key] = costs.get(key, 0) + int(m.group(1).replace(",", ""))
    return costs


def per_task_functions(big, small, dtasks, top=14):
    """Per-function instructions per task, difference of two runs (the
    breakdown of swarm's per-thread cost by function)."""
    if not big or not dtasks:
        return []
    rows = [(fn, (c - small.get(fn, 0)) / dtasks) for fn, c in big.items()]
    rows = [r for r in rows if r[1] >= 0.5]
    rows.sort(key=lambda r: -r[1])
    return [{"function": fn, "instructions_per_task": round(v, 1)} for fn, v in rows[:top]]


def instr(build, out_dir, go_problem, systems=SYSTEMS):
    """Instructions per task for fib(22) at 1 worker, every system: callgrind's
    total for fib(22) minus the total for fib(12), over the difference in
    tasks, so start-up (runtime init, thread pools, the Go runtime) cancels."""
    if not shutil.which("valgrind"):
        print("valgrind not found (make deps installs it)")
        return 1
    results = []
    big, small = 22, 12
    for s in systems:
        exe = program(build, "fib", s)
        if s == "go" and go_problem:
            results.append({"system": s, "available": False, "note": go_problem})
            continue
        if not os.path.exists(exe):
            results.append({"system": s, "available": False, "note": f"{os.path.relpath(exe, ROOT)} not built"})
            continue
        extra = {"swarm": ["--no-serial"], "swarm-inline": ["--no-serial", "--inline"],
                 "pthread": ["--micro"]}.get(s, [])
        point = {}
        for n in (big, small):
            with tempfile.TemporaryDirectory() as td:
                cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={td}/cg.out",
                       exe, "-n", str(n), "-w", "1", "--reps", "1", "--warmup", "0"] + extra
                log(f"instr: {s} fib({n})")
                # Go's asynchronous preemption (SIGURG) trips callgrind's
                # signal bookkeeping now and then (an assertion in
                # vgCallgrind_post_signal, more often on a loaded machine):
                # off for the count, which it does not change.
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=1200,
                                   env=dict(os.environ, GOMAXPROCS="1",
                                            GODEBUG="asyncpreemptoff=1"))
                m = re.findall(r"Collected\s*:\s*(\d+)", r.stderr)
                rec = None
                for line in r.stdout.splitlines():
                    if line.startswith("{"):
                        rec = json.loads(line)
                if not m or not rec:
                    point = {"error": f"callgrind run failed (exit {r.returncode}): {r.stderr.strip()[-300:]}"}
                    break
                point[n] = (int(m[-1]), rec["tasks"], rec)
                if s in ("swarm", "swarm-inline"):
                    point[("functions", n)] = function_costs(f"{td}/cg.out")
        if "error" in point:
            results.append({"system": s, "available": False, "note": point["error"]})
            continue
        (ib, tb, rb), (is_, ts, _) = point[big], point[small]
        res = {"system": s, "instructions": ib, "tasks": tb,
               "instructions_per_task": (ib - is_) / (tb - ts) if tb != ts else None,
               "command": f"valgrind --tool=callgrind {os.path.relpath(exe, ROOT)} -n {big} -w 1 --reps 1 --warmup 0 {' '.join(extra)}".strip(),
               "correct": rb.get("correct")}
        if rb.get("mode"):
            res["mode"] = rb["mode"]
        if s in ("swarm", "swarm-inline"):
            res["functions_per_task"] = per_task_functions(point[("functions", big)],
                                                           point[("functions", small)], tb - ts)
        results.append(res)
    print(f"\nInstructions per task, fib({big}) on 1 worker (callgrind; (Ir(fib {big}) - Ir(fib {small})) / (tasks difference))")
    print(f"  {'system':10} {'instr/task':>11}  {'swarm faster':>12}")
    sw = next((r["instructions_per_task"] for r in results if r["system"] == "swarm" and r.get("instructions_per_task")), None)
    for r in results:
        if r.get("available") is False:
            print(f"  {r['system']:10} {'n/a':>11}  {r['note']}")
            continue
        ipt = r["instructions_per_task"]
        name = r["system"] + ("*" if r.get("mode") == "create_join_microbenchmark" else "")
        faster = "-" if r["system"] in ("swarm", "serial") or not sw else fmt_ratio(ipt / sw)
        print(f"  {name:10} {ipt:>11,.0f}  {faster:>12}")
    print("  * pthread: create+join of empty threads (--micro); callgrind counts user-space instructions only,")
    print("    not the kernel's work in clone/exit/futex, so NPTL's figure is a floor.")
    for sysname in ("swarm", "swarm-inline"):
        fns = next((r.get("functions_per_task") for r in results if r["system"] == sysname), None)
        if fns:
            print(f"\n{sysname}'s instructions per thread by function (self cost, same difference method):")
            for f in fns:
                print(f"  {f['instructions_per_task']:8.1f}  {f['function']}")
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "bench-instr.json")
    with open(path, "w") as f:
        json.dump({"date": datetime.datetime.now().isoformat(timespec="seconds"), "machine": machine(),
                   "results": results}, f, indent=1)
    print(f"wrote {os.path.relpath(path, ROOT)}")
    return 0


# ---- pingpong: thread-per-connection I/O (issue 5) ---------------------------

PP_SERVERS = ["swarm", "nptl", "swarmrun", "go", "epoll"]
PP_CONNS = [1, 16, 128, 1024, 8192]
PP_SHAPES = [("all active", lambda c: c), ("1/8 active", lambda c: max(1, c // 8)),
             ("128 active", lambda c: min(128, c))]


def pingpong_suite(build, out_dir, go_problem, reps=3, seconds=2.0, conns=None, servers=None, shapes=None,
                   client="uring"):
    """build/bench/pingpong for every server, load shape and connection
    count; the runs of one point are interleaved across servers (rep 1 of
    every server, then rep 2, ...) so machine noise spreads evenly; keeps
    the median tps. client: uring (the io_uring client with idle-priority
    helpers on the server's CPUs, issue 17) or epoll (the client of the
    figures before it, itself the bottleneck at C >= 128). Writes
    pingpong.json, prints a table, draws pingpong.png (throughput vs
    connections, one panel per load shape)."""
    exe = os.path.join(build, "bench", "pingpong")
    if not os.path.exists(exe):
        print(f"pingpong: {os.path.relpath(exe, ROOT)} not built")
        return 1
    servers = servers or PP_SERVERS
    conns = conns or PP_CONNS
    points = []
    for shape, active_of in PP_SHAPES:
        if shapes and shape not in shapes:
            continue
        for c in conns:
            a = active_of(c)
            if any(p["conns"] == c and p["active"] == a for p in points if p["shape"] == shape):
                continue
            runs = {s: [] for s in servers}
            notes = {}
            for rep in range(reps):
                for s in servers:
                    if s == "go" and go_problem:
                        notes[s] = go_problem
                        continue
                    cmd = [exe, "--server", s, "--conns", str(c), "--active", str(a), "--seconds", str(seconds),
                           "--client", client]
                    try:
                        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120 + seconds)
                    except subprocess.TimeoutExpired:
                        notes[s] = "timed out"
                        continue
                    rec = next((json.loads(l) for l in r.stdout.splitlines() if l.startswith("{")), None)
                    if rec is None:
                        notes[s] = f"exit {r.returncode}: {r.stderr.strip()[-200:]}"
                        continue
                    runs[s].append(rec)
            for s in servers:
                rs = runs[s]
                tps = sorted(r["tps"] for r in rs)
                med = tps[len(tps) // 2] if tps else None
                points.append({"shape": shape, "server": s, "conns": c, "active": a, "seconds": seconds,
                               "tps_median": med, "tps_runs": [r["tps"] for r in rs],
                               "errors": sum(r["errors"] for r in rs),
                               "server_cpus": rs[0]["server_cpus"] if rs else None,
                               "client": rs[0].get("client", "epoll") if rs else None,
                               "note": notes.get(s)})
                log(f"  pingpong {shape:10} C={c:5} A={a:5} {s:9} " +
                    (f"{med:,.0f} tps" if med is not None else notes.get(s, "failed")))
    data = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "machine": machine(),
            "reps": reps, "seconds": seconds, "points": points, "client": client,
            "command": f"{os.path.relpath(exe, ROOT)} --server S --conns C --active A --seconds {seconds:g} "
                       f"--client {client}"}
    os.makedirs(out_dir, exist_ok=True)
    jpath = os.path.join(out_dir, "pingpong.json")
    with open(jpath, "w") as f:
        json.dump(data, f, indent=1)
    print(pingpong_table(data))
    print(f"\nwrote {os.path.relpath(jpath, ROOT)}")
    ppath = os.path.join(out_dir, "pingpong.png")
    why = pingpong_plot(jpath, ppath)
    print(why if why else f"wrote {os.path.relpath(ppath, ROOT)}")
    return 0


def pingpong_client_words(data):
    used = {p.get("client") for p in data["points"] if p.get("client")}
    asked = data.get("client", "epoll")
    words = {"uring": "the io_uring client on its own CPU plus the server's idle time",
             "epoll": "the epoll client on its own CPU"}
    w = words.get(asked, asked)
    if used - {asked}:
        w += f" (ran: {', '.join(sorted(used))})"
    return w


def pingpong_table(data):
    pts = data["points"]
    servers = []
    for p in pts:
        if p["server"] not in servers:
            servers.append(p["server"])
    out = [f"pingpong: round trips per second (median of {data['reps']}, {data['seconds']:g} s each, "
           f"1-byte echo over loopback; server on {next((p['server_cpus'] for p in pts if p['server_cpus']), '?')} "
           f"CPU(s), {pingpong_client_words(data)})"]
    for shape, _ in PP_SHAPES:
        if not any(p["shape"] == shape for p in pts):
            continue
        rows = [["conns", "active"] + servers + ["swarm/nptl", "swarm/go", "swarm/epoll"]]
        for c in sorted({p["conns"] for p in pts if p["shape"] == shape}):
            by = {p["server"]: p for p in pts if p["shape"] == shape and p["conns"] == c}
            v = {s: by[s]["tps_median"] if s in by else None for s in servers}
            row = [str(c), str(next(iter(by.values()))["active"])]
            row += [f"{v[s]:,.0f}" if v[s] else "-" for s in servers]
            row += [fmt_ratio(ratio(v.get("swarm"), v.get(o))) for o in ("nptl", "go", "epoll")]
            rows.append(row)
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        out.append(f"\n{shape}")
        for r in rows:
            out.append("  " + "  ".join(c.rjust(w) for c, w in zip(r, widths)))
    errs = sum(p["errors"] for p in pts)
    out.append(f"\nerrors (unexpected reads or closes at the client): {errs}")
    for p in pts:
        if p.get("note"):
            out.append(f"n/a {p['server']} C={p['conns']}: {p['note']}")
    return "\n".join(out)


def pingpong_plot(json_path, png_path):
    plt, why = pyplot_or_rerun("--plot-pingpong", json_path, png_path)
    if plt is None:
        return why
    with open(json_path) as f:
        data = json.load(f)
    pts = data["points"]
    servers = []
    for p in pts:
        if p["server"] not in servers:
            servers.append(p["server"])
    shapes = [sh for sh, _ in PP_SHAPES if any(p["shape"] == sh for p in pts)]
    fig, axes = plt.subplots(1, len(shapes), figsize=(5 * len(shapes), 4), squeeze=False)
    for ax, shape in zip(axes[0], shapes):
        for s in servers:
            xs = [p["conns"] for p in pts if p["shape"] == shape and p["server"] == s and p["tps_median"]]
            ys = [p["tps_median"] for p in pts if p["shape"] == shape and p["server"] == s and p["tps_median"]]
            ax.plot(xs, ys, marker="o", label=s)
        ax.set_xscale("log")
        ax.set_title(shape)
        ax.set_xlabel("connections")
        ax.set_ylabel("round trips / s")
        ax.grid(alpha=0.3, which="both")
    axes[0][0].legend(fontsize=8)
    m = data.get("machine", {})
    fig.suptitle(f"pingpong, 1-byte echo over loopback — median of {data['reps']}, {m.get('cpu', '')}", fontsize=9)
    fig.tight_layout()
    fig.savefig(png_path, dpi=110)
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", choices=["full", "demo", "instr", "pingpong"], default="full")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default=None, help="results directory (full: results/, demo: BUILD/bench/)")
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    ap.add_argument("--cases", default=None, help="comma-separated workloads to keep (fib,btc,uts,nqueens)")
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--plot-only", nargs=2, metavar=("JSON", "PNG"), help=argparse.SUPPRESS)
    ap.add_argument("--plot-pingpong", nargs=2, metavar=("JSON", "PNG"), help=argparse.SUPPRESS)
    ap.add_argument("--pp-conns", default=None, help="pingpong: comma-separated connection counts")
    ap.add_argument("--pp-servers", default=None, help="pingpong: comma-separated servers")
    ap.add_argument("--pp-seconds", type=float, default=2.0, help="pingpong: seconds per run")
    ap.add_argument("--pp-client", choices=["uring", "epoll"], default="uring",
                    help="pingpong: the client: uring (default; io_uring, idle-priority helpers on the server's "
                         "CPUs) or epoll (the client of the figures before issue 17)")
    ap.add_argument("--pp-shapes", default=None,
                    help="pingpong: load shapes to run, comma-separated: all (every connection active), "
                         "eighth (1/8 active), 128 (128 active); default all three")
    a = ap.parse_args()
    if a.plot_pingpong:
        why = pingpong_plot(*a.plot_pingpong)
        if why:
            print(why, file=sys.stderr)
            return 1
        return 0
    if a.plot_only:
        why = plot(*a.plot_only)
        if why:
            print(why, file=sys.stderr)
            return 1
        return 0
    build = os.path.abspath(a.build)
    go_problem = None
    if "go" in a.systems.split(","):
        log("building the Go peers (go build) ...")
        go_problem = build_go(build)
        if go_problem:
            print(f"Go peer unavailable: {go_problem}")
    if a.mode == "instr":
        return instr(build, a.out or os.path.join(ROOT, "results"), go_problem,
                     [s for s in SYSTEMS if s in a.systems.split(",")])
    pp_args = dict(reps=a.reps or 3, seconds=a.pp_seconds, client=a.pp_client,
                   conns=[int(c) for c in a.pp_conns.split(",")] if a.pp_conns else None,
                   servers=a.pp_servers.split(",") if a.pp_servers else None,
                   shapes=[{"all": "all active", "eighth": "1/8 active", "128": "128 active"}[x]
                           for x in a.pp_shapes.split(",")] if a.pp_shapes else None)
    if a.mode == "pingpong":
        if "go" not in a.systems.split(","):
            go_problem = build_go(build)
        return pingpong_suite(build, a.out or os.path.join(ROOT, "results"), go_problem, **pp_args)

    out_dir = a.out or (os.path.join(ROOT, "results") if a.mode == "full" else os.path.join(build, "bench"))
    name = "bench" if a.mode == "full" else "demo"
    reps, warmup = REPS[a.mode]
    if a.reps:
        reps = a.reps
    n_all = len(os.sched_getaffinity(0))
    wlist = [1] if n_all == 1 else [1, n_all]
    systems = [s for s in SYSTEMS if s in a.systems.split(",")]
    keep = a.cases.split(",") if a.cases else WORKLOADS
    runs = []
    detail_recs, detail = [], None
    if "swarm" in systems and "fib" in keep:
        log("swarm fib detail ...")
        detail_recs, detail = fib_detail(build, FIB_DETAIL[a.mode], wlist, reps, warmup, TIMEOUT[a.mode])
    for label, workload, size in CASES[a.mode]:
        if workload not in keep:
            continue
        plan = []
        for s in systems:
            for w in ([1] if s == "serial" else wlist):
                plan.append((s, w, None))
            if s == "omp" and a.mode == "full" and n_all > 1:
                plan.append(("omp-passive", n_all, {"OMP_WAIT_POLICY": "passive"}))
        for s, w, env in plan:
            if s == "go" and go_problem:
                rec = {"bench": workload, "system": s, "workers_asked": w, "available": False, "note": go_problem}
            else:
                rec = run_one(build, s, workload, size, w, reps, warmup, TIMEOUT[a.mode], env)
            rec["case"] = label
            runs.append(rec)
            what = f"{ns(rec):.1f} ns/task" if ns(rec) is not None else rec.get("note", "failed")
            log(f"  {label:14} {s:12} w={w}: {what}")
    data = {"mode": a.mode, "date": datetime.datetime.now().isoformat(timespec="seconds"),
            "command": " ".join([os.path.relpath(sys.argv[0], ROOT)] + sys.argv[1:]),
            "reps": reps, "warmup": warmup, "workers_all": n_all, "machine": machine(), "runs": runs,
            "fib_detail": detail_recs}
    os.makedirs(out_dir, exist_ok=True)
    jpath = os.path.join(out_dir, f"{name}.json")
    with open(jpath, "w") as f:
        json.dump(data, f, indent=1)
    m = data["machine"]
    print(f"\nswarm benchmark ({a.mode}): median of {reps} runs after {warmup} warm-up; "
          f"{m.get('cpu', '?')}, {n_all} CPUs, {m.get('os', '')}\n")
    if detail:
        print(detail + "\n")
    print(table(runs, n_all))
    print(f"\nwrote {os.path.relpath(jpath, ROOT)}")
    ppath = os.path.join(out_dir, f"{name}.png")
    why = plot(jpath, ppath)
    print(why if why else f"wrote {os.path.relpath(ppath, ROOT)}")
    if a.mode == "full" and not a.cases:
        log("pingpong (issue 5) ...")
        print()
        pingpong_suite(build, out_dir, go_problem, **pp_args)
    wrong = [r for r in runs + detail_recs if r.get("correct") is False]
    if wrong:
        print("WRONG RESULTS: " + ", ".join(f"{r['case']}/{r['system']}/w{r['workers_asked']}" for r in wrong))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
