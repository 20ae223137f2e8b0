#!/usr/bin/env python3
"""The force kernel at each entry length (issue 34): haloex-bench-nonbonded --as-md --max-j J for every J, the
lengths in the same order each round, and one record of every run with the median per size and length:

    bench/results/entry-length-<machine>-<date>.json

--max-j 0 is the automatic choice of the build (chooseEntryLength in proxies/md/cuda/nonbonded.cpp), so the
record says both what the rule picks and what each length measures.

Examples:
    python3 bench/entry_length.py --bench build/bin/haloex-bench-nonbonded
    python3 bench/entry_length.py --bench B --sizes 11250 22500 --lengths 0 16 32 --repeats 3 --out r.json
"""
import argparse
import socket
import statistics
import sys

from bench_common import record_header, run_bench_nonbonded, write_record

TOOL = "bench/entry_length.py"


def summarise(runs):
    """Per (atoms, requested length): the length the build used, its entries, the median local kernel time and
    every round's, in (atoms, length) order."""
    cells = {}
    for run in runs:
        for r in run["results"]:
            cells.setdefault((r["atoms"], run["max_j_requested"]), []).append(r)
    return [{"atoms": atoms, "max_j_requested": j, "max_j_per_entry": rows[0]["max_j_per_entry"],
             "entries": rows[0]["entries"], "local_us_median": statistics.median(x["local_us"] for x in rows),
             "local_us_runs": [x["local_us"] for x in rows]}
            for (atoms, j), rows in sorted(cells.items())]


def main(argv=None, run=run_bench_nonbonded):
    p = argparse.ArgumentParser(prog="entry_length.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bench", required=True, help="haloex-bench-nonbonded to run")
    p.add_argument("--sizes", type=int, nargs="+", default=[5626, 11250, 22500, 45000], help="atom counts")
    p.add_argument("--lengths", type=int, nargs="+", default=[0, 8, 16, 32, 64, 128],
                   help="--max-j values (0: the build's automatic choice)")
    p.add_argument("--repeats", type=int, default=3, help="rounds over all lengths")
    p.add_argument("--steps", type=int, default=200, help="timed repetitions per figure")
    p.add_argument("--machine", default=socket.gethostname().split(".")[0])
    p.add_argument("--out", default=None, help="output JSON (default bench/results/entry-length-<machine>-<date>.json)")
    args = p.parse_args(argv)
    if args.repeats < 1 or any(j < 0 for j in args.lengths):
        p.error("--repeats must be >= 1 and every --lengths value >= 0")
    header = record_header(TOOL, {"sizes": args.sizes, "lengths": args.lengths, "repeats": args.repeats,
                                  "steps": args.steps, "as_md": True})
    record = {**header, "benchmark": "the local force kernel as haloex-md runs it, at each entry length "
                                     "(--max-j 0: the build's automatic choice)", "runs": []}
    for repeat in range(1, args.repeats + 1):
        for j in args.lengths:
            out = run(args.bench, args.sizes, args.steps, ["--as-md", "--max-j", str(j)])
            record["runs"].append({"round": repeat, "max_j_requested": j, **out})
    record["summary"] = summarise(record["runs"])
    for row in record["summary"]:
        print(f"{row['atoms']} atoms, --max-j {row['max_j_requested']}: local {row['local_us_median']:.2f} us "
              f"(runs {', '.join(f'{x:.2f}' for x in row['local_us_runs'])}; entries of {row['max_j_per_entry']}: "
              f"{row['entries']})", flush=True)
    write_record(record, args.out, "entry-length", args.machine)
    return 0


if __name__ == "__main__":
    sys.exit(main())
