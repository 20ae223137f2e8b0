"""bench/entry_length.py: every --max-j of every round reaches the bench program with --as-md, the record holds
each run and the median per size and length, it plots by its kind, and bad options are refused (a stand-in bench
program; run by ctest: python3 -m unittest)."""
import json
import os
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "bench"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # stand_in.py beside this file
import entry_length  # noqa: E402
import haloex_bench  # noqa: E402
from stand_in import write_stand_in  # noqa: E402

# Echoes --max-j (0: "automatic", 16 here) into the JSON it prints last, as haloex-bench-nonbonded does; the
# kernel time grows with the length and with each call (a counter file), so rounds differ.
STAND_IN = r'''#!/bin/sh
maxj=; md=0
while [ $# -gt 0 ]; do
  case "$1" in
    --max-j) maxj=$2; shift ;;
    --as-md) md=1 ;;
  esac
  shift
done
[ "$md" = 1 ] || { echo "expected --as-md" >&2; exit 3; }
calls=$(cat "$0.calls" 2>/dev/null || echo 0); calls=$((calls + 1)); echo $calls > "$0.calls"
used=$maxj; [ "$maxj" = 0 ] && used=16
echo "device: test"
echo "{\"device\": \"test\", \"results\": [{\"atoms\": 7, \"local_us\": $((used + calls)).5, \
\"max_j_per_entry\": $used, \"entries\": $((256 / used))}]}"
'''


class EntryLength(unittest.TestCase):
    def test_every_length_every_round_in_one_record_that_plots(self):
        with tempfile.TemporaryDirectory() as tmp:
            exe = write_stand_in(os.path.join(tmp, "bench"), STAND_IN)
            out = os.path.join(tmp, "r.json")
            self.assertEqual(entry_length.main(["--bench", exe, "--sizes", "7", "--lengths", "0", "8", "32",
                                                "--repeats", "3", "--out", out]), 0)
            with open(out) as f:
                rec = json.load(f)
        self.assertEqual(rec["tool"], "bench/entry_length.py")
        self.assertEqual([(r["round"], r["max_j_requested"]) for r in rec["runs"]],
                         [(k, j) for k in (1, 2, 3) for j in (0, 8, 32)])
        by_length = {row["max_j_requested"]: row for row in rec["summary"]}
        self.assertEqual(sorted(by_length), [0, 8, 32])
        # The automatic choice says which length the build took; calls 1, 4, 7 were --max-j 0.
        self.assertEqual(by_length[0]["max_j_per_entry"], 16)
        self.assertEqual(by_length[0]["local_us_runs"], [17.5, 20.5, 23.5])
        self.assertEqual(by_length[0]["local_us_median"], 20.5)
        self.assertEqual(by_length[32]["entries"], 8)
        self.assertEqual(by_length[32]["local_us_median"], 38.5)  # calls 3, 6, 9
        self.assertEqual(haloex_bench.plot_kind(rec), "plot_entry_length")

    def test_bad_options_are_refused(self):
        for bad in (["--repeats", "0"], ["--lengths", "8", "-1"]):
            with self.subTest(args=bad), self.assertRaises(SystemExit):
                entry_length.main(["--bench", "/nonexistent"] + bad)


if __name__ == "__main__":
    unittest.main()
