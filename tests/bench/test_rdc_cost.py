"""bench/rdc_cost.py: the per-size medians and ratios of the two builds, from runs of known figures (run by ctest:
python3 -m unittest)."""
import os
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "bench"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # stand_in.py beside this file
import rdc_cost  # noqa: E402
from stand_in import write_stand_in  # noqa: E402


def run(local_by_size):
    """A bench run's JSON with the given local_us per size (the other figures 1)."""
    results = []
    for atoms, local in local_by_size.items():
        row = {f: 1.0 for f in rdc_cost.FIGURES}
        row.update(atoms=atoms, local_us=local)
        results.append(row)
    return {"device": "test", "results": results}


class SummaryTest(unittest.TestCase):
    def test_medians_and_ratio_per_size(self):
        runs = {"whole": [run({100: 10.0, 200: 40.0}), run({100: 12.0, 200: 44.0}), run({100: 11.0, 200: 42.0})],
                "rdc": [run({100: 13.0, 200: 40.0}), run({100: 11.0, 200: 46.0}), run({100: 12.1, 200: 43.0})]}
        table = rdc_cost.summarize(runs)
        self.assertEqual([row["atoms"] for row in table], [100, 200])
        self.assertEqual(table[0]["local_us"]["whole"], 11.0)
        self.assertEqual(table[0]["local_us"]["rdc"], 12.1)
        self.assertAlmostEqual(table[0]["local_us"]["rdc_over_whole"], 1.1)
        self.assertAlmostEqual(table[1]["local_us"]["rdc_over_whole"], 43.0 / 42.0)
        self.assertEqual(table[1]["step_us"]["rdc_over_whole"], 1.0)

    def test_the_json_is_read_after_the_table(self):
        # A stand-in for the bench program: its table, then its JSON, as haloex-bench-nonbonded prints them.
        with tempfile.TemporaryDirectory() as tmp:
            exe = write_stand_in(
                os.path.join(tmp, "fake-bench"),
                '#!/bin/sh\necho "device: test (1 SMs) $*"\necho "   atoms clusters"\n'
                'echo \'{"device": "test", "device_code": "x", "results": [{"atoms": 5, "local_us": 2.5}]}\'\n')
            got = rdc_cost.run_once(exe, [5], 7)
        self.assertEqual(got["device_code"], "x")
        self.assertEqual(got["results"][0]["local_us"], 2.5)


if __name__ == "__main__":
    unittest.main()
