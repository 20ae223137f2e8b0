#!/usr/bin/env python3
"""One record of haloex-md beside GROMACS from one device call (scripts/device/run.sh stages gromacs and
gromacs-dd): the haloex-md runs' JSON as "runs", each labelled by what it ran ("haloex nstlist=auto",
"haloex 2x1x1 nvshmem nstlist=100"), the lists bench/gromacs_bench.py --out wrote as "gromacs_runs", under the
record header of the machine it runs on (bench_common.record_header: commit, host, GPUs, settings), so that the
record can be committed as it comes back:

    python3 bench/gromacs_record.py --haloex hx-*.json --gromacs gromacs-auto.json gromacs-tuned.json \
        --benchmark "haloex-md vs GROMACS 2026.3, one GPU" --out md-vs-gromacs.json

A missing or unreadable file is named in the record's "missing" (a cut-short call still leaves a record) and on
stderr; the exit status is 1 when nothing at all was read.
"""
import argparse
import json
import socket
import sys

from bench_common import automatic_nstlist, record_header, write_record

TOOL = "bench/gromacs_record.py"


def label_of(run):
    """What a haloex-md run ran, in the words plot_runs.py pairs with GROMACS's requested nstlist."""
    nstlist = "auto" if automatic_nstlist(run) else run.get("settings", {}).get("nstlist", "auto")
    where = f" {run.get('grid')} {run.get('transport')}" if (run.get("ranks") or 1) > 1 else ""
    return f"haloex{where} nstlist={nstlist}"


def load(path, missing):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        missing.append({"file": path, "why": str(e)})
        print(f"gromacs_record.py: {path}: {e}", file=sys.stderr)
        return None


def main(argv=None):
    p = argparse.ArgumentParser(prog="gromacs_record.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--haloex", nargs="*", default=[], help="haloex-md --json files")
    p.add_argument("--gromacs", nargs="*", default=[], help="bench/gromacs_bench.py --out files (lists of runs)")
    p.add_argument("--benchmark", required=True, help="what the record compares, in words")
    p.add_argument("--setting", action="append", default=[], metavar="KEY=VALUE",
                   help="a setting both codes ran with (repeat), e.g. thermostat=v-rescale")
    p.add_argument("--machine", default=socket.gethostname().split(".")[0])
    p.add_argument("--out", default=None, help="the record to write (default bench/results/md-vs-gromacs-<machine>-"
                                               "<date>.json)")
    args = p.parse_args(argv)
    settings = {}
    for kv in args.setting:
        key, sep, value = kv.partition("=")
        if not sep or not key:
            p.error(f"--setting {kv!r}: use KEY=VALUE")
        settings[key] = value
    missing, runs, gromacs = [], [], []
    for path in args.haloex:
        run = load(path, missing)
        if isinstance(run, dict):
            runs.append(dict(run, label=label_of(run), source_file=path))
    for path in args.gromacs:
        listed = load(path, missing)
        if isinstance(listed, list):
            gromacs += [dict(g, source_file=path) for g in listed if isinstance(g, dict)]
    record = {**record_header(TOOL, settings), "benchmark": args.benchmark, "runs": runs, "gromacs_runs": gromacs}
    if missing:
        record["missing"] = missing
    write_record(record, args.out, "md-vs-gromacs", args.machine)
    return 0 if runs or gromacs else 1


if __name__ == "__main__":
    sys.exit(main())
