#!/usr/bin/env python3
"""An A/B of the MD kernels of two builds on one host (issue 34: each kernel change kept only if faster).

Runs two haloex-bench-nonbonded programs -- A (the parent commit's, e.g. built by the device script's stage
build-other) and B (this build's) -- alternately, --repeats times each in the order A B, B A, A B, ..., with
haloex-md's pair-list settings (--as-md), and writes

    bench/results/kernel-ab-<machine>-<date>.json

with the record header (machine, commit, settings), both programs, every run, and per size the median of each
figure for A and B, B / A, and whether B is faster by more than the repeats' spread (`verdict`). The figure that
decides is local_us (the force kernel alone); step_us and graph_step_us show the whole local step.

--variant LABEL=EXE (repeatable) adds further programs to the same rotation (A B C ..., then ... C B A), each
summarised against A and against the program before it (`summary_by_variant`): several kernel changes, stacked
one on another, measured in one allocation with their order of application as the order of the programs.

Examples:
    python3 bench kernel-ab --a /tmp/hx-other/build/bin/haloex-bench-nonbonded --b build/bin/haloex-bench-nonbonded
    python3 bench kernel-ab --a A --b B --sizes 11250 720000 --repeats 5 --steps 200
    python3 bench kernel-ab --a base --b ftz --variant shifts=ftz+shifts --repeats 3
"""
import argparse
import json
import os
import socket
import sys

from bench_common import REPO, paired_medians, record_header, run_bench_nonbonded

FIGURES = ("local_us", "local_energies_us", "step_us", "graph_step_us", "leapfrog_us", "build_ms")


def run_once(exe, sizes, steps):
    """One run of a bench program with --as-md: its JSON (printed last)."""
    return run_bench_nonbonded(exe, sizes, steps, ["--as-md"])


def order(repeats, labels=("A", "B")):
    """The alternating order of the runs: A B, B A, A B, ... (with more programs A B C, C B A, ...)."""
    labels = tuple(labels)
    return [labels if k % 2 == 0 else labels[::-1] for k in range(repeats)]


def summarize(runs, first="A", second="B"):
    """Per size and figure: first's and second's medians, second / first, and the verdict on local_us: second
    faster (or slower) when its median is below first's (above) and every one of its runs is below (above)
    first's median, else within the spread."""
    table = paired_medians(runs, first, second, FIGURES)
    for row in table:
        local = row.get("local_us")
        if local:
            if local[second] < local[first] and max(local[f"{second}_runs"]) < local[first]:
                row["verdict"] = f"{second} faster"
            elif local[second] > local[first] and min(local[f"{second}_runs"]) > local[first]:
                row["verdict"] = f"{second} slower"
            else:
                row["verdict"] = "within the spread"
    return table


def parse_variants(specs, parser):
    """--variant LABEL=EXE values as an ordered {label: exe}; labels must be new and not A or B."""
    variants = {}
    for spec in specs:
        label, sep, exe = spec.partition("=")
        if not sep or not label or not exe:
            parser.error(f"--variant {spec!r}: expected LABEL=EXECUTABLE, e.g. --variant shifts=/tmp/nb-shifts")
        if label in ("A", "B") or label in variants:
            parser.error(f"--variant {spec!r}: the label {label!r} is already taken (A, B and each variant's own)")
        variants[label] = exe
    return variants


def main(argv=None):
    p = argparse.ArgumentParser(prog="kernel_ab.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--a", required=True, help="A: the parent's haloex-bench-nonbonded")
    p.add_argument("--b", required=True, help="B: the changed build's haloex-bench-nonbonded")
    p.add_argument("--variant", action="append", default=[], metavar="LABEL=EXE",
                   help="a further program in the rotation (repeatable), summarised against A and the one before")
    p.add_argument("--sizes", type=int, nargs="+", default=[11250, 22500, 90000, 720000])
    p.add_argument("--steps", type=int, default=200, help="timed repetitions per figure (default %(default)s)")
    p.add_argument("--repeats", type=int, default=3, help="runs of each program, alternating (default %(default)s)")
    p.add_argument("--a-commit", default=None, help="A's commit, recorded (e.g. .devsrc/other-commit)")
    p.add_argument("--machine", default=socket.gethostname().split(".")[0])
    p.add_argument("--out", default=None, help="output JSON (default bench/results/kernel-ab-<machine>-<date>.json)")
    args = p.parse_args(argv)
    if args.repeats < 3 or args.steps < 1:
        p.error("--repeats must be at least 3 (a median of 3 alternating runs) and --steps at least 1")
    exes = {"A": args.a, "B": args.b, **parse_variants(args.variant, p)}
    for exe in exes.values():
        if not os.access(exe, os.X_OK):
            sys.exit(f"{exe}: not an executable haloex-bench-nonbonded (build it: cmake --build BUILD --target "
                     "haloex-bench-nonbonded)")

    labels = list(exes)
    runs = {v: [] for v in labels}
    for k, rotation in enumerate(order(args.repeats, labels)):
        for v in rotation:
            runs[v].append(run_once(exes[v], args.sizes, args.steps))
            local = ", ".join(f"{r['atoms']}: {r['local_us']:.1f}" for r in runs[v][-1]["results"])
            print(f"repeat {k + 1}, {v}: local_us {local}", flush=True)
    # Each program against A and against the one before it (B's previous is A: none of its own).
    compared = [(v, {"against_A": "A", "against_previous": labels[i - 1] if i > 1 else None})
                for i, v in enumerate(labels) if i > 0]
    by_variant = {v: {against: summarize(runs, first, v) if first else None for against, first in firsts.items()}
                  for v, firsts in compared}
    table = by_variant["B"]["against_A"]
    header = record_header("bench/kernel_ab.py", {"sizes": args.sizes, "steps": args.steps, "repeats": args.repeats,
                                                  "alternating": True, "list_settings": "--as-md"},
                           cuda_graphs="graph_step_us replays one captured step; the other figures launch on a stream")
    record = {**header, "benchmark": "MD kernels A/B", "programs": exes, "a_commit": args.a_commit,
              "summary": table, "summary_by_variant": by_variant, "runs": runs}
    out = args.out or os.path.join(REPO, "bench", "results", f"kernel-ab-{args.machine}-{header['date'][:10]}.json")
    with open(out, "w") as f:
        json.dump(record, f, indent=1)
    for v, firsts in compared:
        for against, a in firsts.items():
            for row in by_variant[v][against] or []:
                c = row["local_us"]
                print(f"{v} {against.replace('_', ' ')} ({a}): {row['atoms']:>8} atoms: local_us {a} {c[a]:.2f}, "
                      f"{v} {c[v]:.2f} ({v} / {a} {c[f'{v}_over_{a}']:.3f}): {row['verdict']}")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
