#!/usr/bin/env python3
"""Collects the exchange timings of haloex-halo-stress --time-exchanges (the
device stage `exchange-timing` of scripts/device/run.sh writes one log per
transport, path and size) into one JSON record with the machine and commit.

A per-pulse nvshmem log (--nvshmem-launch per-pulse) names its launch in
the line ("path direct, launch per-pulse"); rows carry "launch" (fused
when the line names none).

Each log holds up to three TIMING lines: launched from the host ("stream"),
replayed from a CUDA graph ("graph"), and the same graph with an empty kernel
in place of each exchange (the launch and event cost the other two include).

The record starts with the header of bench/bench_common.py (schema_version,
machine, commit, date, settings); --commit and --machine (words) add to it.

Usage: python3 bench/exchange_timing.py LOG... --out FILE.json [--commit SHA] [--machine TEXT] [--launcher LINE]
       python3 bench/exchange_timing.py --show FILE.json      (a Markdown table of a record)
"""
import argparse
import json
import re
import sys

from bench_common import check_record, exit_on_schema_error, machine_summary, record_header, schema_version

LINE = re.compile(
    r"TIMING \((?P<how>[^)]*)\): (?P<transport>\S+) \(path (?P<path>[^,)\s]+)(?:, launch (?P<launch>[^)\s]+))?\) (?P<atoms>\d+) atoms on (?P<ranks>\d+) "
    r"ranks, grid (?P<grid>\S+), (?P<pulses>\d+) pulse\(s\), up to (?P<halo>\d+) halo atoms \((?P<bytes>\d+) bytes "
    r"of coordinates\) per rank, (?P<count>\d+) exchanges: forward (?P<f50>[\d.]+) us \(p10 (?P<f10>[\d.]+), p90 "
    r"(?P<f90>[\d.]+)\), reverse (?P<r50>[\d.]+) us \(p10 (?P<r10>[\d.]+), p90 (?P<r90>[\d.]+)\)")


def parse(text):
    rows = []
    for m in LINE.finditer(text):
        g = m.groupdict()
        rows.append({
            "timing": g["how"], "transport": g["transport"], "path": g["path"],
            "launch": g["launch"] or "fused", "atoms": int(g["atoms"]),
            "ranks": int(g["ranks"]), "grid": g["grid"], "pulses": int(g["pulses"]),
            "halo_atoms_per_rank": int(g["halo"]), "coordinate_bytes_per_rank": int(g["bytes"]),
            "exchanges": int(g["count"]),
            "forward_us": {"median": float(g["f50"]), "p10": float(g["f10"]), "p90": float(g["f90"])},
            "reverse_us": {"median": float(g["r50"]), "p10": float(g["r10"]), "p90": float(g["r90"])},
        })
    return rows


def table(record, where="record"):
    """Markdown table of an exchange-timing record (schema 1 or 2): one row per transport, path, size and timing."""
    check_record(record, where)
    lines = [f"### exchange timing — {machine_summary(record)}, commit `{str(record.get('commit', '?'))[:12]}`, "
             f"{record.get('date', '')} (schema {schema_version(record, where)})", "",
             "| transport/path | atoms | ranks | halo atoms/rank | timing | forward us (p10-p90) | reverse us (p10-p90) |",
             "|---|---:|---:|---:|---|---:|---:|"]
    for r in record["results"]:
        f, b = r["forward_us"], r["reverse_us"]
        launch = "" if r.get("launch", "fused") == "fused" else f" {r['launch']}"
        lines.append(f"| {r['transport']}/{r['path']}{launch} | {r['atoms']} | {r['ranks']} | {r['halo_atoms_per_rank']} | "
                     f"{r['timing']} | {f['median']:.2f} ({f['p10']:.2f}-{f['p90']:.2f}) | "
                     f"{b['median']:.2f} ({b['p10']:.2f}-{b['p90']:.2f}) |")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(prog="exchange_timing.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("logs", nargs="*", help="haloex-halo-stress logs with TIMING lines")
    p.add_argument("--commit", help="commit the logs were measured at (default: this checkout's, or .commit)")
    p.add_argument("--machine", help="the machine in words (e.g. '2 x NVIDIA H200, NVLink'), kept beside the "
                                     "machine block the record header collects")
    p.add_argument("--launcher", help="the launcher line the logs were made with (e.g. 'mpirun ... -np 2')")
    p.add_argument("--build", help="the build the logs came from (its CMakeCache names the NCCL and NVSHMEM used)")
    p.add_argument("--out", help="JSON record to write")
    p.add_argument("--show", metavar="RECORD", help="print a record as a Markdown table instead")
    a = p.parse_args(argv)
    if a.show:
        with open(a.show) as f:
            record = json.load(f)
        print(exit_on_schema_error(lambda: table(record, a.show)))
        return 0
    if not a.logs or not a.out:
        p.error("LOG... and --out are needed (or --show RECORD)")
    rows = []
    for path in a.logs:
        with open(path) as f:
            found = parse(f.read())
        if not found:
            print(f"{path}: no TIMING line (failed or skipped run?)", file=sys.stderr)
        rows.extend(found)
    if not rows:
        sys.exit("no TIMING lines in any log")
    header = record_header("haloex-halo-stress --time-exchanges", {
        "note": "medians over the exchanges of the slowest rank; forward = coordinates, reverse = forces; one rank "
                "per GPU"}, a.launcher, "both: the 'timing' field of each result (stream or graph)", a.build)
    if a.commit:
        header["commit"] = a.commit
    if a.machine:
        header["machine"]["description"] = a.machine
    record = {**header, "driver": "bench/exchange_timing.py", "results": rows}
    with open(a.out, "w") as f:
        json.dump(record, f, indent=2)
    print(f"wrote {a.out}: {len(rows)} timings")
    return 0


if __name__ == "__main__":
    sys.exit(main())
