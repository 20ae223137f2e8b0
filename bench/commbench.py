#!/usr/bin/env python3
"""Communication micro-benchmarks: runs haloex-commbench once (every
measurement, GPU-initiated and CPU-orchestrated, between ranks 0 and 1) and
writes

    bench/results/commbench-<machine>-<date>.json   (and .csv, and .md tables)

then checks the latency goals: put-with-signal half round trip <= 2.5 us and
direct-store flag <= 1.8 us (block-level, 1 KiB, median).

Examples:
    python3 bench/commbench.py                 # 2 ranks, one per GPU (several minutes)
    python3 bench/commbench.py --quick         # well under a minute
    python3 bench/commbench.py --shared-gpus   # both ranks on one GPU (MPS): no NVLink numbers

The record is haloex-commbench's JSON with the header of bench/bench_common.py
added (schema_version; machine, settings: HALOEX_PDL, MPS, binding, the
launcher line); the two ranks run under the one launcher line.
"""
import argparse
import datetime
import json
import os
import shlex
import socket
import subprocess
import sys
import time

from bench_common import (MPIRUN, MPIRUN_ARGS, REPO, find_executable, launcher_environment, launcher_prefix,
                          record_header)

GOALS = [  # (benchmark, variant, bytes, limit in us, text): every row is judged and printed
    ("put_signal_pingpong", "thread", 8, 2.5, "put-with-signal half round trip <= 2.5 us (thread, 8 B)"),
    ("put_signal_pingpong", "block", 1024, 2.5, "put-with-signal half round trip <= 2.5 us (block, 1 KiB)"),
    ("direct_store_flag", "thread", 8, 1.8, "direct stores + system release of a flag <= 1.8 us (thread, 8 B)"),
    ("direct_store_flag", "warp", 8, 1.8, "direct stores + system release of a flag <= 1.8 us (warp, 8 B)"),
    ("direct_store_flag", "block", 8, 1.8, "direct stores + system release of a flag <= 1.8 us (block, 8 B)"),
    ("direct_store_flag", "block", 1024, 1.8, "direct stores + system release of a flag <= 1.8 us (block, 1 KiB)"),
    # haloex-commbench-view: the device halo view's hand-off over NCCL's device API (issue 18's goal)
    ("view_flag_pingpong", "nccl-device thread", 8, 1.8, "nccl-device flag ping-pong <= 1.8 us (thread, 8 B)"),
    ("view_flag_pingpong", "nccl-device block", 8, 1.8, "nccl-device flag ping-pong <= 1.8 us (block, 8 B)"),
]


def size_text(b):
    if b >= 1 << 20 and b % (1 << 20) == 0:
        return "%d MiB" % (b >> 20)
    if b >= 1024 and b % 1024 == 0:
        return "%d KiB" % (b >> 10)
    return "%d B" % b


def markdown(results):
    """One table per benchmark: size rows, median [min, max]."""
    lines = []
    groups = {}
    for r in results:
        groups.setdefault((r["driver"], r["benchmark"], r["unit"], r["metric"]), []).append(r)
    for (driver, bench, unit, metric), rows in groups.items():
        lines.append("### %s (%s-%s; %s, %s)\n" % (bench, driver, "initiated" if driver == "gpu" else "orchestrated",
                                                   metric, unit))
        lines.append("| variant | size | median | min | max | p25 | p75 |")
        lines.append("|---|---:|---:|---:|---:|---:|---:|")
        for r in rows:
            if r["skipped"]:
                lines.append("| %s | %s | skipped: %s | | | | |" % (r["variant"], size_text(r["bytes"]), r["skipped"]))
            else:
                lines.append("| %s | %s | %.4g | %.4g | %.4g | %.4g | %.4g |" % (
                    r["variant"], size_text(r["bytes"]), r["median"], r["min"], r["max"], r["p25"], r["p75"]))
        lines.append("")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(prog="commbench.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--exe", default=None, help="haloex-commbench (default: newest build*/bin/haloex-commbench)")
    p.add_argument("--mpirun", default=MPIRUN, help="launcher command (default %(default)s)")
    p.add_argument("--mpirun-args", default=MPIRUN_ARGS,
                   help="launcher arguments before -np (default '%(default)s': NVSHMEM's proxy thread needs a core "
                        "of its own)")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--reps", type=int, default=0)
    p.add_argument("--iters", type=int, default=0)
    p.add_argument("--shared-gpus", action="store_true", help="pass --allow-shared-gpus")
    p.add_argument("--machine", default=socket.gethostname().split(".")[0])
    p.add_argument("--out", default=None, help="output JSON (default bench/results/commbench-<machine>-<date>.json)")
    args = p.parse_args(argv)

    exe = args.exe or find_executable("haloex-commbench")
    if not exe or not os.access(exe, os.X_OK):
        sys.exit("haloex-commbench not found: build it (cmake --build build --target haloex-commbench) or pass --exe")
    date = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = args.out or os.path.join(REPO, "bench", "results", "commbench-%s-%s.json" % (args.machine, date))
    stem = out[:-5] if out.endswith(".json") else out
    os.makedirs(os.path.dirname(out), exist_ok=True)

    prefix = launcher_prefix(2, args.mpirun, args.mpirun_args)
    cmd = prefix + [exe, "--json", out, "--csv", stem + ".csv"]
    if args.quick:
        cmd.append("--quick")
    if args.reps:
        cmd += ["--reps", str(args.reps)]
    if args.iters:
        cmd += ["--iters", str(args.iters)]
    if args.shared_gpus:
        cmd.append("--allow-shared-gpus")
    print("$ " + " ".join(shlex.quote(c) for c in cmd), flush=True)
    t0 = time.time()
    proc = subprocess.run(cmd, env=launcher_environment())
    if proc.returncode == 77:
        print("haloex-commbench skipped (see its message above); nothing written")
        sys.exit(77)
    if proc.returncode != 0 or not os.path.exists(out):
        sys.exit("haloex-commbench failed (exit code %d)" % proc.returncode)
    with open(out) as f:
        doc = json.load(f)
    # The device halo view's ping-pong (ipc, nccl-device) from its own executable, into the same record.
    view_used = None
    view_exe = os.path.join(os.path.dirname(os.path.abspath(exe)), "haloex-commbench-view")
    if os.access(view_exe, os.X_OK):
        view_cmd = prefix + [view_exe, "--json", stem + "-view.json"] + [c for c in cmd[len(prefix) + 1:]
                                                                           if c in ("--quick", "--allow-shared-gpus")]
        for flag in ("--reps", "--iters"):
            if flag in cmd:
                view_cmd += [flag, cmd[cmd.index(flag) + 1]]
        print("$ " + " ".join(shlex.quote(c) for c in view_cmd), flush=True)
        view = subprocess.run(view_cmd, env=launcher_environment())
        if view.returncode == 0 and os.path.exists(stem + "-view.json"):
            with open(stem + "-view.json") as f:
                doc["results"] += json.load(f)["results"]
            os.remove(stem + "-view.json")
            view_used = view_cmd
        else:
            print("haloex-commbench-view failed (exit code %d): its rows are missing" % view.returncode)
    else:
        print("haloex-commbench-view not found beside %s: the device halo view's ping-pong is not measured" % exe)
    # The header around haloex-commbench's record: its own fields (commit of the binary, date, machine as the ranks
    # saw it, settings) are kept; the header adds the rest.
    header = record_header("bench/commbench.py", {}, prefix, "not used",
                           os.path.dirname(os.path.dirname(os.path.abspath(exe))))
    doc["schema_version"] = header["schema_version"]
    doc["schema_note"] = header["schema_note"]
    doc["machine"] = {**header["machine"], **doc.get("machine", {})}
    doc["settings"] = {**header["settings"], **doc.get("settings", {})}
    for key in ("commit", "date"):
        doc.setdefault(key, header[key])
    doc["driver"] = {"tool": "bench/commbench.py", "machine_name": args.machine, "command": cmd,
                     "view_command": view_used,
                     "wall_seconds": round(time.time() - t0, 1), "checkout_commit": header["commit"]}
    with open(out, "w") as f:
        json.dump(doc, f, indent=2)
    with open(stem + ".md", "w") as f:
        f.write("# haloex-commbench on %s (%s, commit %s)\n\n" % (args.machine, doc["date"], doc["commit"]))
        if doc["machine"].get("shared_gpus"):
            f.write("Both ranks ran on ONE GPU: these numbers say nothing about NVLink.\n\n")
        f.write(markdown(doc["results"]))

    print("\ngoals (median of the samples):")
    for bench, variant, size, limit, text in GOALS:
        row = next((r for r in doc["results"] if r["benchmark"] == bench and r["variant"] == variant
                    and r["bytes"] == size), None)
        if row is None or row["skipped"]:
            print("  n/a    %s (%s)" % (text, row["skipped"] if row else "not measured"))
        else:
            print("  %-6s %s: %.2f us" % ("met" if row["median"] <= limit else "MISSED", text, row["median"]))
    if doc["machine"].get("shared_gpus"):
        print("  (both ranks shared one GPU: the goals are about NVLink and cannot be judged from this run)")
    print("\nwrote %s, %s.csv, %s.md (%.0f s)" % (out, stem, stem, time.time() - t0))


if __name__ == "__main__":
    main()
