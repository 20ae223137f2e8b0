"""bench/bench_common.py's Python environment and plot output (run by ctest: python3 -m unittest):
.deps/python comes before the interpreter's site- and dist-packages (Debian's python3-numpy must not shadow the numpy
matplotlib needs) and after PYTHONPATH; a failed dependency install says what failed instead of repeating itself; a
plot without --out never writes beside its record (where a committed PNG is)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(REPO, "bench")
sys.path.insert(0, BENCH)
import bench_common  # noqa: E402


def write_module(folder, name, value):
    os.makedirs(os.path.join(folder, name), exist_ok=True)
    with open(os.path.join(folder, name, "__init__.py"), "w") as f:
        f.write(f"VALUE = {value!r}\n")


def have_matplotlib():
    try:
        import matplotlib  # noqa: F401
        return True
    except ImportError:
        return False


class PathOrderTest(unittest.TestCase):
    """A copy of bench/ in a checkout of its own, with a stand-in module in its .deps/python and another in a
    'dist-packages' folder where Debian's python3 keeps its packages."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        root = self.tmp.name
        shutil.copytree(BENCH, os.path.join(root, "checkout", "bench"), ignore=shutil.ignore_patterns("results"))
        write_module(os.path.join(root, "checkout", ".deps", "python"), "haloex_probe", "deps")
        self.system = os.path.join(root, "usr", "lib", "python3", "dist-packages")
        write_module(self.system, "haloex_probe", "system")
        self.override = os.path.join(root, "override")
        write_module(self.override, "haloex_probe", "override")
        self.bench = os.path.join(root, "checkout", "bench")

    def tearDown(self):
        self.tmp.cleanup()

    def probe(self, pythonpath=None):
        code = (f"import sys; sys.path.append({self.system!r}); sys.path.insert(0, {self.bench!r}); "
                f"import bench_common, haloex_probe; print(haloex_probe.VALUE)")
        env = dict(os.environ, PYTHONNOUSERSITE="1")
        env.pop("PYTHONPATH", None)
        if pythonpath:
            env["PYTHONPATH"] = pythonpath
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
        self.assertEqual(done.returncode, 0, done.stderr)
        return done.stdout.strip()

    def test_project_environment_before_the_system_packages(self):
        self.assertEqual(self.probe(), "deps")

    def test_pythonpath_still_first(self):
        # What the caller puts on PYTHONPATH on purpose (test_bench_help hides matplotlib so) stays ahead.
        self.assertEqual(self.probe(self.override), "override")

    def test_inserted_before_the_first_site_folder(self):
        saved = list(sys.path)
        try:
            sys.path[:] = ["/x/bench", "/usr/lib/python3.11", "/usr/lib/python3/dist-packages", "/y/site-packages"]
            deps = os.path.join(self.tmp.name, "checkout", ".deps", "python")
            self.assertTrue(bench_common.use_project_environment(deps))
            self.assertEqual(sys.path, ["/x/bench", "/usr/lib/python3.11", deps, "/usr/lib/python3/dist-packages",
                                        "/y/site-packages"])
        finally:
            sys.path[:] = saved


class InstallHintTest(unittest.TestCase):
    MODULE = "haloex_module_that_does_not_exist"

    def require(self, command_status, env=None):
        fake = [sys.executable, "-c", f"import sys; sys.exit({command_status})"]
        with mock.patch.object(bench_common, "install_command", return_value=fake), \
                mock.patch.dict(os.environ, env or {"HALOEX_NO_INSTALL": "0"}), \
                mock.patch("sys.stderr"):
            with self.assertRaises(SystemExit) as raised:
                bench_common.require(self.MODULE)
        return str(raised.exception.code)

    def test_failed_install_says_so_without_repeating_it(self):
        text = self.require(3)
        self.assertIn("just failed (pip exit 3", text)
        self.assertIn("pip download", text)
        self.assertNotIn("pip install --target", text)

    def test_install_that_does_not_help_names_the_import_error(self):
        text = self.require(0)
        self.assertIn(f"`import {self.MODULE}` still fails", text)
        self.assertIn("No module named", text)
        self.assertNotIn("pip install --target", text)

    def test_no_install_gives_the_command(self):
        text = self.require(0, {"HALOEX_NO_INSTALL": "1"})
        self.assertIn("python3 -m pip install --target .deps/python -r bench/requirements.txt", text)


class PlotOutputTest(unittest.TestCase):
    @unittest.skipUnless(have_matplotlib(), "matplotlib is not importable (bench/requirements.txt; scripts/test.sh "
                                            "installs it into .deps/python)")
    def test_plot_without_out_leaves_the_committed_png_alone(self):
        with tempfile.TemporaryDirectory() as tmp:
            record = os.path.join(tmp, "md-dd-2xH200-2026-11-29.json")
            shutil.copy(os.path.join(REPO, "bench", "results", "md-dd-2xH200-2026-11-29.json"), record)
            committed = os.path.join(tmp, "md-dd-2xH200-2026-11-29.png")
            with open(committed, "wb") as f:
                f.write(b"the committed figure")
            out = os.path.join(tmp, "plots")
            done = subprocess.run([sys.executable, BENCH, "plot", record], capture_output=True, text=True,
                                  env=dict(os.environ, HALOEX_BENCH_OUT=out, HALOEX_NO_INSTALL="1"), timeout=120)
            self.assertEqual(done.returncode, 0, done.stderr)
            with open(committed, "rb") as f:
                self.assertEqual(f.read(), b"the committed figure")
            written = os.path.join(out, "md-dd-2xH200-2026-11-29.png")
            self.assertIn(f"wrote {written}", done.stdout)
            self.assertGreater(os.path.getsize(written), 1000)

    def test_default_path_is_out_plots(self):
        self.assertEqual(bench_common.default_plot_path("/anywhere/bench/results/x-1.json"),
                         os.path.join(bench_common.PLOT_DIR, "x-1.png"))
        self.assertNotIn(os.path.join("bench", "results"), bench_common.PLOT_DIR)


if __name__ == "__main__":
    unittest.main()
