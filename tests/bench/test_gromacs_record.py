"""bench/gromacs_record.py: haloex-md runs and GROMACS runs of one device call in one record under this machine's
header, each haloex run labelled by what it ran, a missing file named, the record plotted by its kind, and nothing
read refused (run by ctest: python3 -m unittest)."""
import json
import os
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "bench"))
import gromacs_record  # noqa: E402
import haloex_bench  # noqa: E402


def write(path, value):
    with open(path, "w") as f:
        json.dump(value, f)
    return path


class GromacsRecord(unittest.TestCase):
    def test_both_codes_in_one_record(self):
        with tempfile.TemporaryDirectory() as tmp:
            one = write(os.path.join(tmp, "hx-1.json"), {
                "program": "haloex-md", "atoms": 22500, "ranks": 1, "us_per_step": 40.0, "us_per_step_steady": 38.0,
                "settings": {"nstlist": 150, "nstlist_reason": "nstlist 150 of 9 candidates"}})
            two = write(os.path.join(tmp, "hx-2.json"), {
                "program": "haloex-md", "atoms": 45000, "ranks": 2, "grid": "2x1x1", "transport": "nvshmem",
                "us_per_step": 45.0, "us_per_step_steady": 41.0,
                "settings": {"nstlist": 100, "nstlist_reason": "set by --nstlist"}})
            gmx = write(os.path.join(tmp, "g.json"), [{"tool": "gromacs", "atoms": 22500, "us_per_step": 60.0,
                                                       "nstlist_requested": "auto"}])
            out = os.path.join(tmp, "r.json")
            self.assertEqual(gromacs_record.main(["--haloex", one, two, os.path.join(tmp, "absent.json"),
                                                  "--gromacs", gmx, "--benchmark", "test", "--setting",
                                                  "thermostat=v-rescale", "--out", out]), 0)
            with open(out) as f:
                rec = json.load(f)
        self.assertEqual(rec["tool"], "bench/gromacs_record.py")
        self.assertIn("machine", rec)
        self.assertEqual(rec["settings"]["thermostat"], "v-rescale")
        self.assertEqual([r["label"] for r in rec["runs"]],
                         ["haloex nstlist=auto", "haloex 2x1x1 nvshmem nstlist=100"])
        self.assertEqual(rec["gromacs_runs"][0]["us_per_step"], 60.0)
        self.assertEqual([m["file"].rsplit("/", 1)[1] for m in rec["missing"]], ["absent.json"])
        self.assertEqual(haloex_bench.plot_kind(rec), "plot_runs")

    def test_nothing_read_is_an_error(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "r.json")
            self.assertEqual(gromacs_record.main(["--haloex", os.path.join(tmp, "none.json"), "--benchmark", "t",
                                                  "--out", out]), 1)
            with self.assertRaises(SystemExit):
                gromacs_record.main(["--benchmark", "t", "--setting", "novalue", "--out", out])


if __name__ == "__main__":
    unittest.main()
