#!/usr/bin/env python3
"""Jacobi strong-scaling benchmark: drives haloex-jacobi over every transport
and a range of per-rank sizes in one go, and writes one JSON record

    bench/results/jacobi-<machine>-<date>.json

with the machine, the commit, the settings and every run's results (each
size is one mpirun; every run inside it is checked against the one-GPU
reference, which also gives the speedup and efficiency).

Examples (2 x H200, one rank per GPU):
    python3 bench/jacobi_bench.py --np 2
    python3 bench/jacobi_bench.py --np 2 --quick          # about a minute
    python3 bench/jacobi_bench.py --np 4 --decomp 2d --shared-gpus   # 4 PEs on 2 GPUs (start MPS)

Then: python3 bench/plot_jacobi.py bench/results/jacobi-<...>.json

The record starts with the header of bench/bench_common.py (schema_version,
machine, commit, date, the settings that change the timing: HALOEX_PDL, MPS,
binding, the launcher line); the ranks run under the one launcher line
(--mpirun, --mpirun-args).
"""
import argparse
import datetime
import json
import os
import shlex
import socket
import subprocess
import sys
import tempfile
import time

from bench_common import (MPIRUN, MPIRUN_ARGS, REPO, find_executable, launcher_environment, launcher_prefix,
                          record_header)

CPU_ORCHESTRATED = ("staged", "ipc", "nccl")


def iterations_for(n, quick):
    """About 0.05-0.3 s of iterations per run: many at small sizes, fewer at large ones."""
    cells = n * n
    iters = int(round(3e8 / cells))
    iters = max(100, min(5000, iters))
    return max(50, iters // 4) if quick else iters


def run_size(args, exe, n, niter):
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tmp:
        out_json = tmp.name
    cmd = launcher_prefix(args.np, args.mpirun, args.mpirun_args) + [
        exe, "--per-rank", "--nx", str(n), "--ny", str(n), "--niter", str(niter),
        "--warmup", str(args.warmup), "--repeat", str(args.repeat), "--decomp", args.decomp,
        "--boundary", args.boundary, "--transport", args.transports, "--json", out_json]
    if args.nvshmem_path:
        cmd += ["--nvshmem-path", args.nvshmem_path]
    if args.shared_gpus:
        cmd += ["--allow-shared-gpus"]
    print("$ " + " ".join(shlex.quote(c) for c in cmd), flush=True)
    t0 = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=launcher_environment())
    seconds = time.time() - t0
    sys.stdout.write(proc.stdout)
    sys.stderr.write(proc.stderr)
    record = {"per_rank": n, "niter": niter, "exit_code": proc.returncode, "wall_seconds": round(seconds, 2),
              "command": cmd}
    try:
        with open(out_json) as f:
            record["run"] = json.load(f)
    except (OSError, json.JSONDecodeError):
        record["run"] = None
        record["stderr_tail"] = proc.stderr[-4000:]
    finally:
        if os.path.exists(out_json):
            os.unlink(out_json)
    return record


def summarize(records):
    """Per size: each transport's us/iteration, and nvshmem against the best CPU-orchestrated variant."""
    rows = []
    for rec in records:
        run = rec.get("run")
        if not run:
            rows.append((rec["per_rank"], None, {}, "no result (exit code %d)" % rec["exit_code"]))
            continue
        times = {r["transport"]: r for r in run["results"] if r["status"] == "passed"}
        failed = [r["transport"] for r in run["results"] if r["status"] == "failed"]
        best = min((times[t]["us_per_iter"], t) for t in CPU_ORCHESTRATED if t in times) if any(
            t in times for t in CPU_ORCHESTRATED) else None
        note = ("FAILED: " + ",".join(failed)) if failed else ""
        rows.append((rec["per_rank"], best, times, note))
    return rows


def print_summary(rows, transports):
    print("\nper-rank size | " + " | ".join("%10s" % t for t in transports) +
          " | best CPU-orch. | nvshmem speedup over it")
    goals = []
    for n, best, times, note in rows:
        cells = ["%10s" % ("%.2f" % times[t]["us_per_iter"] if t in times else "-") for t in transports]
        ratio = ""
        if best and "nvshmem" in times:
            r = best[0] / times["nvshmem"]["us_per_iter"]
            ratio = "%.2fx (vs %s)" % (r, best[1])
            if n <= 1024:
                goals.append((n, "nvshmem >= 1.3x best CPU-orchestrated at <= 1024^2 per GPU", r >= 1.3, r))
            if n >= 8192:
                goals.append((n, "nvshmem within 3% of best CPU-orchestrated at large sizes", r >= 0.97, r))
        if "nccl-device" in times and "nvshmem" in times:
            r = times["nvshmem"]["us_per_iter"] / times["nccl-device"]["us_per_iter"]
            goals.append((n, "nccl-device within 3% of nvshmem (or better)", r >= 0.97, r))
        print("%6d^2       | " % n + " | ".join(cells) + " | %14s | %s %s" %
              ("%.2f (%s)" % best if best else "-", ratio, note))
    if goals:
        print("\ngoals (us/iteration medians; ratio = best CPU-orchestrated / nvshmem, or nvshmem / nccl-device):")
        for n, what, ok, r in goals:
            print("  %-5s %6d^2: %s (%.2fx)" % ("met" if ok else "MISSED", n, what, r))


def main(argv=None):
    p = argparse.ArgumentParser(prog="jacobi_bench.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--exe", default=None, help="haloex-jacobi (default: newest build*/bin/haloex-jacobi)")
    p.add_argument("--np", type=int, default=2, help="ranks (default 2)")
    p.add_argument("--mpirun", default=MPIRUN, help="launcher command (default %(default)s)")
    p.add_argument("--mpirun-args", default=MPIRUN_ARGS,
                   help="launcher arguments before -np (default '%(default)s': NVSHMEM's proxy thread needs a core "
                        "of its own)")
    p.add_argument("--sizes", default="256,512,1024,2048,4096,8192,16384",
                   help="per-rank grid sizes n (n x n cells per rank)")
    p.add_argument("--transports", default="all", help="haloex-jacobi --transport (default: all GPU transports)")
    p.add_argument("--decomp", default="row", help="row, 2d or PXxPY")
    p.add_argument("--boundary", default="periodic")
    p.add_argument("--nvshmem-path", default=None, help="auto (default) or direct (the same: the fused kernel stores into the neighbours' fields)")
    p.add_argument("--repeat", type=int, default=3, help="timed runs per transport and size (median reported)")
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--shared-gpus", action="store_true", help="pass --allow-shared-gpus (several ranks per GPU)")
    p.add_argument("--quick", action="store_true", help="sizes 256,1024,4096,16384, one timed run, fewer iterations")
    p.add_argument("--machine", default=socket.gethostname().split(".")[0], help="name in the output file")
    p.add_argument("--out", default=None, help="output JSON (default bench/results/jacobi-<machine>-<date>.json)")
    args = p.parse_args(argv)

    exe = args.exe or find_executable("haloex-jacobi")
    if not exe or not os.access(exe, os.X_OK):
        sys.exit("haloex-jacobi not found: build it (cmake --build build --target haloex-jacobi) or pass --exe")
    if args.quick:
        args.sizes = "256,1024,4096,16384"
        args.repeat = 1
        args.warmup = 5
    sizes = [int(s) for s in args.sizes.split(",") if s]
    date = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = args.out or os.path.join(REPO, "bench", "results", "jacobi-%s-%s.json" % (args.machine, date))

    records = []
    t0 = time.time()
    for n in sizes:
        records.append(run_size(args, exe, n, iterations_for(n, args.quick)))
    first = next((r["run"] for r in records if r.get("run")), None)
    header = record_header("bench/jacobi_bench.py", {k: v for k, v in vars(args).items() if k not in ("out",)},
                           launcher_prefix(args.np, args.mpirun, args.mpirun_args),
                           "not used (haloex-jacobi launches each iteration's kernels)",
                           os.path.dirname(os.path.dirname(os.path.abspath(exe))))
    if first:
        # haloex-jacobi's own view (GPUs of each rank, CUDA versions) beside the header's; its commit is the binary's.
        header["machine"].update(first["machine"])
        header["commit"] = first["commit"]
    doc = {
        **header,
        "machine_name": args.machine,
        "executable": exe,
        "wall_seconds": round(time.time() - t0, 1),
        "sizes": records,
    }
    doc["machine"]["name"] = args.machine
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump(doc, f, indent=2)
    transports = []
    for rec in records:
        for r in (rec.get("run") or {}).get("results", []):
            if r["transport"] not in transports:
                transports.append(r["transport"])
    print_summary(summarize(records), transports)
    print("\nwrote %s (%.0f s)" % (out, time.time() - t0))
    bad = [r for r in records if r["exit_code"] not in (0, 77)]
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
