#!/usr/bin/env python3
"""Kernel durations of the search steps, from Nsight Compute's CSV.

    ncu_durations.py NCU.csv --per KERNEL_NAME_PART

Reads `ncu --csv --metrics gpu__time_duration.sum` output (one row per kernel
launch) and prints each kernel's total duration per search step, the count
per step and the sum: what the search step's kernels cost by themselves,
without launch gaps and host reads (ncu runs every kernel alone, caches
flushed, so the figures are upper bounds of the kernels' own time). The
number of search steps is the count of the kernel named by --per (a kernel
that runs once per search step).
"""
import argparse
import csv
import sys


def short_name(full):
    """searchKernel<2> for 'void haloex::md::gpu::detail::(anonymous namespace)::searchKernel<2>(...)'."""
    name = full.replace("(anonymous namespace)::", "")
    depth, cut = 0, len(name)
    for i, c in enumerate(name):  # the argument list: the first '(' outside template brackets
        depth += {"<": 1, ">": -1}.get(c, 0)
        if c == "(" and depth == 0:
            cut = i
            break
    name = name[:cut].removeprefix("void ").strip()
    depth, start = 0, 0
    for i, c in enumerate(name):  # drop the namespaces: the last '::' outside template brackets
        depth += {"<": 1, ">": -1}.get(c, 0)
        if depth == 0 and name.startswith("::", i):
            start = i + 2
    return name[start:][:60]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("csv")
    parser.add_argument("--per", default="boundsKernel", help="a kernel run once per search step (default boundsKernel)")
    args = parser.parse_args()
    with open(args.csv, newline="") as f:
        lines = [line for line in f if line.startswith('"')]  # ncu's own messages start with ==PROF==
    rows = list(csv.DictReader(lines))
    if not rows:
        sys.exit(f"{args.csv}: no kernel rows")
    totals, counts = {}, {}
    for r in rows:
        if r.get("Metric Name") != "gpu__time_duration.sum":
            continue
        name = short_name(r["Kernel Name"])
        scale = {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3}.get(r.get("Metric Unit", "nsecond"), 1e-3)
        value = float(r["Metric Value"].replace(",", "")) * scale
        totals[name] = totals.get(name, 0.0) + value
        counts[name] = counts.get(name, 0) + 1
    steps = max(1, sum(c for n, c in counts.items() if args.per in n))
    print(f"{sum(counts.values())} kernel launches over {steps} search steps (count of '{args.per}')")
    print(f"  {'us/step':>8}  {'n/step':>6}  kernel")
    for name in sorted(totals, key=lambda n: -totals[n]):
        print(f"  {totals[name] / steps:8.1f}  {counts[name] / steps:6.1f}  {name}")
    print(f"  {sum(totals.values()) / steps:8.1f}  {sum(counts.values()) / steps:6.1f}  all kernels")


if __name__ == "__main__":
    main()
