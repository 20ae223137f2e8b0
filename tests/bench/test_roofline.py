"""bench/roofline.py: the roofline figures of one size from ncu's raw CSV and the bench's census, computed by hand
here (run by ctest: python3 -m unittest)."""
import csv
import io
import json
import os
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "bench"))
import haloex_bench  # noqa: E402
import roofline  # noqa: E402

METRICS = {  # name: (unit, value) of one launch
    "gpu__time_duration.sum": ("nsecond", "10000"),
    "sm__cycles_elapsed.avg.per_second": ("cycle/nsecond", "1.5"),
    "sm__inst_executed.sum": ("inst", "3,960,000"),
    "smsp__thread_inst_executed_per_inst_executed.ratio": ("", "29"),
    "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum": ("inst", "1000000"),
    "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum": ("inst", "1000000"),
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": ("inst", "4000000"),
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active": ("%", "70"),
    "l1tex__throughput.avg.pct_of_peak_sustained_active": ("%", "40"),
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": ("%", "3"),
    "launch__registers_per_thread": ("register/thread", "64"),
    "sm__warps_active.avg.pct_of_peak_sustained_active": ("%", "45"),
    "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio": ("", "2.0"),
    "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio": ("", "1.0"),
    "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio": ("", "0.1"),
}


def ncu_csv(metrics):
    """ncu --csv --page raw --print-units base, as it writes one kernel: ==PROF== lines, names, units, values."""
    out = io.StringIO()
    out.write("==PROF== Connected to process 1 (/bin/haloex-bench-nonbonded)\n")
    w = csv.writer(out, quoting=csv.QUOTE_ALL)
    names = ["ID", "Process ID", "Kernel Name"] + list(metrics)
    w.writerow(names)
    w.writerow(["", "", ""] + [u for u, _ in metrics.values()])
    w.writerow(["0", "1", "void nonbondedKernel<false, true>(...)"] + [v for _, v in metrics.values()])
    return out.getvalue()


def bench_record(atoms=1000):
    return {"device": "test GPU", "sms": 132, "kernels": [], "results": [{
        "atoms": atoms, "local_us": 8.0, "rlist_nm": 1.1, "nstlist": 100, "rlist_inner_nm": 0.92, "prune_parts": 8,
        "outer_list": {"cluster_pairs": 1000, "atom_pairs": 50000, "pairs_within_rc": 20000},
        "evaluated_list": {"cluster_pairs": 500, "atom_pairs": 26000, "pairs_within_rc": 20000}}]}


class RooflineRow(unittest.TestCase):
    def row(self, metrics=METRICS):
        bench = bench_record()
        return roofline.roofline_row(bench["results"][0], roofline.parse_ncu_csv(ncu_csv(metrics)), bench["sms"])

    def test_pairs_and_efficiency(self):
        r = self.row()
        self.assertAlmostEqual(r["cluster_pair_efficiency"]["outer"], 20000 / 64000)
        self.assertAlmostEqual(r["cluster_pair_efficiency"]["inner"], 20000 / 32000)
        # One of 8 parts is read from the outer list while it is pruned.
        self.assertAlmostEqual(r["evaluated_per_call"]["cluster_pairs"], 500 * 7 / 8 + 1000 / 8)
        self.assertAlmostEqual(r["evaluated_per_call"]["atom_pairs"], 26000 * 7 / 8 + 50000 / 8)

    def test_instructions_flops_and_peaks(self):
        r = self.row()
        self.assertAlmostEqual(r["ncu_duration_us"], 10.0)
        self.assertAlmostEqual(r["ncu_sm_clock_ghz"], 1.5)
        self.assertAlmostEqual(r["fp32_ops"], 1e6 + 1e6 + 2 * 4e6)
        self.assertAlmostEqual(r["fp32_ops_per_evaluated_atom_pair"], 1e7 / 29000)
        self.assertAlmostEqual(r["fp32_ops_per_pair_within_rc"], 1e7 / 20000)
        self.assertAlmostEqual(r["warp_instructions_per_evaluated_cluster_pair"], 3.96e6 / 562.5)
        self.assertAlmostEqual(r["thread_instructions_per_evaluated_atom_pair"], 3.96e6 * 29 / 29000)
        units = r["pct_of_peak"]
        # 4 warp instructions per SM and cycle: 4 x 132 x 1.5e9 x 1e-5 s = 7.92e6.
        self.assertAlmostEqual(units["issue (sm__inst_executed vs 4 per SM and cycle)"], 50.0)
        # 256 FP32 operations per SM and cycle: 1e12 FLOP/s of 5.0688e13.
        self.assertAlmostEqual(units["FP32 (FADD+FMUL+2 FFMA vs 256 per SM and cycle)"], 100 * 1e12 / 5.0688e13)
        self.assertIsNone(units["L2"])  # not in this CSV: no figure, no zero

    def test_bound_names_the_unit_above_the_threshold_or_latency(self):
        self.assertTrue(self.row()["bound"].startswith("FMA pipe at 70 % of peak"), self.row()["bound"])
        self.assertIn("long_scoreboard 2.00, wait 1.00, barrier 0.10", self.row()["bound"])
        slow = dict(METRICS)
        slow["sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active"] = ("%", "30")
        bound = self.row(slow)["bound"]
        self.assertTrue(bound.startswith("latency: no unit above 60 % of its peak (highest: issue"), bound)

    def test_a_csv_without_the_kernel_is_refused(self):
        with self.assertRaisesRegex(ValueError, "no kernel row"):
            roofline.parse_ncu_csv("==PROF== No kernels were profiled.\n")

    def test_record_from_kept_csvs_and_its_plot_kind(self):
        with tempfile.TemporaryDirectory() as tmp:
            keep = os.path.join(tmp, "keep")
            os.makedirs(keep)
            with open(os.path.join(keep, "bench-nonbonded-1000.out"), "w") as f:
                json.dump(bench_record(), f)
            with open(os.path.join(keep, "ncu-nonbonded-1000.csv"), "w") as f:
                f.write(ncu_csv(METRICS))
            out = os.path.join(tmp, "rec.json")
            self.assertEqual(roofline.main(["--from-csv", keep, "--sizes", "1000", "--out", out]), 0)
            with open(out) as f:
                rec = json.load(f)
            self.assertEqual(rec["tool"], "bench/roofline.py")
            self.assertEqual(rec["sms"], 132)
            self.assertEqual([r["atoms"] for r in rec["sizes"]], [1000])
            self.assertEqual(haloex_bench.plot_kind(rec), "plot_roofline")


if __name__ == "__main__":
    unittest.main()
