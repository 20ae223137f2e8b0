"""bench/raw_log_record.py and the record it made from the 2026-12-04 allocation's raw log (run by ctest: python3 -m
unittest): the committed record's figures are exactly those its verbatim lines give, a changed figure is caught, the
lines are read as their columns say, and an unknown line is refused, not skipped."""
import copy
import json
import os
import sys
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "bench"))
import bench_common  # noqa: E402
import raw_log_record as rl  # noqa: E402

RECORD = os.path.join(REPO, "bench", "results", "md-vs-gromacs-1xH200-2026-12-04.json")


def load():
    with open(RECORD) as f:
        return json.load(f)


class CommittedRecordTest(unittest.TestCase):
    def test_faithful_to_its_raw_log(self):
        self.assertEqual(rl.check(load()), [])
        self.assertEqual(rl.main(["--check", RECORD]), 0)

    def test_a_changed_figure_is_caught(self):
        rec = copy.deepcopy(load())
        rec["runs"][0]["us_per_step"] += 0.1
        self.assertEqual(len(rl.check(rec)), 1)
        rec = copy.deepcopy(load())
        rec["raw_log"][8] = rec["raw_log"][8].replace("us/step(all)=43.7", "us/step(all)=41.7")
        self.assertIn("runs differ", " ".join(rl.check(rec)))

    def test_provenance_and_schema(self):
        rec = load()
        self.assertEqual(rec["schema_version"], 2)
        self.assertIn("transcribed from that allocation's raw log", rec["source"]["note"])
        self.assertEqual(len(rec["source"]["sha256"]), 64)
        self.assertEqual(len(rec["raw_log"]), 73)
        self.assertTrue(rec["commit"].startswith("90c76b2"))
        bench_common.check_record(rec, RECORD)
        for run in rec["runs"]:
            self.assertTrue(bench_common.md_figures(run).end_to_end, run["label"])


class ParseTest(unittest.TestCase):
    def test_series_lines(self):
        out = rl.parse(["## series", "gromacs n=22500 ns/day=2767.565 us/step=62.4 us/step-xDDNS=47.4 nstlist=10",
                        "haloex  n=22500 ns/day=3951 us/step(all)=43.7 steady=42.0 nstlist=150 "
                        "rlist=1.1300000000000001 search_ms=0.293 drift=8.43743901519501e-05"])
        g, h = out["gromacs_runs"][0], out["runs"][0]
        self.assertEqual((g["atoms"], g["us_per_step"], g["us_per_step_without_dd_and_search"], g["nstlist_mdp"]),
                         (22500, 62.4, 47.4, 10))
        self.assertNotIn("nstlist", g)  # the mdp's 10 is not what mdrun used
        self.assertEqual((h["us_per_step"], h["us_per_step_steady"], h["search_step_ms"], h["settings"]["nstlist"]),
                         (43.7, 42.0, 0.293, 150))
        self.assertEqual((g["raw_line"], h["raw_line"], h["section"]), (2, 3, "series"))

    def test_sweep_graphs_and_timeline(self):
        out = rl.parse([
            "gromacs n=720000 nstlist=100 all steps 1047.2 us/step; Changing nstlist from 10 to 100, rlist from "
            "0.907 to 1.157",
            "gromacs+graphs n=90000 nstlist=auto all steps 180.0 us/step; (graphs requested)",
            "2 ranks ipc 22500 atoms, 100% SMs each all 100.9 steady 96.0 search_ms 0.8 nstlist 150",
            "Device timeline (us, 40 steps; mean / median / p90): local 37.1 / 36.5 / 40.4, non-local 73.0 / 72.2 / "
            "79.6, non-overlap 50.6 / 50.0 / 59.7"])
        sweep, graphs = out["gromacs_runs"]
        self.assertEqual((sweep["nstlist"], sweep["rlist"], sweep["us_per_step"]), (100, 1.157, 1047.2))
        self.assertTrue(graphs["cuda_graph_requested"])
        t = out["mps_runs"][0]["timing"]
        self.assertEqual((t["local_us"], t["nonlocal_us"], t["nonoverlap_us"], t["nonoverlap"]["p90"]),
                         (37.1, 73.0, 50.6, 59.7))

    def test_an_unknown_line_is_refused(self):
        with self.assertRaisesRegex(ValueError, "line 1: not a line this transcription knows"):
            rl.parse(["haloex n=22500 something else"])


if __name__ == "__main__":
    unittest.main()
