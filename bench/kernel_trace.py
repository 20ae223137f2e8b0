#!/usr/bin/env python3
"""Where a search step's time goes, from haloex-kernel-trace's CSV (tools/kernel_trace: kernels, copies and memsets
with device timestamps, CUDA runtime calls and NVTX ranges with host ones, one clock):

    python3 bench/kernel_trace.py trace.rank0.csv [trace.rank1.csv ...] [--json out.json]

For every "search step" range of a file, and for each of its phases (the ranges directly inside it: migrate, cell
order, plan, ..., pair search) and their parts (the ranges inside those), the wall time, the time the GPU was busy
(the union of kernels, copies and memsets within the range), the kernels and copies the range launched (by their
launch calls' correlation), and the host's time in blocking calls (stream, event and device synchronisations,
blocking copies), the host's time inside any CUDA runtime call and, per phase, the calls that took it (count and
time by name). Means over the search steps of a file, a file per rank. Wall time outside CUDA calls is host work
or collectives (MPI).

And the normal steps: for every kind of "MD step" range (with or without a CUDA graph, with or without energies),
the kernels and copies its launch calls started (a graph's nodes one by one), the span from the first one's start to
the last one's end, the time the GPU was busy with them within it and the idle rest (launch and tail latency between
kernels), each kernel's mean duration (summed where a step launches one twice), and the step's work in start
order with its stream, start and end (medians over the steps in the most common order)."""
import argparse
import bisect
import csv
import json
import statistics
import sys

GPU_KINDS = ("kernel", "memcpy", "memset")
BLOCKING = ("cudaStreamSynchronize", "cudaEventSynchronize", "cudaDeviceSynchronize", "cudaMemcpy")
# Allocations and frees: on the step's path each costs host time, and cudaFree waits for the whole device.
ALLOCATIONS = ("cudaMalloc", "cudaFree", "cudaMallocHost", "cudaFreeHost", "cudaHostAlloc", "cudaMallocAsync",
               "cudaFreeAsync")
LAUNCHES = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cudaGraphLaunch", "cudaMemcpyAsync", "cudaMemsetAsync",
            "cudaLaunchCooperativeKernel", "cudaMemcpy", "cudaMemset")


def base_name(name):
    """cudaStreamSynchronize_v3020 -> cudaStreamSynchronize."""
    return name.split("_v")[0].split("_pt")[0]


def read_trace(path):
    rows = []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            row["start"] = int(row.pop("start_ns"))
            row["end"] = int(row.pop("end_ns"))
            row["correlation"] = int(row["correlation"])
            rows.append(row)
    return rows


def union_within(intervals, lo, hi):
    """Length of the union of [s, e) intervals clipped to [lo, hi)."""
    clipped = sorted((max(s, lo), min(e, hi)) for s, e in intervals if e > lo and s < hi)
    total, cur_s, cur_e = 0, None, None
    for s, e in clipped:
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total


class Trace:
    """A trace's rows indexed once for the accounts below: the GPU work and its intervals, the GPU work by the
    correlation of the call that launched it, the runtime calls and the closed ranges sorted by start."""

    def __init__(self, rows):
        self.gpu = [r for r in rows if r["kind"] in GPU_KINDS]
        self.gpu_intervals = [(r["start"], r["end"]) for r in self.gpu]
        self.by_correlation = {}
        for r in self.gpu:
            self.by_correlation.setdefault(r["correlation"], []).append(r)
        self.runtime = sorted((r for r in rows if r["kind"] == "runtime"), key=lambda r: r["start"])
        self.runtime_starts = [r["start"] for r in self.runtime]
        self.ranges = sorted((r for r in rows if r["kind"] == "range" and r["end"] > r["start"]),
                             key=lambda r: r["start"])

    def calls_within(self, lo, hi):
        """The runtime calls that started in [lo, hi)."""
        return self.runtime[bisect.bisect_left(self.runtime_starts, lo):bisect.bisect_left(self.runtime_starts, hi)]

    def launched_by(self, calls):
        """The GPU work the launch calls among `calls` started (a graph launch: every node)."""
        return [g for call in calls if base_name(call["name"]) in LAUNCHES
                for g in self.by_correlation.get(call["correlation"], [])]


def indexed(trace_or_rows):
    return trace_or_rows if isinstance(trace_or_rows, Trace) else Trace(trace_or_rows)


def account(trace, lo, hi):
    """The figures of one range [lo, hi): wall, GPU busy, launches, blocking host time (µs)."""
    calls = trace.calls_within(lo, hi)
    work = trace.launched_by(calls)
    return {
        "wall_us": (hi - lo) / 1e3,
        "gpu_busy_us": union_within(trace.gpu_intervals, lo, hi) / 1e3,
        "kernels": sum(1 for r in work if r["kind"] == "kernel"),
        "copies_and_memsets": sum(1 for r in work if r["kind"] != "kernel"),
        "blocking_us": sum(r["end"] - r["start"] for r in calls if base_name(r["name"]) in BLOCKING) / 1e3,
        "allocations": sum(1 for r in calls if base_name(r["name"]) in ALLOCATIONS),
        "allocation_us": sum(r["end"] - r["start"] for r in calls if base_name(r["name"]) in ALLOCATIONS) / 1e3,
        # Host time inside CUDA runtime calls (their union); the wall time outside them is host work and MPI.
        "runtime_us": union_within([(r["start"], r["end"]) for r in calls], lo, hi) / 1e3,
    }


def runtime_calls(trace, lo, hi):
    """The CUDA runtime calls that started in [lo, hi), by name: [count, host µs]."""
    out = {}
    for r in trace.calls_within(lo, hi):
        entry = out.setdefault(base_name(r["name"]), [0, 0.0])
        entry[0] += 1
        entry[1] += (r["end"] - r["start"]) / 1e3
    return out


def search_steps(trace):
    """Per "search step" range: the range, its account, its phases' and their parts' (ranges nested inside, by
    name)."""
    steps = []
    for step in (r for r in trace.ranges if r["name"] == "search step"):
        inside = [r for r in trace.ranges
                  if r is not step and step["start"] <= r["start"] and r["end"] <= step["end"]]
        phases = [r for r in inside if not any(o is not r and o["start"] <= r["start"] and r["end"] <= o["end"]
                                               for o in inside)]
        entry = {"range": step, "total": account(trace, step["start"], step["end"]), "phases": {}}
        for phase in phases:
            parts = [r for r in inside if r is not phase and phase["start"] <= r["start"] and r["end"] <= phase["end"]]
            entry["phases"][phase["name"]] = {
                "account": account(trace, phase["start"], phase["end"]),
                "parts": {p["name"]: account(trace, p["start"], p["end"]) for p in parts},
                "calls": runtime_calls(trace, phase["start"], phase["end"]),
            }
        steps.append(entry)
    return steps


def mean_accounts(accounts):
    keys = accounts[0].keys() if accounts else []
    return {k: statistics.fmean(a[k] for a in accounts) for k in keys}


def summarize(trace_or_rows, skip_first=1):
    """Means over the search steps after the first `skip_first` (the first builds allocate and capture)."""
    trace = indexed(trace_or_rows)
    steps = search_steps(trace)[skip_first:]
    if not steps:
        return {"search_steps": 0}
    out = {"search_steps": len(steps), "total": mean_accounts([s["total"] for s in steps]), "phases": {}}
    for name in steps[0]["phases"]:
        present = [s["phases"][name] for s in steps if name in s["phases"]]
        parts = {}
        for part in present[0]["parts"]:
            parts[part] = mean_accounts([p["parts"][part] for p in present if part in p["parts"]])
        calls = {}  # per search step: count and host µs of each runtime call, by name
        for p in present:
            for call, (count, us) in p["calls"].items():
                c = calls.setdefault(call, [0.0, 0.0])
                c[0] += count / len(present)
                c[1] += us / len(present)
        out["phases"][name] = {"account": mean_accounts([p["account"] for p in present]), "parts": parts,
                               "calls": dict(sorted(calls.items(), key=lambda kv: -kv[1][1]))}
    kernels = {}  # kernel time by name within the same search steps' windows (kernels by start, bisected)
    by_start = sorted((r for r in trace.gpu if r["kind"] == "kernel"), key=lambda r: r["start"])
    starts = [r["start"] for r in by_start]
    for step in (s["range"] for s in steps):
        for r in by_start[bisect.bisect_left(starts, step["start"]):bisect.bisect_left(starts, step["end"])]:
            kernels[r["name"]] = kernels.get(r["name"], 0.0) + (r["end"] - r["start"]) / 1e3
    out["kernel_us_per_search_step"] = {k: v / len(steps) for k, v in sorted(kernels.items(), key=lambda kv: -kv[1])}
    return out


# Normal steps left out at the start of each kind (the first steps warm up).
NORMAL_STEPS_SKIPPED = 10


def normal_steps(trace_or_rows, skip_first=NORMAL_STEPS_SKIPPED):
    """Per kind of "MD step" range (its name), means over its steps after the first `skip_first` of that kind
    (the first steps warm up): kernels, copies, span, busy and idle time of the work the step launched (µs), and
    each kernel's mean duration by name."""
    trace = indexed(trace_or_rows)
    kinds = {}
    for step in (r for r in trace.ranges if r["name"].startswith("MD step")):
        kinds.setdefault(step["name"], []).append(step)
    out = {}
    bounds = {}  # id of a sampled step's range: its work's (first start, last end)
    for name, steps in kinds.items():
        samples = []
        for step in steps[skip_first:]:
            work = trace.launched_by(trace.calls_within(step["start"], step["end"]))
            if not work:
                continue
            first = min(g["start"] for g in work)
            last = max(g["end"] for g in work)
            bounds[id(step)] = (first, last)
            busy = union_within([(g["start"], g["end"]) for g in work], first, last)
            kernel_us = {}  # by name, summed: a step may launch one kernel twice (the local and non-local lists)
            for g in work:
                if g["kind"] == "kernel":
                    kernel_us[g["name"]] = kernel_us.get(g["name"], 0.0) + (g["end"] - g["start"]) / 1e3
            samples.append({"kernels": sum(1 for g in work if g["kind"] == "kernel"),
                            "copies_and_memsets": sum(1 for g in work if g["kind"] != "kernel"),
                            "span_us": (last - first) / 1e3, "busy_us": busy / 1e3,
                            "idle_us": (last - first - busy) / 1e3,
                            "kernel_us": kernel_us,
                            "sequence": [(g["kind"], g["name"], g["stream"], (g["start"] - first) / 1e3,
                                          (g["end"] - first) / 1e3) for g in sorted(work, key=lambda g: g["start"])]})
        if not samples:
            continue
        names = sorted({k for sample in samples for k in sample["kernel_us"]})
        kernel_us = {k: statistics.fmean(sample["kernel_us"][k] for sample in samples if k in sample["kernel_us"])
                     for k in names}
        out[name] = {"steps": len(samples),
                     **mean_accounts([{k: v for k, v in sample.items() if k not in ("kernel_us", "sequence")}
                                      for sample in samples]),
                     "kernel_us": dict(sorted(kernel_us.items(), key=lambda kv: -kv[1])),
                     "timeline": step_timeline([sample["sequence"] for sample in samples])}
    for name, gaps in gaps_between_steps(trace, bounds).items():
        if name in out:
            out[name]["gap_to_next"] = gaps
    return out


def gaps_between_steps(trace, bounds):
    """Per kind of step, how long the GPU waits between one step's last work and the next step's first (µs;
    median and 10th / 90th percentiles), over pairs of sampled steps of that kind that follow each other with
    no other step or search step between them -- the cost of starting a step (a graph launch's) that the span
    leaves out."""
    ordered = sorted((r for r in trace.ranges if r["name"].startswith("MD step") or r["name"] == "search step"),
                     key=lambda r: r["start"])
    gaps = {}
    for a, b in zip(ordered, ordered[1:]):
        if a["name"] == b["name"] and id(a) in bounds and id(b) in bounds:
            gaps.setdefault(a["name"], []).append((bounds[id(b)][0] - bounds[id(a)][1]) / 1e3)
    out = {}
    for name, values in gaps.items():
        values.sort()
        out[name] = {"pairs": len(values), "median_us": statistics.median(values),
                     "p10_us": values[len(values) // 10], "p90_us": values[(9 * len(values)) // 10]}
    return out


def step_timeline(sequences):
    """The step's work in start order, as medians over the steps whose work came in the most common order (kind,
    name and stream per position): each item's start and end (µs after the step's first work started) and stream.
    Says which kernel waits for which and where the idle time lies; steps in another order are counted apart."""
    if not sequences:
        return {"steps": 0, "other_order_steps": 0, "items": []}
    orders = {}
    for seq in sequences:
        orders.setdefault(tuple((kind, name, stream) for kind, name, stream, _, _ in seq), []).append(seq)
    order, chosen = max(orders.items(), key=lambda kv: len(kv[1]))
    items = [{"kind": kind, "name": name, "stream": stream,
              "start_us": statistics.median(seq[i][3] for seq in chosen),
              "end_us": statistics.median(seq[i][4] for seq in chosen)} for i, (kind, name, stream) in enumerate(order)]
    return {"steps": len(chosen), "other_order_steps": len(sequences) - len(chosen), "items": items}


def line(name, a, indent):
    return (f"{' ' * indent}{name:<28} wall {a['wall_us']:8.1f}  gpu busy {a['gpu_busy_us']:8.1f}  "
            f"blocking {a['blocking_us']:7.1f}  in CUDA calls {a.get('runtime_us', 0.0):7.1f}  "
            f"kernels {a['kernels']:5.1f}  copies {a['copies_and_memsets']:4.1f}  "
            f"allocs {a['allocations']:4.1f} ({a['allocation_us']:.1f} us)")


def report(path, summary, top=12, calls_top=5):
    out = [f"{path}: {summary['search_steps']} search steps (means, µs; the first left out)"]
    if summary["search_steps"] == 0:
        return "\n".join(out + ["  no \"search step\" range: was NVTX_INJECTION64_PATH set to libcupti?"])
    out.append(line("search step", summary["total"], 2))
    for name, phase in summary["phases"].items():
        out.append(line(name, phase["account"], 4))
        for part, a in phase["parts"].items():
            out.append(line(part, a, 6))
        calls = list(phase.get("calls", {}).items())[:calls_top]
        if calls:
            out.append(" " * 6 + "calls: " + ", ".join(f"{call} {n:.1f}x {us:.1f}" for call, (n, us) in calls))
    out.append("  kernels by time per search step:")
    for name, us in list(summary["kernel_us_per_search_step"].items())[:top]:
        out.append(f"    {us:8.1f}  {name[:110]}")
    return "\n".join(out)


def steps_report(steps, top=8):
    out = [f"  normal steps (means per step after the first {NORMAL_STEPS_SKIPPED} of each kind, µs): "
           "span of the work each launched, GPU busy within it, idle (launch and tail latency)"]
    if not steps:
        out.append("    no \"MD step\" range with launched work")
    for name, s in steps.items():
        out.append(f"    {name:<32} {s['steps']:5d} steps  kernels {s['kernels']:5.1f}  "
                   f"copies {s['copies_and_memsets']:4.1f}  span {s['span_us']:7.2f}  busy {s['busy_us']:7.2f}  "
                   f"idle {s['idle_us']:6.2f}")
        gap = s.get("gap_to_next")
        if gap:
            out.append(f"      gap to the next step of this kind (its first work after this one's last): median "
                       f"{gap['median_us']:.2f}, 10th / 90th percentile {gap['p10_us']:.2f} / {gap['p90_us']:.2f} "
                       f"({gap['pairs']} pairs)")
        for kernel, us in list(s["kernel_us"].items())[:top]:
            out.append(f"      {us:8.2f}  {kernel[:110]}")
        t = s.get("timeline")
        if t and t["items"]:
            out.append(f"      in start order (medians of {t['steps']} steps in this order, {t['other_order_steps']} "
                       "in another; µs after the step's first work started):")
            for item in t["items"]:
                out.append(f"      {item['start_us']:7.2f} -> {item['end_us']:7.2f}  stream {item['stream']:>3}  "
                           f"{item['name'][:100]}")
    return "\n".join(out)


def start_skew(first, second, name_part):
    """How far apart two ranks start the same kernel: for every kernel of `first` whose name contains `name_part`,
    the start of the nearest such kernel of `second` minus its own (µs; positive: the other rank started later).
    Both traces must share a clock (one host: CUPTI's timestamps are the host's). Median, 10th and 90th percentile
    and count; None when either has none."""
    def starts(trace):
        return sorted(r["start"] for r in trace.gpu if r["kind"] == "kernel" and name_part in r["name"])
    mine, theirs = starts(indexed(first)), starts(indexed(second))
    if not mine or not theirs:
        return None
    skews = []
    for s in mine:
        i = bisect.bisect_left(theirs, s)
        nearest = min((theirs[j] for j in (i - 1, i) if 0 <= j < len(theirs)), key=lambda t: abs(t - s))
        skews.append((nearest - s) / 1e3)
    skews.sort()

    def pct(q):
        return skews[min(len(skews) - 1, int(q * (len(skews) - 1) + 0.5))]
    return {"kernel": name_part, "count": len(skews), "median_us": statistics.median(skews), "p10_us": pct(0.1),
            "p90_us": pct(0.9)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("traces", nargs="+", help="haloex-kernel-trace CSV files (a file per rank)")
    parser.add_argument("--json", help="write the summaries here as JSON")
    parser.add_argument("--skip", type=int, default=1, help="search steps left out at the start (default 1)")
    parser.add_argument("--skew", metavar="NAME", action="append", default=[],
                        help="with two traces (two ranks of one host): how far apart they start the kernels whose "
                             "name contains NAME (repeatable), e.g. --skew fusedForward")
    args = parser.parse_args(argv)
    if args.skew and len(args.traces) != 2:
        parser.error("--skew compares two traces (a rank each)")
    summaries = {}
    traces = []
    for path in args.traces:
        try:
            rows = read_trace(path)
        except (OSError, KeyError, ValueError) as e:
            sys.exit(f"kernel_trace.py: {path}: not a haloex-kernel-trace CSV ({e})")
        trace = Trace(rows)
        traces.append(trace)
        summaries[path] = summarize(trace, args.skip)
        summaries[path]["normal_steps"] = normal_steps(trace)
        print(report(path, summaries[path]))
        print(steps_report(summaries[path]["normal_steps"]))
    for name in args.skew:
        skew = start_skew(traces[0], traces[1], name)
        if skew is None:
            print(f"start skew of {name}: no such kernel in one of the traces")
            continue
        summaries.setdefault("start_skew", {})[name] = skew
        print(f"start skew of {name} ({skew['count']} kernels of {args.traces[0]}): the other rank starts it "
              f"{skew['median_us']:+.2f} us later (median; 10th/90th percentile {skew['p10_us']:+.2f} / "
              f"{skew['p90_us']:+.2f})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summaries, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
