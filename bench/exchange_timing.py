#!/usr/bin/env python3
"""Collects the exchange timings of haloex-halo-stress --time-exchanges (the
device stage `exchange-timing` of scripts/device/run.sh writes one log per
transport, path and size) into one JSON record with the machine and commit.

Each log holds up to three TIMING lines: launched from the host ("stream"),
replayed from a CUDA graph ("graph"), and the same graph with an empty kernel
in place of each exchange (the launch and event cost the other two include).

Usage: python3 bench/exchange_timing.py LOG... --commit SHA --machine TEXT --out FILE.json
"""
import argparse
import datetime
import json
import re
import sys

LINE = re.compile(
    r"TIMING \((?P<how>[^)]*)\): (?P<transport>\S+) \(path (?P<path>\S+)\) (?P<atoms>\d+) atoms on (?P<ranks>\d+) "
    r"ranks, grid (?P<grid>\S+), (?P<pulses>\d+) pulse\(s\), up to (?P<halo>\d+) halo atoms \((?P<bytes>\d+) bytes "
    r"of coordinates\) per rank, (?P<count>\d+) exchanges: forward (?P<f50>[\d.]+) us \(p10 (?P<f10>[\d.]+), p90 "
    r"(?P<f90>[\d.]+)\), reverse (?P<r50>[\d.]+) us \(p10 (?P<r10>[\d.]+), p90 (?P<r90>[\d.]+)\)")


def parse(text):
    rows = []
    for m in LINE.finditer(text):
        g = m.groupdict()
        rows.append({
            "timing": g["how"], "transport": g["transport"], "path": g["path"], "atoms": int(g["atoms"]),
            "ranks": int(g["ranks"]), "grid": g["grid"], "pulses": int(g["pulses"]),
            "halo_atoms_per_rank": int(g["halo"]), "coordinate_bytes_per_rank": int(g["bytes"]),
            "exchanges": int(g["count"]),
            "forward_us": {"median": float(g["f50"]), "p10": float(g["f10"]), "p90": float(g["f90"])},
            "reverse_us": {"median": float(g["r50"]), "p10": float(g["r10"]), "p90": float(g["r90"])},
        })
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("logs", nargs="+", help="haloex-halo-stress logs with TIMING lines")
    p.add_argument("--commit", required=True, help="commit the logs were measured at")
    p.add_argument("--machine", required=True, help="machine, in words (e.g. '2 x NVIDIA H200, NVLink')")
    p.add_argument("--out", required=True, help="JSON record to write")
    a = p.parse_args()
    rows = []
    for path in a.logs:
        with open(path) as f:
            found = parse(f.read())
        if not found:
            print(f"{path}: no TIMING line (failed or skipped run?)", file=sys.stderr)
        rows.extend(found)
    if not rows:
        sys.exit("no TIMING lines in any log")
    record = {"tool": "haloex-halo-stress --time-exchanges", "driver": "bench/exchange_timing.py",
              "commit": a.commit, "machine": a.machine,
              "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
              "settings": {"note": "medians over the exchanges of the slowest rank; forward = coordinates, "
                                   "reverse = forces; one rank per GPU"},
              "results": rows}
    with open(a.out, "w") as f:
        json.dump(record, f, indent=2)
    print(f"wrote {a.out}: {len(rows)} timings")


if __name__ == "__main__":
    main()
