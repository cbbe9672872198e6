#!/usr/bin/env python3
"""cio_summary.py — the table of `make bench-cio` (docs/cio.md).

Reads the JSON lines of build/bench/cio and build/bench/cio-mpich (one or
more files: several sweeps are pooled). Each run prints the reference MPI-IO
line and then swarm's line, measured alternately in the same run; a row here
is one (op, pattern, ranks, aggregators, cb_buffer_size, cache) point
(`aggs` is "?" for lines from before the bench printed it), with the median
MiB/s over the runs of each reference and of swarm's runs against it, and
`x`, the median over runs of swarm / reference within a run (paired, so a
load change between runs moves both sides of a ratio alike). Runs made with
--ceiling also print the plain-stream line ("pread"/"pwrite": each rank
moves its contiguous 1/P of the file, no view, no exchange); its median is
the `plain` column, what the disk and page cache gave in those runs. Usage: cio_summary.py FILE... [--cold-only]
[--min-cycles N] (N counts ROMIO's cycles: domain / cb_buffer_size).
"""
import json
import statistics
import sys


def main(argv):
    files = [a for a in argv if not a.startswith("--")]
    cold_only = "--cold-only" in argv
    min_cycles = 0
    for a in argv:
        if a.startswith("--min-cycles="):
            min_cycles = int(a.split("=", 1)[1])
    pts = {}  # key -> ref impl -> ([ref MiB/s], [swarm MiB/s])
    plain = {}  # (op, pattern, ranks, cb, cache) -> [MiB/s]
    ident = True
    for f in files:
        prev = None
        for line in open(f):
            line = line.strip()
            if not line.startswith("{"):
                continue
            d = json.loads(line)
            if d["impl"] in ("pread", "pwrite"):
                plain.setdefault((d["op"], d["pattern"], d["ranks"],
                                  d["cb_buffer_size"],
                                  "cold" if d["cold"] else "warm"),
                                 []).append(d["mib_per_s"])
                continue
            if "vs" not in d:
                prev = d
                continue
            if prev is None:
                continue
            ident = ident and d["identical"]
            key = (d["op"], d["pattern"], d["ranks"], d["cb_buffer_size"],
                   "cold" if d["cold"] else "warm", prev["cycles"],
                   str(d.get("aggregators", "?")))
            r = pts.setdefault(key, {}).setdefault(prev["impl"], ([], []))
            r[0].append(prev["mib_per_s"])
            r[1].append(d["mib_per_s"])
            prev = None
    refs = ["romio", "ompio", "mpich-romio"]
    hdr = "| op | pattern | P | aggs | cb MiB | cache | ROMIO cycles |"
    if plain:
        hdr += " plain |"
    for ref in refs:
        hdr += f" {ref} | swarm | x |"
    print(hdr)
    print("|" + "---|" * (7 + (1 if plain else 0) + 3 * len(refs)))
    for key in sorted(pts):
        op, pat, p, cb, cache, cyc, aggs = key
        if cold_only and cache != "cold":
            continue
        if cyc < min_cycles:
            continue
        row = f"| {op} | {pat} | {p} | {aggs} | {cb >> 20} | {cache} | {cyc} |"
        if plain:
            v = plain.get((op, pat, p, cb, cache))
            row += f" {statistics.median(v):.0f} |" if v else " - |"
        for ref in refs:
            if ref not in pts[key]:
                row += " - | - | - |"
                continue
            a, b = pts[key][ref]
            ma, mb = statistics.median(a), statistics.median(b)
            x = statistics.median([y / z for y, z in zip(b, a)])
            row += f" {ma:.0f} | {mb:.0f} | {x:.2f} |"
        print(row)
    runs = max(len(v[0]) for d in pts.values() for v in d.values()) if pts else 0
    print(f"\nruns per point: up to {runs}; "
          f"swarm byte-identical to MPI-IO in every run: {ident}")
    return 0 if ident else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
