"""bench/outer_radius.py: one run of the bench program per (rlist, inner) pair with the right options, one record
of them all that plots by its kind, and bad pairs refused (stand-in bench programs; run by ctest: python3 -m
unittest)."""
import argparse
import json
import os
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "bench"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # stand_in.py beside this file
import haloex_bench  # noqa: E402
from stand_in import write_stand_in  # noqa: E402
import outer_radius  # noqa: E402

# Echoes its options into the JSON it prints last, as haloex-bench-nonbonded does with its results.
STAND_IN = r'''#!/bin/sh
rlist=; inner=; parts=
while [ $# -gt 0 ]; do
  case "$1" in
    --rlist) rlist=$2; shift ;;
    --rlist-inner) inner=$2; shift ;;
    --prune-parts) parts=$2; shift ;;
    --as-md) echo "no --as-md here" >&2; exit 3 ;;
  esac
  shift
done
echo "device: test"
echo "{\"device\": \"test\", \"kernels\": [], \"results\": [{\"atoms\": 7, \"local_us\": 1$parts.5, \"rlist_nm\": $rlist, \
\"rlist_inner_nm\": $inner, \"evaluated_list\": {\"entries\": 3, \"empty_entries\": 1, \"cluster_pairs\": 9}}]}"
'''


class OuterRadius(unittest.TestCase):
    def test_one_run_per_pair_in_one_record_that_plots(self):
        with tempfile.TemporaryDirectory() as tmp:
            exe = write_stand_in(os.path.join(tmp, "bench"), STAND_IN)
            out = os.path.join(tmp, "r.json")
            self.assertEqual(outer_radius.main(["--bench", exe, "--sizes", "7", "--pairs", "0.96:0.92", "0.995:0",
                                                "--parts", "4", "--out", out]), 0)
            with open(out) as f:
                rec = json.load(f)
        self.assertEqual(rec["tool"], "bench/outer_radius.py")
        self.assertEqual([(r["rlist"], r["rlist_inner"]) for r in rec["runs"]], [(0.96, 0.92), (0.995, 0.0)])
        # The options reached the program: its echo of them.
        self.assertEqual(rec["runs"][0]["results"][0]["rlist_inner_nm"], 0.92)
        self.assertEqual(rec["runs"][1]["results"][0]["rlist_nm"], 0.995)
        self.assertEqual(rec["runs"][0]["results"][0]["local_us"], 14.5)
        self.assertEqual(rec["settings"]["prune_parts"], 4)
        self.assertEqual(haloex_bench.plot_kind(rec), "plot_outer_radius")

    def test_bad_pairs_are_refused(self):
        self.assertEqual(outer_radius.parse_pair("1.0:0"), (1.0, 0.0))
        for bad in ("0.96", "0.8:0.9", "0.96:0.97", "0.96:0.5", "a:b"):
            with self.subTest(pair=bad), self.assertRaises(argparse.ArgumentTypeError):
                outer_radius.parse_pair(bad)


if __name__ == "__main__":
    unittest.main()
