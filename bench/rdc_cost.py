#!/usr/bin/env python3
"""What relocatable device code (-rdc) costs the MD kernels, measured in one build.

Runs haloex-bench-nonbonded (kernels compiled whole-program) and
haloex-bench-nonbonded-rdc (the same sources compiled with -rdc and
device-linked, as NVSHMEM's device library requires of the code that calls
it) alternately, --repeats times each, and writes

    bench/results/rdc-cost-<machine>-<date>.json

with the record header (machine, commit, settings), every run, and per size
the median of each figure for both builds and their ratio (rdc / whole). The
figure that matters is local_us: the non-bonded kernel of one rank (GROMACS
measured 15-20 % on its own non-bonded kernels before it confined -rdc).

Examples:
    python3 bench/rdc_cost.py                       # 22 500 .. 720 000 atoms, 3 repeats
    python3 bench/rdc_cost.py --sizes 22500 --repeats 1 --steps 50
"""
import argparse
import json
import os
import socket
import sys

from bench_common import REPO, find_executable, paired_medians, record_header, run_bench_nonbonded

FIGURES = ("build_ms", "local_us", "local_energies_us", "leapfrog_us", "step_us", "graph_step_us")


def run_once(exe, sizes, steps):
    """One run of a bench binary: its JSON (the last '{' ... '}' block it prints)."""
    return run_bench_nonbonded(exe, sizes, steps)


def summarize(runs):
    """Per size: the median of each figure over the repeats, for both builds, and rdc / whole."""
    return paired_medians(runs, "whole", "rdc", FIGURES)


def main(argv=None):
    p = argparse.ArgumentParser(prog="rdc_cost.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=None, help="build directory (default: the newest build*/ with both programs)")
    p.add_argument("--sizes", type=int, nargs="+", default=[22500, 90000, 720000])
    p.add_argument("--steps", type=int, default=200, help="timed repetitions per figure (default %(default)s)")
    p.add_argument("--repeats", type=int, default=3, help="runs of each binary, alternating (default %(default)s)")
    p.add_argument("--machine", default=socket.gethostname().split(".")[0])
    p.add_argument("--out", default=None, help="output JSON (default bench/results/rdc-cost-<machine>-<date>.json)")
    args = p.parse_args(argv)
    if args.repeats < 1 or args.steps < 1:
        p.error("--repeats and --steps must be at least 1")

    if args.build:
        whole = os.path.join(args.build, "bin", "haloex-bench-nonbonded")
        rdc = os.path.join(args.build, "bin", "haloex-bench-nonbonded-rdc")
    else:
        whole, rdc = find_executable("haloex-bench-nonbonded"), find_executable("haloex-bench-nonbonded-rdc")
    for exe in (whole, rdc):
        if not exe or not os.access(exe, os.X_OK):
            sys.exit(f"{exe or 'haloex-bench-nonbonded(-rdc)'} not found: build both (cmake --build build --target "
                     "haloex-bench-nonbonded haloex-bench-nonbonded-rdc) or pass --build")

    runs = {"whole": [], "rdc": []}
    for k in range(args.repeats):
        for build, exe in (("whole", whole), ("rdc", rdc)):
            runs[build].append(run_once(exe, args.sizes, args.steps))
            local = ", ".join(f"{r['atoms']}: {r['local_us']:.1f}" for r in runs[build][-1]["results"])
            print(f"repeat {k + 1}, {build:5}: local_us {local}", flush=True)
    table = summarize(runs)
    header = record_header("bench/rdc_cost.py",
                           {"sizes": args.sizes, "steps": args.steps, "repeats": args.repeats, "alternating": True},
                           cuda_graphs="graph_step_us replays one captured step; the other figures launch on a stream",
                           build=args.build)
    record = {**header, "benchmark": "rdc cost of the MD kernels",
              "programs": {"whole": whole, "rdc": rdc}, "summary": table, "runs": runs}
    out = args.out or os.path.join(REPO, "bench", "results",
                                   f"rdc-cost-{args.machine}-{header['date'][:10]}.json")
    with open(out, "w") as f:
        json.dump(record, f, indent=1)
    print(f"{'atoms':>8} " + " ".join(f"{f + ' whole/rdc':>26}" for f in FIGURES[1:3]))
    for row in table:
        cells = []
        for figure in FIGURES[1:3]:
            c = row[figure]
            cells.append(f"{c['whole']:9.1f} {c['rdc']:8.1f} ({c['rdc_over_whole']:.3f})")
        print(f"{row['atoms']:>8} " + " ".join(f"{c:>26}" for c in cells))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
