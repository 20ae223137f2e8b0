"""bench/summarize_md.py: end-to-end figures first, schema-1 records named as steady only, newer schemas refused,
the haloex vs GROMACS table (run by ctest: python3 -m unittest)."""
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "bench"))
import summarize_md as sm  # noqa: E402

SCRIPT = os.path.join(REPO, "bench", "summarize_md.py")


def run2(atoms, label, us, steady, ranks=2, **extra):
    r = {"program": "haloex-md", "schema_version": 2, "atoms": atoms, "ranks": ranks, "label": label,
         "us_per_step": us, "ns_per_day": 172.8 / us * 1000, "us_per_step_steady": steady,
         "ns_per_day_steady": 172.8 / steady * 1000, "search_step_ms": 0.75, "startup_seconds": 2.0,
         "host_syncs_per_step": 0.0, "conserved_drift_per_atom": 2.1e-05,
         "timing": {"local_us": 30.0, "nonlocal_us": 20.0, "nonoverlap_us": 3.0},
         "settings": {"nstlist": 80, "nstlist_reason": "nstlist 80 of 6 candidates: ...", "rlist": 1.012}}
    r.update(extra)
    return r


SUITE2 = {"schema_version": 2, "benchmark": "haloex-md dd", "commit": "abc123", "date": "2026-12-01T00:00:00Z",
          "machine": {"host": "h", "gpu_model": "NVIDIA H200", "gpu_count": 2},
          "settings": {"ranks": 2, "grid": "auto"},
          "runs": [run2(22500, "1gpu", 60.25, 41.0, ranks=1), run2(22500, "nvshmem/tma", 55.5, 40.5),
                   {"label": "nccl/auto", "atoms": 22500, "error": "timeout after 300 s"}]}
SUITE1 = {"benchmark": "haloex-md dd", "commit": "old", "date": "2026-11-29", "machine": {"host": "vm"},
          "settings": {"ranks": 2}, "runs": [{"label": "1gpu", "atoms": 22500, "ranks": 1, "us_per_step": 41.0,
                                              "ns_per_day": 4214.6, "us_per_step_with_search": 126.4}]}
GROMACS = {"tool": "gromacs", "version": "2026.0", "atoms": 22500, "nstlist": 100, "rlist": 1.035,
           "nstlist_auto": True, "steps": 20000, "us_per_step": 44.4, "ns_per_day": 3891.9, "drift": 3.0e-05,
           "command": "gmx mdrun -s topol.tpr -nb gpu -pme gpu"}


def rows(text, marker="| 22500"):
    return [line for line in text.splitlines() if line.startswith(marker)]


class TablesTest(unittest.TestCase):
    def test_schema2_all_steps_first(self):
        t = sm.summarize(SUITE2)
        header = next(line for line in t.splitlines() if line.startswith("| atoms"))
        cols = [c.strip() for c in header.strip("|").split("|")]
        self.assertEqual(cols[3:8], ["us/step all steps", "us/step steady", "search step ms", "ns/day all steps",
                                     "ns/day steady"])
        r = rows(t)
        self.assertEqual(len(r), 3)
        cells = [c.strip() for c in r[1].strip("|").split("|")]
        self.assertEqual(cells[2:7], ["nvshmem/tma", "55.5", "40.5", "0.75", "3113.5"])
        # The one-time start-up has its own last column, never inside a per-step figure.
        self.assertEqual(cols[-1], "start-up s")
        self.assertEqual(cells[-1], "2.00")
        self.assertIn("timeout", r[2])
        self.assertNotIn("schema-1 record", t)
        self.assertIn("schema 2", t)

    def test_schema1_steady_only_and_said_so(self):
        t = sm.summarize(SUITE1)
        cells = [c.strip() for c in rows(t)[0].strip("|").split("|")]
        self.assertEqual(cells[3:8], ["n/a", "41.0", "n/a", "n/a", "4214.6"])
        self.assertIn("schema-1 record", t)
        self.assertNotIn("126.4", t)  # the with-search figure (start-up folded in) is never shown as all steps

    def test_single_suite(self):
        rec = {"schema_version": 2, "benchmark": "haloex-md single", "commit": "c", "date": "d", "machine": {},
               "runs": [run2(22500, "1gpu graphs=1", 52.0, 40.0, ranks=1),
                        run2(22500, "1gpu graphs=0", 57.0, 44.0, ranks=1)]}
        t = sm.summarize(rec)
        cells = [c.strip() for c in rows(t)[0].strip("|").split("|")]
        self.assertEqual(cells, ["22500", "52.0", "40.0", "0.75", "3323.1", "4320.0", "44.0", "56"])

    def test_single_haloex_md_record(self):
        t = sm.summarize(run2(45000, None, 70.0, 60.0))
        self.assertIn("| 45000 | 2 |", t)
        self.assertIn("70.0", t)

    def test_newer_schema_refused(self):
        with self.assertRaises(sm.SchemaError):
            sm.summarize(dict(SUITE2, schema_version=3))
        with self.assertRaises(sm.SchemaError):
            sm.summarize(dict(SUITE2, runs=[run2(22500, "x", 1.0, 1.0, schema_version=5)]))

    def test_unknown_record(self):
        with self.assertRaises(ValueError):
            sm.summarize({"tool": "bench/jacobi_bench.py", "sizes": []})


class GromacsTest(unittest.TestCase):
    def test_records_of_every_shape(self):
        self.assertEqual(len(sm.gromacs_records(GROMACS)), 1)
        self.assertEqual(len(sm.gromacs_records([GROMACS, dict(GROMACS, atoms=45000), {"tool": "other"}])), 2)
        self.assertEqual(len(sm.gromacs_records({"schema_version": 2, "tool": "gromacs",
                                                 "runs": [dict(GROMACS), {k: v for k, v in GROMACS.items()
                                                                          if k != "tool"}]})), 2)
        with self.assertRaises(ValueError):
            sm.gromacs_records({"tool": "haloex"})
        with self.assertRaises(sm.SchemaError):
            sm.gromacs_records(dict(GROMACS, schema_version=99))

    def test_ratio_nstlist_rlist_drift(self):
        t = sm.gromacs_table(SUITE2, [GROMACS, dict(GROMACS, atoms=90000)])
        r = rows(t)
        self.assertEqual(len(r), 2)  # both haloex runs of 22 500 atoms, none for 90 000
        cells = [c.strip() for c in r[1].strip("|").split("|")]
        self.assertEqual(cells[1:5], ["nvshmem/tma", "55.5", "44.4", f"{55.5 / 44.4:.2f}"])
        self.assertEqual(cells[5:11], ["80 (auto)", "100 (auto)", "1.012", "1.035", "2.1e-05", "3e-05"])
        self.assertEqual(cells[11], "2026.0")

    def test_ranks_must_match_where_given(self):
        t = sm.gromacs_table(SUITE2, [dict(GROMACS, ranks=1)])
        self.assertEqual([c.strip() for c in rows(t)[0].strip("|").split("|")][1], "1gpu")
        self.assertEqual(len(rows(t)), 1)

    def test_label_filter_and_set_nstlist(self):
        suite = dict(SUITE2, runs=[run2(22500, "1gpu", 60.0, 41.0, ranks=1,
                                        settings={"nstlist": 40, "nstlist_reason": "set by --nstlist", "rlist": 1.0})])
        t = sm.gromacs_table(suite, [dict(GROMACS, nstlist_auto=False)], label="1gpu")
        cells = [c.strip() for c in rows(t)[0].strip("|").split("|")]
        self.assertEqual(cells[5:7], ["40 (set)", "100 (set)"])
        self.assertIn("no haloex run", sm.gromacs_table(suite, [GROMACS], label="nvshmem/tma"))

    def test_schema1_has_no_ratio(self):
        t = sm.gromacs_table(SUITE1, [GROMACS])
        cells = [c.strip() for c in rows(t)[0].strip("|").split("|")]
        self.assertEqual(cells[2:5], ["n/a", "44.4", "n/a"])
        self.assertIn("schema-1 record", t)


class CommandLineTest(unittest.TestCase):
    def test_help(self):
        done = subprocess.run([sys.executable, SCRIPT, "--help"], capture_output=True, text=True, timeout=60)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("usage:", done.stdout)

    def test_files_with_gromacs(self):
        with tempfile.TemporaryDirectory() as tmp:
            md, gro = os.path.join(tmp, "md.json"), os.path.join(tmp, "gmx.json")
            with open(md, "w") as f:
                json.dump(SUITE2, f)
            with open(gro, "w") as f:
                json.dump(GROMACS, f)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                self.assertEqual(sm.main([md, "--gromacs", gro]), 0)
            self.assertIn("haloex vs GROMACS", out.getvalue())
            self.assertIn("us/step all steps", out.getvalue())
            newer = os.path.join(tmp, "new.json")
            with open(newer, "w") as f:
                json.dump(dict(SUITE2, schema_version=3), f)
            done = subprocess.run([sys.executable, SCRIPT, newer], capture_output=True, text=True, timeout=60)
            self.assertNotEqual(done.returncode, 0)
            self.assertIn("newer than this reader", done.stderr)

    def test_gromacs_from_a_haloex_vs_gromacs_record(self):
        # The file scripts/device/run.sh's stage gromacs makes: haloex runs and gromacs_runs side by side.
        both = dict(SUITE2, gromacs_runs=[dict(GROMACS, tool="gromacs")])
        self.assertEqual(sm.gromacs_records(both)[0]["us_per_step"], 44.4)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "md-vs-gromacs.json")
            with open(path, "w") as f:
                json.dump(both, f)
            for argv in ([path, "--gromacs", path], [path]):
                out = io.StringIO()
                with contextlib.redirect_stdout(out):
                    self.assertEqual(sm.main(argv), 0)
                table = out.getvalue().split("haloex vs GROMACS", 1)
                self.assertEqual(len(table), 2, f"{argv}: no haloex vs GROMACS table")
                ratio = [c.strip() for c in rows(table[1], "| 22500 | nvshmem/tma")[0].strip("|").split("|")]
                self.assertEqual(ratio[2:5], ["55.5", "44.4", "1.25"])

    def test_committed_gromacs_records_are_found(self):
        for name in ("md-vs-gromacs-1xH200-2026-12-02.json", "md-vs-gromacs-1xH200-2026-12-04.json"):
            with open(os.path.join(REPO, "bench", "results", name)) as f:
                self.assertGreaterEqual(len(sm.gromacs_records(json.load(f), name)), 6, name)

    def test_summary_line_runs_keep_their_all_steps_figure(self):
        # A run the record took from a summary line has no schema_version: the record's schema 2 says what it is.
        rec = {"schema_version": 2, "benchmark": "x", "runs": [
            {"label": "hx-90000-auto", "atoms": 90000, "us_per_step": 121.8, "us_per_step_steady": 111.2,
             "from_summary_line": True}]}
        t = sm.summarize(rec)
        cells = [c.strip() for c in rows(t, "| 90000")[0].strip("|").split("|")]
        self.assertEqual(cells[3:5], ["121.8", "111.2"])
        self.assertNotIn("schema-1 record", t)

    def test_every_committed_md_record_summarizes(self):
        results = os.path.join(REPO, "bench", "results")
        for d, _, files in os.walk(results):
            for name in files:
                path = os.path.join(d, name)
                if not name.endswith(".json"):
                    continue
                with open(path) as f:
                    rec = json.load(f)
                if rec.get("program") != "haloex-md" and not str(rec.get("benchmark", "")).startswith("haloex-md"):
                    continue
                with self.subTest(path=path):
                    self.assertIn("us/step all steps", sm.summarize(rec, path))


if __name__ == "__main__":
    unittest.main()
