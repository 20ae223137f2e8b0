#!/usr/bin/env python3
"""A roofline record of the MD non-bonded kernel, per size (issue 34, part 1).

For each size, runs haloex-bench-nonbonded --as-md (the pair-list settings
haloex-md resolves for one GPU: rlist, nstlist, the rolling prune) twice:

  1. plain, for the kernel's time in a loop and the lists' census: cluster
     pairs and atom pairs of the outer list and of the pruned inner list the
     kernel evaluates, and the atom pairs within rc among them;
  2. under Nsight Compute, one launch of the force kernel (no energies) with
     the sections SpeedOfLight, ComputeWorkloadAnalysis, Occupancy,
     LaunchStats, WarpStateStats and InstructionStats and the FP32 operation
     counts (FADD, FMUL, FFMA),

and writes bench/results/nonbonded-roofline-<machine>-<date>.json: per size
the cluster-pair efficiency of both lists, instructions and FP32 operations
per evaluated pair, issue and FP32 rate against the SMs' peaks at the clock
ncu measured, registers and occupancy, the top stall reasons, and what bounds
the kernel (the `bound` line). ncu locks the clocks to base and flushes the
caches before the launch (its defaults): its duration is longer than the
loop's, so each size carries both.

Examples:
    python3 bench roofline                               # 11 250 .. 720 000 atoms
    python3 bench roofline --sizes 22500 --build build-gpu --ncu /usr/local/cuda/bin/ncu
    python3 bench roofline --from-csv DIR                # recompute a record from kept ncu CSVs
"""
import argparse
import csv
import glob
import io
import json
import os
import shutil
import socket
import subprocess
import sys

from bench_common import REPO, find_executable, record_header, run_bench_nonbonded

SECTIONS = ["SpeedOfLight", "ComputeWorkloadAnalysis", "Occupancy", "LaunchStats", "WarpStateStats",
            "InstructionStats"]
FP32_METRICS = ["smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
                "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
                "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"]
# The force kernel without energies (nonbondedKernel<false, ...>), the one a normal step runs; ncu's demangled
# names spell the template argument (bool)0.
KERNEL_REGEX = r"regex:nonbondedKernel<(\(bool\)0|false)"
# Hopper: 4 warp schedulers issue one instruction each per cycle; 128 FP32 lanes per SM.
ISSUE_PER_SM_CYCLE = 4
FP32_LANES_PER_SM = 128
# The SM clock during the launch: ncu 2025's raw page gives the GPC's (the SMs' clock domain).
CLOCK_METRICS = ["sm__cycles_elapsed.avg.per_second", "gpc__cycles_elapsed.avg.per_second"]
# A unit's share of its peak above which it is called the bound.
BOUND_PCT = 60.0
STALLS = ["long_scoreboard", "short_scoreboard", "wait", "math_pipe_throttle", "mio_throttle", "lg_throttle",
          "barrier", "membar", "no_instruction", "not_selected", "dispatch_stall", "branch_resolving",
          "tex_throttle", "drain", "sleeping", "imc_miss", "misc"]


def find_ncu(given):
    """The ncu binary: --ncu, else PATH, else the CUDA toolkit's usual places."""
    if given:
        return given
    found = shutil.which("ncu")
    if found:
        return found
    for pattern in ("/usr/local/cuda/bin/ncu", "/usr/local/cuda/nsight-compute*/ncu", "/opt/nvidia/nsight-compute/*/ncu"):
        hits = sorted(glob.glob(pattern))
        if hits:
            return hits[-1]
    return None


def parse_ncu_csv(text):
    """ncu --csv --page raw: a header row of metric names, a row of units, one row per profiled kernel.
    Returns the first kernel's {name: (value, unit)} (values as float where they parse)."""
    rows = [r for r in csv.reader(io.StringIO(text)) if r]
    start = next((i for i, r in enumerate(rows) if "ID" in r and "Kernel Name" in r), None)
    if start is None or len(rows) < start + 3:
        raise ValueError("no kernel row in ncu's CSV (did the kernel name match?)")
    names, units, values = rows[start], rows[start + 1], rows[start + 2]
    out = {}
    for name, unit, value in zip(names, units, values):
        try:
            out[name] = (float(value.replace(",", "")), unit)
        except ValueError:
            out[name] = (value, unit)
    return out


_TIME = {"nsecond": 1e-9, "ns": 1e-9, "usecond": 1e-6, "us": 1e-6, "msecond": 1e-3, "ms": 1e-3, "second": 1.0, "s": 1.0}


def seconds(value_unit):
    value, unit = value_unit
    return value * _TIME[unit]


_HZ = {"hz": 1.0, "khz": 1e3, "mhz": 1e6, "ghz": 1e9}


def hertz(value_unit):
    """A rate in cycle/second, cycle/usecond, cycle/nsecond or (M|G)Hz (ncu's SM clock)."""
    value, unit = value_unit
    if unit.lower() in _HZ:
        return value * _HZ[unit.lower()]
    per = unit.split("/")[-1] if "/" in unit else "second"
    return value / _TIME[per]


def metric(m, name, default=None):
    v = m.get(name)
    return v[0] if v is not None and isinstance(v[0], float) else default


def evaluated_per_call(size):
    """What one force kernel evaluates: the inner list, except the one part of `prune_parts` it re-prunes,
    which it reads from the outer list (NonbondedOptions::rlistInner)."""
    outer, inner, parts = size["outer_list"], size["evaluated_list"], size.get("prune_parts", 0)
    if parts <= 0:
        return {k: inner[k] for k in ("cluster_pairs", "atom_pairs")}
    return {k: inner[k] * (parts - 1) / parts + outer[k] / parts for k in ("cluster_pairs", "atom_pairs")}


def roofline_row(size, m, sms):
    """One size's roofline figures from the bench's row and ncu's metrics of one launch."""
    t = seconds(m["gpu__time_duration.sum"])
    clock_metric = next(n for n in CLOCK_METRICS if n in m)
    clock = hertz(m[clock_metric])
    warp_inst = metric(m, "sm__inst_executed.sum") or metric(m, "smsp__inst_executed.sum")
    thread_per_warp = metric(m, "smsp__thread_inst_executed_per_inst_executed.ratio")
    fadd, fmul, ffma = (metric(m, n, 0.0) for n in FP32_METRICS)
    flops = fadd + fmul + 2.0 * ffma
    within = size["evaluated_list"]["pairs_within_rc"]
    ev = evaluated_per_call(size)
    peak_issue = ISSUE_PER_SM_CYCLE * sms * clock * t  # warp instructions the SMs could issue in that time
    peak_flops = 2.0 * FP32_LANES_PER_SM * sms * clock  # FP32 FLOP/s at that clock
    units = {
        "issue (sm__inst_executed vs 4 per SM and cycle)": 100.0 * warp_inst / peak_issue if warp_inst else None,
        "FP32 (FADD+FMUL+2 FFMA vs 256 per SM and cycle)": 100.0 * flops / t / peak_flops,
        "FMA pipe": metric(m, "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active"),
        "ALU pipe": metric(m, "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active"),
        "L1/shared": metric(m, "l1tex__throughput.avg.pct_of_peak_sustained_active"),
        "L2": metric(m, "lts__throughput.avg.pct_of_peak_sustained_elapsed"),
        "DRAM": metric(m, "dram__throughput.avg.pct_of_peak_sustained_elapsed",
                       metric(m, "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed")),
    }
    stalls = {s: metric(m, f"smsp__average_warps_issue_stalled_{s}_per_issue_active.ratio") for s in STALLS}
    stalls = {k: v for k, v in stalls.items() if v is not None}
    top_stalls = sorted(stalls.items(), key=lambda kv: -kv[1])[:3]
    row = {
        "atoms": size["atoms"],
        "rlist_nm": size.get("rlist_nm"), "nstlist": size.get("nstlist"),
        "rlist_inner_nm": size.get("rlist_inner_nm"), "prune_parts": size.get("prune_parts"),
        "outer_list": size["outer_list"], "inner_list": size["evaluated_list"],
        "pairs_within_rc": within,
        "cluster_pair_efficiency": {  # atom pairs within rc / (64 x cluster pairs): 8x8 atoms per cluster pair
            "outer": within / (64.0 * size["outer_list"]["cluster_pairs"]),
            "inner": within / (64.0 * size["evaluated_list"]["cluster_pairs"]),
            "evaluated_per_call": within / (64.0 * ev["cluster_pairs"]),
        },
        "evaluated_per_call": ev,
        "kernel_loop_us": size["local_us"],
        "ncu_duration_us": t * 1e6,
        "ncu_sm_clock_ghz": clock * 1e-9,
        "warp_instructions": warp_inst,
        "warp_instructions_per_evaluated_cluster_pair": warp_inst / ev["cluster_pairs"] if warp_inst else None,
        "thread_instructions_per_evaluated_atom_pair":
            warp_inst * thread_per_warp / ev["atom_pairs"] if warp_inst and thread_per_warp else None,
        "fp32_ops": flops,
        "fp32_ops_per_evaluated_atom_pair": flops / ev["atom_pairs"],
        "fp32_ops_per_pair_within_rc": flops / within if within else None,
        "fp32_gflops": flops / t * 1e-9,
        "pct_of_peak": units,
        "sm_throughput_pct": metric(m, "sm__throughput.avg.pct_of_peak_sustained_elapsed"),
        "memory_throughput_pct": metric(m, "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"),
        "issue_active_pct": metric(m, "smsp__issue_active.avg.pct_of_peak_sustained_active",
                                   metric(m, "sm__inst_executed.avg.pct_of_peak_sustained_elapsed")),
        "registers_per_thread": metric(m, "launch__registers_per_thread"),
        "block_size": metric(m, "launch__block_size"),
        "grid_size": metric(m, "launch__grid_size"),
        "waves_per_sm": metric(m, "launch__waves_per_multiprocessor"),
        "occupancy_theoretical_pct": metric(m, "sm__maximum_warps_per_active_cycle_pct"),
        "occupancy_achieved_pct": metric(m, "sm__warps_active.avg.pct_of_peak_sustained_active"),
        "occupancy_limit_registers_blocks": metric(m, "launch__occupancy_limit_registers"),
        "stalls_per_issue": stalls,
    }
    row["bound"] = bound(units, top_stalls, row)
    return row


def bound(units, top_stalls, row):
    """What bounds the kernel, in words: the unit nearest its peak if one is above BOUND_PCT, else latency."""
    known = {k: v for k, v in units.items() if v is not None}
    if not known:
        return "unknown: ncu gave none of the throughput metrics"
    name, pct = max(known.items(), key=lambda kv: kv[1])
    stalls = ", ".join(f"{k} {v:.2f}" for k, v in top_stalls) or "no stall metrics"
    occ = row.get("occupancy_achieved_pct")
    occ_text = f"; achieved occupancy {occ:.0f} %" if occ is not None else ""
    if pct >= BOUND_PCT:
        return f"{name} at {pct:.0f} % of peak (the highest unit){occ_text}; top stalls per issue: {stalls}"
    return (f"latency: no unit above {BOUND_PCT:.0f} % of its peak (highest: {name} {pct:.0f} %){occ_text}; "
            f"top stalls per issue: {stalls}")


def run_size(exe, ncu, n, steps, keep_dir):
    bench = run_bench_nonbonded(exe, [n], steps, ["--as-md"])
    csv_path = os.path.join(keep_dir, f"ncu-nonbonded-{n}.csv")
    # Base units (no auto-scaling), the CSV in a file of its own, apart from the program's output.
    base = [ncu, "--csv", "--page", "raw", "--print-units", "base", "--log-file", csv_path,
            "--kernel-name-base", "demangled", "--kernel-name", KERNEL_REGEX, "--launch-skip", "3", "--launch-count", "1"]
    base += sum((["--section", s] for s in SECTIONS), [])
    app = [exe, "--as-md", "--sizes", str(n), "--steps", "5"]
    proc = subprocess.run(base + ["--metrics", ",".join(FP32_METRICS)] + app, capture_output=True, text=True,
                          timeout=600)
    if proc.returncode != 0 or not _has_kernel_row(csv_path):
        # An ncu that does not know a metric by that name refuses the run: the sections alone still give most.
        print(f"  {n}: ncu with the FP32 metrics failed (rc {proc.returncode}): {proc.stderr.strip()[-300:]}; "
              "again with the sections only", flush=True)
        proc = subprocess.run(base + app, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0 or not _has_kernel_row(csv_path):
        raise RuntimeError(f"ncu failed on {n} atoms (rc {proc.returncode}): {proc.stderr.strip()[-500:]} "
                           f"{proc.stdout.strip()[-500:]}")
    with open(csv_path) as f:
        return bench, f.read()


def _has_kernel_row(path):
    try:
        with open(path) as f:
            parse_ncu_csv(f.read())
        return True
    except (OSError, ValueError):
        return False


def main(argv=None):
    p = argparse.ArgumentParser(prog="roofline.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=None, help="build directory (default: the newest build*/ with the program)")
    p.add_argument("--sizes", type=int, nargs="+", default=[11250, 22500, 90000, 720000])
    p.add_argument("--steps", type=int, default=200, help="timed kernel repetitions of the plain run")
    p.add_argument("--ncu", default=None, help="the ncu binary (default: PATH, then the CUDA toolkit)")
    p.add_argument("--keep", default=None, help="directory for ncu's CSVs and the bench's JSON (default: beside --out)")
    p.add_argument("--resume", action="store_true",
                   help="reuse the sizes --keep already holds (bench-nonbonded-N.out, the program's JSON, and "
                        "ncu-nonbonded-N.csv that parse)")
    p.add_argument("--from-csv", default=None, metavar="DIR",
                   help="recompute from a --keep directory of an earlier run (no GPU needed)")
    p.add_argument("--machine", default=socket.gethostname().split(".")[0])
    p.add_argument("--out", default=None, help="output JSON (default bench/results/nonbonded-roofline-<machine>-<date>.json)")
    args = p.parse_args(argv)

    header = record_header("bench/roofline.py", {"sizes": args.sizes, "steps": args.steps, "kernel": KERNEL_REGEX,
                                                 "ncu_sections": SECTIONS, "ncu_clocks": "base (ncu default)",
                                                 "ncu_cache": "flushed before the launch (ncu default)",
                                                 "list_settings": "haloex-md's for one GPU (--as-md)"},
                           cuda_graphs="no graphs: the kernel launched on a stream", build=args.build)
    out = args.out or os.path.join(REPO, "bench", "results",
                                   f"nonbonded-roofline-{args.machine}-{header['date'][:10]}.json")
    keep = args.from_csv or args.keep or os.path.splitext(out)[0] + "-ncu"
    os.makedirs(keep, exist_ok=True)
    rows, benches = [], []
    if args.from_csv:
        for n in args.sizes:
            with open(os.path.join(keep, f"bench-nonbonded-{n}.out")) as f:
                bench = json.load(f)
            with open(os.path.join(keep, f"ncu-nonbonded-{n}.csv")) as f:
                text = f.read()
            benches.append(bench)
            rows.append(roofline_row(bench["results"][0], parse_ncu_csv(text), bench["sms"]))
    else:
        exe = os.path.join(args.build, "bin", "haloex-bench-nonbonded") if args.build else \
            find_executable("haloex-bench-nonbonded")
        if not exe or not os.access(exe, os.X_OK):
            sys.exit(f"{exe or 'haloex-bench-nonbonded'} not found: build it (cmake --build build --target "
                     "haloex-bench-nonbonded) or pass --build")
        ncu = find_ncu(args.ncu)
        if not ncu:
            sys.exit("ncu (Nsight Compute) not found: put it on PATH or pass --ncu")
        for n in args.sizes:
            kept_json = os.path.join(keep, f"bench-nonbonded-{n}.out")  # the program's JSON, not a record
            kept_csv = os.path.join(keep, f"ncu-nonbonded-{n}.csv")
            if args.resume and os.path.exists(kept_json) and _has_kernel_row(kept_csv):
                with open(kept_json) as f:
                    bench = json.load(f)
                with open(kept_csv) as f:
                    text = f.read()
                print(f"{n:>8} atoms: reused from {keep}", flush=True)
            else:
                bench, text = run_size(exe, ncu, n, args.steps, keep)
                with open(kept_json, "w") as f:
                    json.dump(bench, f, indent=1)
            benches.append(bench)
            rows.append(roofline_row(bench["results"][0], parse_ncu_csv(text), bench["sms"]))
            r = rows[-1]
            print(f"{n:>8} atoms: {r['kernel_loop_us']:.1f} us in the loop, {r['ncu_duration_us']:.1f} under ncu; "
                  f"{r['bound']}", flush=True)
    record = {**header, "benchmark": "non-bonded kernel roofline", "device": benches[0]["device"] if benches else None,
              "sms": benches[0]["sms"] if benches else None,
              "kernels": benches[0]["kernels"] if benches else [], "ncu_csv_dir": os.path.relpath(keep, REPO),
              "sizes": rows}
    with open(out, "w") as f:
        json.dump(record, f, indent=1)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
