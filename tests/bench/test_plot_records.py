"""`python3 bench plot` draws every record the docs quote (run by ctest: python3 -m unittest): each has a plot kind,
and (with matplotlib) each plot writes its PNG; a record of no known kind is refused with the kinds listed."""
import glob
import importlib
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(REPO, "bench")
sys.path.insert(0, BENCH)
import haloex_bench  # noqa: E402

RESULTS = os.path.join(REPO, "bench", "results")
NAME = re.compile(r"(?:bench/results/)?((?:[A-Za-z0-9_-]+/)?[A-Za-z0-9_.-]+\.json)")


def quoted_records():
    """The records under bench/results that README.md, bench/README.md and docs/*.md name (with or without the
    bench/results/ prefix); names that are no record there (examples such as run.json) are left out."""
    found = set()
    pages = [os.path.join(REPO, "README.md"), os.path.join(REPO, "bench", "README.md")]
    for page in pages + sorted(glob.glob(os.path.join(REPO, "docs", "*.md"))):
        with open(page, encoding="utf-8") as f:
            for name in NAME.findall(f.read()):
                for candidate in [os.path.join(RESULTS, name)] + glob.glob(os.path.join(RESULTS, "*", name)):
                    if os.path.isfile(candidate):
                        found.add(os.path.relpath(candidate, REPO))
    return sorted(found)


def have_matplotlib():
    try:
        import matplotlib  # noqa: F401
        return True
    except ImportError:
        return False


class QuotedRecordsTest(unittest.TestCase):
    def test_the_docs_quote_records(self):
        quoted = quoted_records()
        self.assertGreater(len(quoted), 15, quoted)
        for expected in ("bench/results/md-dd-2xH200-2026-12-01.json",
                         "bench/results/md-vs-gromacs-1xH200-2026-12-02.json",
                         "bench/results/md-vs-gromacs-1xH200-2026-12-04.json"):
            self.assertIn(expected, quoted)

    def test_every_quoted_record_has_a_plot_kind(self):
        for rel in quoted_records():
            with open(os.path.join(REPO, rel)) as f:
                self.assertIsNotNone(haloex_bench.plot_kind(json.load(f)), f"{rel}: no plot for its kind")

    def test_kinds_by_content(self):
        self.assertEqual(haloex_bench.plot_kind({"benchmark": "haloex-md dd", "runs": []}), "plot_md")
        self.assertEqual(haloex_bench.plot_kind({"benchmark": "a hand-made series", "runs": [{"atoms": 1}]}),
                         "plot_runs")
        self.assertEqual(haloex_bench.plot_kind({"gromacs_runs": [{"atoms": 1}], "runs": []}), "plot_runs")
        self.assertEqual(haloex_bench.plot_kind({"program": "haloex-md", "atoms": 5}), "plot_run")
        self.assertEqual(haloex_bench.plot_kind({"driver": "bench/exchange_timing.py", "results": []}),
                         "plot_exchange_timing")
        self.assertEqual(haloex_bench.plot_kind({"tool": "bench/rdc_cost.py"}), "plot_rdc_cost")
        self.assertEqual(haloex_bench.plot_kind({"tool": "bench/fit_nstlist.py"}), "plot_nstlist_fit")
        self.assertIsNone(haloex_bench.plot_kind({"something": "else"}))

    def test_unknown_kind_refused_with_the_kinds(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "x.json")
            with open(path, "w") as f:
                json.dump({"something": "else"}, f)
            done = subprocess.run([sys.executable, BENCH, "plot", path], capture_output=True, text=True, timeout=60)
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("no plot for this kind of record", done.stderr)
        self.assertIn("plot_runs.py", done.stderr)

    @unittest.skipUnless(have_matplotlib(), "matplotlib is not importable (bench/requirements.txt; scripts/test.sh "
                                            "installs it into .deps/python)")
    def test_every_quoted_record_plots(self):
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        with tempfile.TemporaryDirectory() as tmp:
            for rel in quoted_records():
                with open(os.path.join(REPO, rel)) as f:
                    module = importlib.import_module(haloex_bench.plot_kind(json.load(f)))
                out = os.path.join(tmp, os.path.basename(rel) + ".png")
                with self.subTest(record=rel):
                    module.main([os.path.join(REPO, rel), "--out", out])
                    self.assertGreater(os.path.getsize(out), 5000, rel)
                plt.close("all")


if __name__ == "__main__":
    unittest.main()
