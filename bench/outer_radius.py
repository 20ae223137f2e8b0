#!/usr/bin/env python3
"""The force kernel against the outer list's radius with the rolling prune's inner list held fixed (issue 34 part
5): haloex-bench-nonbonded at each (rlist, rlist-inner) pair -- rlist-inner 0 is the kernel without pruning, on the
whole list -- and one record of every run, with the lists' census (entries, empty entries, cluster pairs of the
outer and the evaluated list) beside the kernel's time:

    bench/results/nonbonded-outer-radius-<machine>-<date>.json

The pruned kernel's time following the outer radius while the evaluated pairs do not is what located the cost of
the short-list rule in the list's entries (docs/results.md, "Where the outer radius's cost comes from").

Examples:
    python3 bench/outer_radius.py --bench build/bin/haloex-bench-nonbonded
    python3 bench/outer_radius.py --bench B --sizes 180000 720000 --pairs 0.96:0.92 0.995:0.92 0.92:0 --out r.json
"""
import argparse
import socket
import sys

from bench_common import record_header, run_bench_nonbonded, write_record

TOOL = "bench/outer_radius.py"
DEFAULT_PAIRS = ("0.96:0.92", "0.975:0.92", "0.995:0.92", "1.03:0.92", "0.92:0", "0.995:0")


def parse_pair(spec):
    """'RLIST:INNER' as (rlist, inner) in nm; inner 0 (no pruning) or within [0.9, rlist]."""
    rlist, sep, inner = spec.partition(":")
    try:
        r, i = float(rlist), float(inner)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{spec!r}: expected RLIST:INNER in nm, e.g. 0.995:0.92 (INNER 0: no pruning)")
    if not sep or r < 0.9 or (i != 0.0 and not 0.9 <= i <= r):
        raise argparse.ArgumentTypeError(f"{spec!r}: rlist must be >= 0.9 nm and the inner radius 0 or in [0.9, rlist]")
    return r, i


def main(argv=None):
    p = argparse.ArgumentParser(prog="outer_radius.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bench", required=True, help="haloex-bench-nonbonded to run")
    p.add_argument("--sizes", type=int, nargs="+", default=[180000, 720000], help="atom counts")
    p.add_argument("--pairs", type=parse_pair, nargs="+", default=[parse_pair(s) for s in DEFAULT_PAIRS],
                   metavar="RLIST:INNER", help="outer and inner radius (nm) of each run; INNER 0: no pruning")
    p.add_argument("--parts", type=int, default=8, help="the rolling prune's parts")
    p.add_argument("--steps", type=int, default=100, help="timed repetitions per figure")
    p.add_argument("--machine", default=socket.gethostname().split(".")[0])
    p.add_argument("--out", default=None, help="output JSON (default bench/results/nonbonded-outer-radius-"
                                               "<machine>-<date>.json)")
    args = p.parse_args(argv)
    header = record_header(TOOL, {"sizes": args.sizes, "steps": args.steps, "prune_parts": args.parts,
                                  "pairs": [list(x) for x in args.pairs],
                                  "system": "haloex-bench-nonbonded's lattice start"})
    record = {**header, "benchmark": "the force kernel against the outer list's radius with the inner list fixed",
              "runs": []}
    for rlist, inner in args.pairs:
        extra = ["--rlist", str(rlist), "--rlist-inner", str(inner), "--prune-parts", str(args.parts)]
        out = run_bench_nonbonded(args.bench, args.sizes, args.steps, extra)
        record["runs"].append({"rlist": rlist, "rlist_inner": inner, **out})
        for r in out["results"]:
            listed = r.get("evaluated_list", {})
            print(f"rlist {rlist} inner {inner}: {r['atoms']} atoms, entries {listed.get('entries')} "
                  f"({listed.get('empty_entries')} empty), evaluated {listed.get('cluster_pairs')} cluster pairs, "
                  f"local {r['local_us']:.1f} us", flush=True)
    write_record(record, args.out, "nonbonded-outer-radius", args.machine)
    return 0


if __name__ == "__main__":
    sys.exit(main())
