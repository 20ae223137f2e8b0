"""bench/model.py, the scaling model, without a GPU: haloex-plan's plans (halo volumes, pulses), the step's
structure on a made-up calibration, `check` on committed records (the table is produced and every error is the
prediction's relative difference from the measured figure; whether the goals are met is the docs' business) and
--help (run by ctest: python3 -m unittest; HALOEX_PLAN names the build's haloex-plan)."""
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "bench"))
import model  # noqa: E402

RECORD = os.path.join(REPO, "bench", "results", "md-dd-2xH200-x4host-2026-11-29.json")
SCALING = os.path.join(REPO, "bench", "results", "md-scaling-4xH200-2026-11-29.json")
MODEL = os.path.join(REPO, "bench", "model.py")


def planner_available():
    try:
        model.planner_executable()
        return True
    except model.ModelError:
        return False


def one_gpu_run(atoms, steady, local):
    return {"ranks": 1, "atoms": atoms, "label": "1gpu", "returncode": 0, "schema_version": 2, "cuda_graphs": True,
            "us_per_step": steady + 5, "us_per_step_steady": steady, "search_step_ms": atoms / 1e5,
            "settings": {"nstlist": 50, "rlist": 0.985}, "timing": {"local_us": local}}


COMMBENCH = {"results": [
    {"benchmark": "direct_store_flag", "variant": "block", "bytes": 8, "median": 2.0},
    {"benchmark": "tma_store_flag", "variant": "block", "bytes": 1024, "median": 2.0},
    {"benchmark": "put_signal_pingpong", "variant": "block", "bytes": 8, "median": 3.0},
    {"benchmark": "memcpy_peer_event", "bytes": 8, "median": 7.0},
    {"benchmark": "memcpy_peer_pingpong", "bytes": 8, "median": 8.0},
    {"benchmark": "mpi_pingpong", "bytes": 8, "median": 1.0},
    {"benchmark": "mpi_pingpong", "bytes": 1048576, "median": 100.0},
    {"benchmark": "nccl_pingpong", "bytes": 8, "median": 10.0},
    {"benchmark": "nccl_pingpong", "bytes": 1048576, "median": 20.0},
    {"benchmark": "store_bandwidth", "bytes": 65536, "median": 50.0},
    {"benchmark": "store_bandwidth", "bytes": 67108864, "median": 400.0},
    {"benchmark": "put_bandwidth", "bytes": 65536, "median": 40.0},
    {"benchmark": "memcpy_peer_bandwidth", "bytes": 8, "median": 0.01},
    {"benchmark": "memcpy_peer_bandwidth", "bytes": 67108864, "median": 400.0},
]}


def made_up_calibration():
    record = {"runs": [one_gpu_run(10000, 25.0, 20.0), one_gpu_run(20000, 35.0, 30.0),
                       one_gpu_run(40000, 55.0, 50.0)]}
    return model.Calibration([("made-up.json", record)], ("commbench.json", COMMBENCH), nstlist=50)


def plan(home, halo, pulses=1):
    ranks = [{"rank": r, "home": home, "halo": halo,
              "pulses": [{"id": p, "send_rank": 1 - r, "recv_rank": 1 - r, "send": halo // pulses,
                          "recv": halo // pulses} for p in range(pulses)]} for r in range(2)]
    return {"ranks": 2, "grid": "2x1x1", "pulses": pulses, "pulses_per_dim": [pulses, 0, 0], "per_rank": ranks}


class CalibrationAndStep(unittest.TestCase):
    def test_calibration_reads_the_one_gpu_runs(self):
        cal = made_up_calibration()
        self.assertEqual(cal.sizes, [10000, 20000, 40000])
        self.assertAlmostEqual(cal.chain_us, 10.0)          # 20 - 1 us/1000 atoms x 10 000
        self.assertAlmostEqual(cal.us_per_atom, 1e-3)       # (50 - 30) / 20 000
        self.assertAlmostEqual(cal.local_us(30000), 40.0)
        self.assertAlmostEqual(cal.tail_us(15000), 5.0)
        self.assertAlmostEqual(cal.search_us(20000), 200.0)

    def test_a_long_local_kernel_hides_the_exchange(self):
        cal = made_up_calibration()
        us, parts = model.step(cal, plan(40000, 100), "nvshmem")
        self.assertEqual(parts["exposed"], 0.0)
        self.assertAlmostEqual(us, cal.tail_us(40000) + cal.local_us(40000))

    def test_a_short_one_exposes_it_and_the_transports_differ(self):
        cal = made_up_calibration()
        nv, parts = model.step(cal, plan(2000, 4000), "nvshmem")
        self.assertGreater(parts["exposed"], 0.0)
        chain = parts["exchange_x"] + parts["nonlocal"] + parts["exchange_f"]
        self.assertAlmostEqual(nv, parts["tail"] + chain)
        ipc, _ = model.step(cal, plan(2000, 4000), "ipc")
        self.assertGreater(ipc, nv)   # two host-waited hand-offs per direction against one flag

    def test_more_pulses_cost_more(self):
        cal = made_up_calibration()
        one, _ = model.step(cal, plan(2000, 4000, 1), "nccl")
        two, _ = model.step(cal, plan(2000, 4000, 2), "nccl")
        self.assertGreater(two, one)

    def test_ipc_cannot_leave_the_node(self):
        cal = made_up_calibration()
        p = plan(2000, 4000)
        p["ranks"] = 8
        p["per_rank"][1]["rank"] = 4
        p["per_rank"][0]["pulses"][0]["send_rank"] = 4
        with self.assertRaises(model.ModelError):
            model.step(cal, p, "ipc", interconnect="ib-ndr")

    def test_infiniband_predictions_are_marked_unvalidated_and_checked_against_the_paper(self):
        self.assertIn("UNVALIDATED", model.INTERCONNECTS["ib-ndr"]["note"])
        lines = model.ib_check([{"gain": 1.01}, {"gain": 1.58}, {"gain": 2.10}])
        self.assertIn("UNVALIDATED", lines[0])
        self.assertIn("paper's measured 1.3x", lines[1])
        self.assertIn("1.01-2.10x, 2 of 3 above it", lines[1])
        self.assertEqual(model.ib_check([]), [])

    def test_a_calibration_without_one_gpu_runs_is_refused_with_the_reason(self):
        with self.assertRaises(model.ModelError) as e:
            model.Calibration([("x.json", {"runs": []})], ("c.json", COMMBENCH))
        self.assertIn("one-GPU", str(e.exception))


@unittest.skipUnless(planner_available(), "haloex-plan is not built (cmake --build build --target haloex-plan)")
class WithThePlanner(unittest.TestCase):
    def test_the_plan_covers_every_atom_and_its_halo(self):
        p = model.plan_of(22500, ranks=2)
        self.assertEqual(p["grid"], "2x1x1")
        self.assertEqual(p["pulses"], 1)
        self.assertEqual(sum(r["home"] for r in p["per_rank"]), 22500)
        # a slab rlist thick over the box's face, at 100 atoms/nm^3: about 3 700 atoms
        face = p["box_nm"][1] * p["box_nm"][2]
        self.assertAlmostEqual(p["halo_atoms"]["mean"] / (face * 0.985 * 100), 1.0, delta=0.05)

    def test_thin_cells_get_two_pulses(self):
        p = model.plan_of(45000, grid="8x1x1")
        self.assertEqual(p["pulses_per_dim"], [2, 0, 0])
        self.assertEqual(p["pulse_summary"][1]["waits_forward"], [0])

    def test_the_planner_refuses_what_it_cannot_plan_with_the_reason(self):
        exe = model.planner_executable()
        for argv, words in ((["--atoms", "22500", "--grid", "3x1x1", "--ranks", "2"], "3x1x1"),
                            (["--atoms", "4000", "--grid", "2x1x1", "--rlist", "2.0"], "pulse"),
                            (["--atoms", "4000"], "--ranks")):
            with self.subTest(argv=argv):
                done = subprocess.run([exe, *argv], capture_output=True, text=True, timeout=60)
                self.assertEqual(done.returncode, 1)
                self.assertIn("haloex-plan:", done.stderr)
                self.assertIn(words, done.stderr)
        with self.assertRaises(model.ModelError):
            model.plan_of(4000, grid="2x1x1", rlist=2.0)

    def test_check_prints_the_table_and_its_errors(self):
        for record in (RECORD, SCALING):
            with self.subTest(record=os.path.basename(record)):
                self.check_one(record)

    def check_one(self, record):
        out = io.StringIO()
        with tempfile.TemporaryDirectory() as tmp:
            rows_json = os.path.join(tmp, "rows.json")
            with redirect_stdout(out):
                self.assertEqual(model.main(["check", record, "--json", rows_json]), 0)
            with open(rows_json) as f:
                rows = json.load(f)
        text = out.getvalue()
        self.assertIn("| atoms | grid | transport | steady measured | steady model | error |", text)
        with open(record) as f:
            multi = [r for r in json.load(f)["runs"] if r.get("ranks", 1) > 1]
        self.assertEqual(len(rows), len(multi))
        smallest = min(r["atoms"] for r in multi)
        self.assertEqual(len([line for line in text.splitlines() if line.startswith(f"| {smallest} |")]),
                         sum(1 for r in multi if r["atoms"] == smallest))
        for row in rows:
            self.assertGreater(row["steady_pred"], 0)
            error = 100 * (row["steady_pred"] - row["steady"]) / row["steady"]
            self.assertIn(f"| {row['steady']:.1f} | {row['steady_pred']:.1f} | {error:+.1f} % |", text)
            self.assertIsNotNone(row["e2e_pred"])
        self.assertRegex(text, r"steady: mean \|error\| [0-9.]+ %, largest [0-9.]+ %, \d+ of \d+ within 10 %")
        self.assertRegex(text, r"end-to-end: mean \|error\| [0-9.]+ %")

    def test_measured_exchanges_replace_the_primitives_on_nvlink(self):
        timing = [os.path.join(REPO, "bench", "results", "exchange-timing-2xH200-2026-11-29.json")]
        record = model.bench_common.load_record(RECORD)
        commbench = (model.DEFAULT_COMMBENCH, model.bench_common.load_record(model.DEFAULT_COMMBENCH))
        cal, plain = model.check_rows(RECORD, record, commbench)
        cal_t, timed = model.check_rows(RECORD, record, commbench, [(timing[0], model.bench_common.load_record(
            timing[0]))])
        self.assertIsNone(cal.exchange)
        self.assertIn("exchange timing", "\n".join(cal_t.describe()))
        for a, b in zip(plain, timed):
            self.assertEqual((a["atoms"], a["transport"]), (b["atoms"], b["transport"]))
            if a["transport"] == "nvshmem/direct":   # the record times nvshmem's paths only
                self.assertNotAlmostEqual(a["parts"]["exchange_x"], b["parts"]["exchange_x"])
            if a["transport"] == "nccl":
                self.assertAlmostEqual(a["parts"]["exchange_x"], b["parts"]["exchange_x"])

    def test_step_from_the_command_line(self):
        done = subprocess.run([sys.executable, MODEL, "step", "--atoms", "45000", "--ranks", "4", "--transport",
                               "ipc"], capture_output=True, text=True, timeout=120)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertRegex(done.stdout, r"steady [0-9.]+ us/step")


class CommandLine(unittest.TestCase):
    def run_model(self, *argv, env=None):
        return subprocess.run([sys.executable, MODEL, *argv], capture_output=True, text=True, timeout=120,
                              env=env)

    def test_help(self):
        for argv in ([], ["step"], ["check"], ["predict"], ["params"]):
            with self.subTest(argv=argv):
                done = self.run_model(*argv, "--help")
                self.assertEqual(done.returncode, 0, done.stderr)
                self.assertIn("usage", done.stdout.lower())

    def test_without_the_planner_the_error_says_how_to_build_it(self):
        env = dict(os.environ, HALOEX_PLAN=os.path.join(tempfile.gettempdir(), "no-such-haloex-plan"))
        done = self.run_model("check", RECORD, env=env)
        self.assertEqual(done.returncode, 1)
        self.assertIn("haloex-plan not found", done.stderr)
        self.assertIn("--target haloex-plan", done.stderr)


if __name__ == "__main__":
    unittest.main()
