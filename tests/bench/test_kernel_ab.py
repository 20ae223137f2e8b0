"""bench/kernel_ab.py: the alternating order, the medians, B / A and the verdict, from stand-in bench programs
(run by ctest: python3 -m unittest)."""
import json
import os
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "bench"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # stand_in.py beside this file
import haloex_bench  # noqa: E402
import kernel_ab  # noqa: E402
from stand_in import write_stand_in  # noqa: E402


def run(local_by_size):
    return {"device": "test", "results": [{"atoms": n, "local_us": v, "step_us": 2 * v} for n, v in local_by_size.items()]}


class Summary(unittest.TestCase):
    def test_order_alternates(self):
        self.assertEqual(kernel_ab.order(4), [("A", "B"), ("B", "A"), ("A", "B"), ("B", "A")])

    def test_medians_ratio_and_verdicts(self):
        runs = {"A": [run({100: 10.0, 200: 40.0, 300: 5.0}), run({100: 11.0, 200: 41.0, 300: 5.2}),
                      run({100: 10.5, 200: 39.0, 300: 5.1})],
                "B": [run({100: 9.0, 200: 41.5, 300: 5.0}), run({100: 9.4, 200: 42.0, 300: 5.3}),
                      run({100: 9.2, 200: 41.9, 300: 5.05})]}
        table = {row["atoms"]: row for row in kernel_ab.summarize(runs)}
        self.assertEqual(table[100]["local_us"]["A"], 10.5)
        self.assertEqual(table[100]["local_us"]["B"], 9.2)
        self.assertAlmostEqual(table[100]["local_us"]["B_over_A"], 9.2 / 10.5)
        self.assertAlmostEqual(table[100]["step_us"]["B_over_A"], 9.2 / 10.5)
        self.assertEqual(table[100]["verdict"], "B faster")      # every B run below A's median
        self.assertEqual(table[200]["verdict"], "B slower")      # every B run above A's median
        self.assertEqual(table[300]["verdict"], "within the spread")  # medians 5.1 vs 5.05, a B run above 5.1

    def test_record_from_stand_in_programs(self):
        with tempfile.TemporaryDirectory() as tmp:
            exes = {}
            for v, local in (("A", 10.0), ("B", 8.0)):
                exes[v] = write_stand_in(
                    os.path.join(tmp, f"bench-{v}"),
                    '#!/bin/sh\ncase "$*" in *--as-md*) ;; *) echo "no --as-md" >&2; exit 3;; esac\n'
                    f'echo "device: test"\necho \'{{"device": "test", "results": '
                    f'[{{"atoms": 5, "local_us": {local}, "step_us": 20}}]}}\'\n')
            out = os.path.join(tmp, "ab.json")
            self.assertEqual(kernel_ab.main(["--a", exes["A"], "--b", exes["B"], "--sizes", "5", "--steps", "3",
                                             "--out", out]), 0)
            with open(out) as f:
                rec = json.load(f)
            self.assertEqual(rec["tool"], "bench/kernel_ab.py")
            self.assertEqual(len(rec["runs"]["A"]), 3)
            self.assertEqual(rec["summary"][0]["verdict"], "B faster")
            self.assertEqual(haloex_bench.plot_kind(rec), "plot_kernel_ab")

    def test_variants_share_the_rotation_and_are_summarised_against_a_and_the_previous(self):
        self.assertEqual(kernel_ab.order(2, ["A", "B", "ftz"]), [("A", "B", "ftz"), ("ftz", "B", "A")])
        with tempfile.TemporaryDirectory() as tmp:
            exes = {}
            for v, local in (("A", 10.0), ("B", 8.0), ("ftz", 9.0)):
                exes[v] = write_stand_in(
                    os.path.join(tmp, f"bench-{v}"),
                    f'#!/bin/sh\necho {v} >>{tmp}/order\necho \'{{"device": "test", "results": '
                    f'[{{"atoms": 5, "local_us": {local}, "step_us": 20}}]}}\'\n')
            out = os.path.join(tmp, "ab.json")
            self.assertEqual(kernel_ab.main(["--a", exes["A"], "--b", exes["B"], "--variant", f"ftz={exes['ftz']}",
                                             "--sizes", "5", "--steps", "3", "--out", out]), 0)
            with open(os.path.join(tmp, "order")) as f:
                self.assertEqual(f.read().split(), ["A", "B", "ftz", "ftz", "B", "A", "A", "B", "ftz"])
            with open(out) as f:
                rec = json.load(f)
            ftz = rec["summary_by_variant"]["ftz"]
            self.assertEqual(ftz["against_A"][0]["verdict"], "ftz faster")
            self.assertEqual(ftz["against_previous"][0]["verdict"], "ftz slower")  # 9 against B's 8
            self.assertIsNone(rec["summary_by_variant"]["B"]["against_previous"])
            self.assertEqual(rec["summary"][0]["verdict"], "B faster")

    def test_variant_labels_are_checked(self):
        for spec in ("noequals", "A=/bin/true", "=x"):
            with self.assertRaises(SystemExit):
                kernel_ab.main(["--a", "/bin/true", "--b", "/bin/true", "--variant", spec])

    def test_fewer_than_three_repeats_refused(self):
        with self.assertRaises(SystemExit):
            kernel_ab.main(["--a", "/bin/true", "--b", "/bin/true", "--repeats", "2"])


if __name__ == "__main__":
    unittest.main()
