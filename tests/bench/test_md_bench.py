"""bench/md_bench.py and the MD plots' readers, without a GPU: a stand-in haloex-md (writes a schema-2 record) and a
stand-in mpirun (drops its own words) run the dd suite through the one launcher line; the record carries the header
and the end-to-end figures first (run by ctest: python3 -m unittest)."""
import contextlib
import importlib
import io
import json
import os
import stat
import sys
import tempfile
import unittest
from unittest import mock

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "bench"))
import bench_common  # noqa: E402
import md_bench  # noqa: E402
import plot_md  # noqa: E402
import plot_scaling  # noqa: E402

FAKE_MD = r'''#!{python}
import json, os, sys
a = sys.argv[1:]
out = a[a.index("--json") + 1]
atoms = int(a[a.index("--atoms") + 1])
transport = a[a.index("--transport") + 1] if "--transport" in a else "none"
ranks = int(os.environ.get("FAKE_RANKS", "1"))
if transport == "nccl":
    sys.exit("nccl: refused by the stand-in")
us = atoms / 1000.0 + (10 if ranks > 1 else 0)
with open(out, "w") as f:
    json.dump({{"program": "haloex-md", "schema_version": 2, "atoms": atoms, "ranks": ranks, "transport": transport,
               "us_per_step": us * 1.25, "ns_per_day": 172.8e3 / (us * 1.25), "us_per_step_steady": us,
               "ns_per_day_steady": 172.8e3 / us, "search_step_ms": 0.5, "startup_seconds": 1.0,
               "cuda_graphs": True, "argv": a, "pdl_env": os.environ.get("HALOEX_PDL"),
               "nvls": os.environ.get("NVSHMEM_DISABLE_NVLS"),
               "timing": {{"local_us": 1.0, "nonlocal_us": 2.0, "nonoverlap_us": 0.5}}}}, f)
'''

FAKE_MPIRUN = r'''#!/bin/sh
# drops the launcher's own words up to "-np N", passes N on
while [ "$1" != "-np" ]; do shift; done
export FAKE_RANKS=$2
shift 2
exec "$@"
'''


def executable(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IEXEC)


class DdSuiteTest(unittest.TestCase):
    def test_dd_suite_through_the_launcher(self):
        with tempfile.TemporaryDirectory() as tmp:
            os.makedirs(os.path.join(tmp, "build", "bin"))
            executable(os.path.join(tmp, "build", "bin", "haloex-md"), FAKE_MD.format(python=sys.executable))
            mpirun = os.path.join(tmp, "mpirun")
            executable(mpirun, FAKE_MPIRUN)
            out = io.StringIO()
            os.environ["HALOEX_PDL"] = "0"
            try:
                with contextlib.redirect_stdout(out):
                    rc = md_bench.main(["dd", "--build", os.path.join(tmp, "build"), "--sizes", "22500",
                                        "--variants", "nvshmem/tma,nccl", "--mpirun", mpirun, "--out", tmp])
            finally:
                del os.environ["HALOEX_PDL"]
            self.assertEqual(rc, 0)
            records = [f for f in os.listdir(tmp) if f.startswith("md-dd-") and f.endswith(".json")]
            self.assertEqual(len(records), 1, os.listdir(tmp))
            with open(os.path.join(tmp, records[0])) as f:
                rec = json.load(f)
        text = out.getvalue()
        # Printed: all steps first, steady beside it.
        self.assertRegex(text, r"22500 nvshmem/tma\s*:\s+40\.6 us/step all steps \(32\.5 steady, search step 0\.50 ms\)")
        self.assertIn("no result", text)  # the refused nccl run
        # The record: header, settings, runs.
        self.assertEqual(rec["schema_version"], bench_common.SCHEMA_VERSION)
        self.assertEqual(rec["benchmark"], "haloex-md dd")
        for key in ("machine", "commit", "date", "settings", "runs", "schema_note"):
            self.assertIn(key, rec)
        s = rec["settings"]
        self.assertEqual(s["HALOEX_PDL"], "0")
        self.assertTrue(s["pdl"].startswith("off"))
        self.assertIn(mpirun, s["launcher"])
        self.assertIn("-np 2", s["launcher"])
        self.assertEqual(s["binding"], "--bind-to none")
        self.assertIn("mps", s)
        runs = {r["label"]: r for r in rec["runs"]}
        self.assertEqual(set(runs), {"1gpu", "nvshmem/tma", "nccl/auto"})
        self.assertEqual(runs["1gpu"]["ranks"], 1)
        self.assertFalse(runs["1gpu"]["command"].startswith(mpirun))  # one rank: no launcher
        self.assertTrue(runs["nvshmem/tma"]["command"].startswith(mpirun + " --allow-run-as-root --oversubscribe "
                                                                  "--bind-to none -np 2 "))
        self.assertEqual(runs["nvshmem/tma"]["ranks"], 2)
        self.assertEqual(runs["nvshmem/tma"]["pdl_env"], "0")
        self.assertEqual(runs["nvshmem/tma"]["nvls"], "1")
        self.assertIn("error", runs["nccl/auto"])
        f = bench_common.md_figures(runs["nvshmem/tma"])
        self.assertAlmostEqual(f.us_per_step, 32.5 * 1.25)

    def test_nstlist_suite_runs_each_size_at_the_fixed_values_and_auto(self):
        with tempfile.TemporaryDirectory() as tmp:
            os.makedirs(os.path.join(tmp, "build", "bin"))
            executable(os.path.join(tmp, "build", "bin", "haloex-md"), FAKE_MD.format(python=sys.executable))
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                rc = md_bench.main(["nstlist", "--build", os.path.join(tmp, "build"), "--sizes", "22500",
                                    "--nstlists", "50,200", "--out", tmp])
            self.assertEqual(rc, 0)
            records = [f for f in os.listdir(tmp) if f.startswith("md-nstlist-") and f.endswith(".json")]
            self.assertEqual(len(records), 1, os.listdir(tmp))
            with open(os.path.join(tmp, records[0])) as f:
                rec = json.load(f)
        self.assertEqual(rec["benchmark"], "haloex-md nstlist")
        self.assertEqual(rec["settings"]["nstlists"], "50,200")
        runs = {r["label"]: r["argv"] for r in rec["runs"]}
        self.assertEqual(list(runs), ["nstlist=auto", "nstlist=50", "nstlist=200"])
        option = lambda argv, name: argv[argv.index(name) + 1]  # noqa: E731
        self.assertEqual(option(runs["nstlist=auto"], "--nstlist"), "0")
        self.assertEqual(option(runs["nstlist=50"], "--steps"), "3000")  # the usual count: 60 searches
        self.assertEqual(option(runs["nstlist=200"], "--steps"), "4000")  # 20 searches at least
        self.assertEqual(option(runs["nstlist=auto"], "--steps"), "4000")  # room for the longest candidate
        self.assertIn("nstlist=200", out.getvalue())

    def test_ablation_variants_side_by_side(self):
        # The dd default runs the ablations beside every path; each label names the settings that differ from
        # the series' convention, and the command asks for exactly those.
        labels = [v.label for v in md_bench.ALL_VARIANTS]
        for want in ("nccl/auto", "nccl/auto graphs=1", "nvshmem/direct", "nvshmem/direct graphs=0",
                     "nvshmem/direct per-pulse", "nccl-device/auto"):
            self.assertIn(want, labels)
        self.assertEqual(len(set(labels)), len(labels))
        by = {v.label: v for v in md_bench.ALL_VARIANTS}
        self.assertIn("--cuda-graphs 0", " ".join(by["nccl/auto"].args()))
        self.assertIn("--cuda-graphs 1", " ".join(by["nccl/auto graphs=1"].args()))
        self.assertIn("--cuda-graphs 0", " ".join(by["nvshmem/direct graphs=0"].args()))
        per_pulse = " ".join(by["nvshmem/direct per-pulse"].args())
        self.assertIn("--cuda-graphs 1", per_pulse)
        self.assertIn("--nvshmem-launch per-pulse", per_pulse)
        self.assertNotIn("--nvshmem-launch", " ".join(by["nvshmem/direct"].args()))
        self.assertEqual(by["nvshmem/direct per-pulse"].settings(),
                         {"cuda_graphs_requested": True, "nvshmem_launch": "per-pulse", "sort_atoms": None,
                          "fuse_update": None, "nstlist_requested": None})
        # The scaling suite keeps the paths it always ran.
        self.assertEqual([v.label for v in md_bench.BASE_VARIANTS],
                         ["staged/auto", "ipc/auto", "nccl/auto", "nvshmem/direct", "nvshmem/tma", "nvshmem/put"])

    def test_parse_variants(self):
        self.assertEqual([v.label for v in md_bench.parse_variants("nccl,nccl+graphs=1,nvshmem/direct+per-pulse,"
                                                                   "nvshmem/tma graphs=0,nvshmem/put+graphs=1,"
                                                                   "nvshmem/direct+sorted")],
                         ["nccl/auto", "nccl/auto graphs=1", "nvshmem/direct per-pulse", "nvshmem/tma graphs=0",
                          "nvshmem/put", "nvshmem/direct sorted"])
        # A label parses back to its variant (the estimate's records name variants by label).
        for v in md_bench.parse_variants("ipc+sorted,nvshmem/direct graphs=0 sorted,nvshmem/direct+sorted+fused-update,"
                                         "nvshmem/direct+unsorted+unfused-update"):
            self.assertEqual(md_bench.parse_variant(v.label), v)
        sorted_args = " ".join(md_bench.parse_variant("nvshmem/direct+sorted").args())
        self.assertIn("--sort-atoms 1", sorted_args)
        self.assertNotIn("--sort-atoms", " ".join(md_bench.parse_variant("nvshmem/direct").args()))
        fused = md_bench.parse_variant("nvshmem/direct+fused-update")
        self.assertEqual(fused.label, "nvshmem/direct fused-update")
        self.assertIn("--fuse-update 1", " ".join(fused.args()))
        self.assertTrue(fused.settings()["fuse_update"])
        self.assertNotIn("--fuse-update", " ".join(md_bench.parse_variant("nvshmem/direct").args()))
        # No word: haloex-md's auto (None in the record); the un- words ask for 0.
        plain = md_bench.parse_variant("nvshmem/direct")
        self.assertIsNone(plain.settings()["sort_atoms"])
        self.assertIsNone(plain.settings()["fuse_update"])
        neither = md_bench.parse_variant("nvshmem/direct+unsorted+unfused-update")
        self.assertEqual(neither.label, "nvshmem/direct unsorted unfused-update")
        self.assertIn("--sort-atoms 0", " ".join(neither.args()))
        self.assertIn("--fuse-update 0", " ".join(neither.args()))
        self.assertFalse(neither.settings()["sort_atoms"])
        listed = md_bench.parse_variant("nvshmem/direct+sorted+nstlist=40")
        self.assertEqual(listed.label, "nvshmem/direct sorted nstlist=40")
        self.assertEqual(md_bench.parse_variant(listed.label), listed)
        self.assertIn("--nstlist 40", " ".join(listed.args()))
        self.assertEqual(listed.settings()["nstlist_requested"], 40)
        self.assertNotIn("--nstlist", " ".join(md_bench.parse_variant("nvshmem/direct").args()))
        for bad in ("nccl+per-pulse", "nvshmem/direct+graphs=2", "nvshmem/direct+sort", "ipc+fuse-update",
                    "nvshmem/direct+nstlist=0", "nvshmem/direct+nstlist=x", "nvshmem/direct+nstlist"):
            with self.assertRaises(SystemExit):
                md_bench.parse_variants(bad)

    def test_exchange_kernels_line(self):
        timing = {"exchange_kernels": {"forward kernel": {"median": 6.12}, "reverse kernel": {"median": 4.0},
                                       "forward p1 stores": {"median": 1.0}}}
        self.assertEqual(md_bench.exchange_kernels(timing),
                         "; inside the kernels: forward kernel 6.1, reverse kernel 4.0")
        self.assertEqual(md_bench.exchange_kernels({}), "")

    def test_dd_records_the_asked_settings(self):
        with tempfile.TemporaryDirectory() as tmp:
            os.makedirs(os.path.join(tmp, "build", "bin"))
            executable(os.path.join(tmp, "build", "bin", "haloex-md"), FAKE_MD.format(python=sys.executable))
            mpirun = os.path.join(tmp, "mpirun")
            executable(mpirun, FAKE_MPIRUN)
            with contextlib.redirect_stdout(io.StringIO()):
                md_bench.main(["dd", "--build", os.path.join(tmp, "build"), "--sizes", "22500", "--variants",
                               "nvshmem/direct,nvshmem/direct+graphs=0,nvshmem/direct+per-pulse", "--mpirun",
                               mpirun, "--out", tmp])
            [name] = [f for f in os.listdir(tmp) if f.startswith("md-dd-")]
            with open(os.path.join(tmp, name)) as f:
                runs = {r["label"]: r for r in json.load(f)["runs"]}
        self.assertEqual(set(runs), {"1gpu", "nvshmem/direct", "nvshmem/direct graphs=0", "nvshmem/direct per-pulse"})
        self.assertFalse(runs["nvshmem/direct graphs=0"]["cuda_graphs_requested"])
        self.assertIn("--cuda-graphs 0", " ".join(runs["nvshmem/direct graphs=0"]["argv"]))
        self.assertEqual(runs["nvshmem/direct per-pulse"]["nvshmem_launch"], "per-pulse")
        self.assertIn("--nvshmem-launch per-pulse", runs["nvshmem/direct per-pulse"]["command"])

    def test_describe(self):
        self.assertIn("us/step all steps", md_bench.describe({"schema_version": 2, "us_per_step": 50.0,
                                                              "ns_per_day": 1.0, "us_per_step_steady": 40.0}))
        old = md_bench.describe({"us_per_step": 40.0, "ns_per_day": 1.0, "us_per_step_with_search": 99.0})
        self.assertIn("40.0 us/step steady", old)
        self.assertNotIn("all steps (", old)
        self.assertIn("no result", md_bench.describe({"error": "boom"}))

    def test_paper_comparison_uses_all_steps(self):
        runs = [{"label": "nvshmem/tma", "atoms": 45000, "ranks": 4, "schema_version": 2, "us_per_step": 100.0,
                 "ns_per_day": 1728.0, "us_per_step_steady": 80.0, "ns_per_day_steady": 2160.0},
                {"label": "nccl/auto", "atoms": 45000, "ranks": 4, "schema_version": 2, "us_per_step": 150.0,
                 "ns_per_day": 1152.0, "us_per_step_steady": 120.0, "ns_per_day_steady": 1440.0}]
        self.assertEqual(md_bench.best_ns_per_day(runs, True), (1728.0, "all steps"))
        self.assertEqual(md_bench.best_ns_per_day(runs, False), (1152.0, "all steps"))
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            md_bench.print_paper_comparison(runs)
        self.assertIn("here 1728 vs 1152 ns/day, all steps", out.getvalue())


def dd_record(schema):
    runs = []
    for n in (22500, 45000):
        for label, ranks, us in (("1gpu", 1, n / 500), ("nvshmem/tma", 2, n / 900)):
            r = {"label": label, "atoms": n, "ranks": ranks, "us_per_step": us, "ns_per_day": 172.8e3 / us,
                 "timing": {"nonoverlap_us": 1.0, "nonlocal_us": 2.0}}
            if schema == 2:
                r.update(schema_version=2, us_per_step_steady=us * 0.8, ns_per_day_steady=172.8e3 / (us * 0.8))
            runs.append(r)
    runs.append({"label": "nccl/auto", "atoms": 22500, "error": "failed"})
    rec = {"benchmark": "haloex-md dd", "commit": "c" * 40, "date": "d", "settings": {"ranks": 2},
           "machine": {"gpu_model": "NVIDIA H200", "gpu_count": 2}, "runs": runs}
    if schema == 2:
        rec["schema_version"] = 2
    return rec


def matplotlib_importable():
    """From the interpreter's packages or .deps/python (bench_common put it on the path), built for this Python."""
    try:
        importlib.import_module("matplotlib")
        return True
    except Exception:  # noqa: BLE001 (ImportError, or wheels of another Python version)
        return False


class PlotReadersTest(unittest.TestCase):
    def test_plot_md_series(self):
        runs, figs, metric = plot_md.series(dd_record(2))
        self.assertEqual(metric, bench_common.METRIC_ALL)
        self.assertEqual(set(runs), {"1gpu", "nvshmem/tma"})
        self.assertEqual(plot_md.headline(figs[id(runs["1gpu"][22500])], metric)[0], 45.0)
        runs, figs, metric = plot_md.series(dd_record(1))
        self.assertEqual(metric, bench_common.METRIC_STEADY_SCHEMA1)
        self.assertEqual(plot_md.headline(figs[id(runs["1gpu"][22500])], metric)[0], 45.0)

    def test_plot_scaling_collect(self):
        rec = dd_record(2)
        times, rates, metric = plot_scaling.collect(rec)
        self.assertEqual(metric, bench_common.METRIC_ALL)
        self.assertEqual(times[22500]["nvshmem/tma"], {1: 45.0, 2: 25.0})
        _, _, metric = plot_scaling.collect(dd_record(1))
        self.assertEqual(metric, bench_common.METRIC_STEADY_SCHEMA1)

    @unittest.skipUnless(matplotlib_importable(), "matplotlib not importable (bench/requirements.txt)")
    @mock.patch.dict(os.environ, {"HALOEX_NO_INSTALL": "1"})  # a test never installs
    def test_plots_write_pngs(self):
        with tempfile.TemporaryDirectory() as tmp:
            for schema in (1, 2):
                path = os.path.join(tmp, f"md-dd-{schema}.json")
                with open(path, "w") as f:
                    json.dump(dd_record(schema), f)
                with contextlib.redirect_stdout(io.StringIO()):
                    plot_md.main([path, "--out", path + ".png"])
                    plot_scaling.main([path, "--out", path + ".scaling.png"])
                self.assertGreater(os.path.getsize(path + ".png"), 1000)
                self.assertGreater(os.path.getsize(path + ".scaling.png"), 1000)


if __name__ == "__main__":
    unittest.main()
