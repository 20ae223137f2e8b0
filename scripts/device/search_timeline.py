#!/usr/bin/env python3
"""What one search step does on the GPU, from an Nsight Systems trace.

    search_timeline.py TRACE.sqlite [--skip N]

Reads the trace that `nsys profile --trace cuda,nvtx --export sqlite` wrote of
a haloex-md run and prints, for the median "search step" NVTX range (the first
N skipped: start-up): the range's length, how much of it the GPU was busy
(union of kernels, copies and sets), each part range with its own length and
GPU time, and the step's GPU operations in order (start offset, duration,
gap before it, name), plus the host calls that waited (synchronisations and
synchronous copies). It answers "where does a search step's time go": the
kernels themselves, or launch gaps and host reads between them.
"""
import argparse
import sqlite3
import statistics
import sys

WAITING_CALLS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy_",
                 "cudaMemcpy_v", "cudaStreamWaitEvent", "cudaMemcpyAsync")


def tables(db):
    return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def strings(db):
    return dict(db.execute("SELECT id, value FROM StringIds"))


def nvtx_ranges(db, names):
    rows = db.execute("SELECT start, end, text, textId, globalTid FROM NVTX_EVENTS WHERE end IS NOT NULL")
    out = []
    for start, end, text, text_id, tid in rows:
        label = text if text is not None else names.get(text_id, "")
        out.append((start, end, label, tid))
    return out


def gpu_ops(db, names, have):
    ops = []
    if "CUPTI_ACTIVITY_KIND_KERNEL" in have:
        for start, end, short, corr in db.execute(
                "SELECT start, end, shortName, correlationId FROM CUPTI_ACTIVITY_KIND_KERNEL"):
            ops.append((start, end, names.get(short, "kernel"), corr))
    if "CUPTI_ACTIVITY_KIND_MEMCPY" in have:
        kinds = {1: "HtoD", 2: "DtoH", 8: "DtoD", 10: "PtoP"}
        for start, end, kind, size, corr in db.execute(
                "SELECT start, end, copyKind, bytes, correlationId FROM CUPTI_ACTIVITY_KIND_MEMCPY"):
            ops.append((start, end, f"memcpy {kinds.get(kind, kind)} {size} B", corr))
    if "CUPTI_ACTIVITY_KIND_MEMSET" in have:
        for start, end, size, corr in db.execute(
                "SELECT start, end, bytes, correlationId FROM CUPTI_ACTIVITY_KIND_MEMSET"):
            ops.append((start, end, f"memset {size} B", corr))
    if "CUPTI_ACTIVITY_KIND_GRAPH_TRACE" in have:
        for start, end, corr in db.execute(
                "SELECT start, end, correlationId FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE"):
            ops.append((start, end, "graph", corr))
    return sorted(ops)


def runtime_calls(db, names, have):
    if "CUPTI_ACTIVITY_KIND_RUNTIME" not in have:
        return [], {}
    calls, launch_of = [], {}
    for start, end, name_id, corr in db.execute(
            "SELECT start, end, nameId, correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME"):
        name = names.get(name_id, "?")
        calls.append((start, end, name))
        launch_of[corr] = start
    return sorted(calls), launch_of


def busy(intervals):
    total, cur_s, cur_e = 0, None, None
    for s, e in sorted(intervals):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trace")
    parser.add_argument("--skip", type=int, default=2, help="search steps skipped at the start (default 2)")
    parser.add_argument("--ops", type=int, default=80, help="GPU operations listed at most (default 80)")
    args = parser.parse_args()
    db = sqlite3.connect(args.trace)
    have = tables(db)
    names = strings(db)
    ranges = nvtx_ranges(db, names)
    steps = sorted(r for r in ranges if r[2] == "search step")[args.skip:]
    if not steps:
        sys.exit(f"{args.trace}: no 'search step' NVTX range after the first {args.skip}")
    ops = gpu_ops(db, names, have)
    calls, launch_of = runtime_calls(db, names, have)

    def ops_of(step):
        # The operations launched inside the range (by their API call), else those that started in it.
        s, e = step[0], step[1]
        return [o for o in ops if s <= launch_of.get(o[3], o[0]) <= e]

    lengths = [r[1] - r[0] for r in steps]
    median = statistics.median(lengths)
    step = min(steps, key=lambda r: abs((r[1] - r[0]) - median))
    s0, e0 = step[0], step[1]
    mine = ops_of(step)
    print(f"search steps: {len(steps)} after {args.skip} skipped; length median {median / 1e3:.1f} us "
          f"(min {min(lengths) / 1e3:.1f}, max {max(lengths) / 1e3:.1f})")
    gpu_busy = busy([(o[0], o[1]) for o in mine])
    print(f"the median one: {(e0 - s0) / 1e3:.1f} us host range; GPU busy {gpu_busy / 1e3:.1f} us over "
          f"{len(mine)} operations ({sum(1 for o in mine if not o[2].startswith(('memcpy', 'memset')))} kernels); "
          f"last GPU op ends {(max((o[1] for o in mine), default=e0) - s0) / 1e3:.1f} us after the start")
    print("parts (host range, GPU busy inside, operations):")
    parts = sorted(r for r in ranges if r[3] == step[3] and s0 <= r[0] and r[1] <= e0 and r is not step
                   and r[2] != "search step")
    for ps, pe, label, _ in parts:
        inside = [o for o in mine if ps <= launch_of.get(o[3], o[0]) <= pe]
        print(f"  {label:28s} {(pe - ps) / 1e3:8.1f} us  GPU {busy([(o[0], o[1]) for o in inside]) / 1e3:7.1f} us"
              f"  {len(inside):3d} ops")
    print("host calls that waited (>= 2 us):")
    for cs, ce, name in calls:
        if s0 <= cs <= e0 and name.startswith(WAITING_CALLS) and ce - cs >= 2000:
            print(f"  +{(cs - s0) / 1e3:8.1f} us  {(ce - cs) / 1e3:7.1f} us  {name}")
    print("GPU operations (offset from the range's start, duration, idle gap before it, launch lag):")
    prev_end = None
    for o in mine[:args.ops]:
        gap = (o[0] - prev_end) / 1e3 if prev_end is not None else 0.0
        lag = (o[0] - launch_of[o[3]]) / 1e3 if o[3] in launch_of else float("nan")
        print(f"  +{(o[0] - s0) / 1e3:8.1f}  {(o[1] - o[0]) / 1e3:7.1f}  gap {gap:6.1f}  lag {lag:6.1f}  {o[2][:70]}")
        prev_end = o[1] if prev_end is None else max(prev_end, o[1])
    if len(mine) > args.ops:
        print(f"  ... {len(mine) - args.ops} more")
    # The same sums over every search step: kernels by name.
    by_name = {}
    for st in steps:
        for o in ops_of(st):
            by_name.setdefault(o[2][:60], []).append(o[1] - o[0])
    print(f"per search step, summed over all {len(steps)} (mean us per step, count per step):")
    for name, ds in sorted(by_name.items(), key=lambda kv: -sum(kv[1]))[:25]:
        print(f"  {sum(ds) / len(steps) / 1e3:8.1f}  {len(ds) / len(steps):5.1f}  {name}")


if __name__ == "__main__":
    main()
