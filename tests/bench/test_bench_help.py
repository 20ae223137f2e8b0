"""Every bench/ script, and every subcommand of bench/haloex_bench.py, answers --help with exit status 0 and usage
text, with matplotlib hidden (plots must explain themselves without it) and installing switched off (run by ctest:
python3 -m unittest)."""
import glob
import os
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(REPO, "bench")
sys.path.insert(0, BENCH)
import haloex_bench  # noqa: E402


def scripts():
    """bench/*.py run as programs (those with a __main__ block), bench_common and __main__ aside."""
    out = []
    for path in sorted(glob.glob(os.path.join(BENCH, "*.py"))):
        name = os.path.basename(path)
        if name in ("bench_common.py", "__main__.py"):
            continue
        with open(path) as f:
            if '__name__ == "__main__"' in f.read():
                out.append(path)
    return out


class HelpTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        hidden = os.path.join(cls.tmp.name, "matplotlib")
        os.makedirs(hidden)
        with open(os.path.join(hidden, "__init__.py"), "w") as f:
            f.write("raise ImportError('matplotlib hidden by test_bench_help')\n")
        cls.env = dict(os.environ, PYTHONPATH=cls.tmp.name, HALOEX_NO_INSTALL="1")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def help_of(self, argv):
        done = subprocess.run([sys.executable] + argv + ["--help"], capture_output=True, text=True, env=self.env,
                              cwd=self.tmp.name, timeout=60)
        self.assertEqual(done.returncode, 0, f"{argv} --help: exit {done.returncode}\n{done.stderr}")
        self.assertIn("usage", done.stdout.lower(), f"{argv} --help printed no usage:\n{done.stdout}")
        self.assertGreater(len(done.stdout.strip().splitlines()), 2, done.stdout)
        return done.stdout

    def test_the_scripts_are_found(self):
        names = {os.path.basename(p) for p in scripts()}
        for expected in ("md_bench.py", "jacobi_bench.py", "commbench.py", "exchange_timing.py", "summarize_md.py",
                         "plot_md.py", "plot_scaling.py", "plot_jacobi.py", "plot_commbench.py", "compare_energies.py",
                         "migrate_records.py", "haloex_bench.py"):
            self.assertIn(expected, names)

    def test_every_script(self):
        for path in scripts():
            with self.subTest(script=os.path.basename(path)):
                self.help_of([path])

    def test_every_subcommand(self):
        top = self.help_of([os.path.join(BENCH, "haloex_bench.py")])
        for name in haloex_bench.COMMANDS:
            self.assertIn(name, top)
            with self.subTest(subcommand=name):
                self.help_of([os.path.join(BENCH, "haloex_bench.py"), name])

    def test_the_package_entry(self):
        self.help_of([BENCH])

    def test_plot_without_matplotlib_names_the_projects_way(self):
        record = os.path.join(REPO, "bench", "results", "md-dd-2xH200-2026-11-29.json")
        done = subprocess.run([sys.executable, os.path.join(BENCH, "plot_md.py"), record, "--out",
                               os.path.join(self.tmp.name, "x.png")], capture_output=True, text=True, env=self.env,
                              timeout=60)
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("python3 -m pip install --target .deps/python -r bench/requirements.txt", done.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp.name, "x.png")))

    def test_unknown_subcommand(self):
        done = subprocess.run([sys.executable, os.path.join(BENCH, "haloex_bench.py"), "nonsense"],
                              capture_output=True, text=True, env=self.env, timeout=60)
        self.assertEqual(done.returncode, 2)
        self.assertIn("unknown subcommand", done.stderr)


if __name__ == "__main__":
    unittest.main()
