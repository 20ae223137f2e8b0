"""bench/headline.py and the README's figure (run by ctest: python3 -m unittest): the committed figure was drawn from
the records as they are in the tree (its sha256 text chunk against the files: change a record, redraw the figure),
what each column shows is computed from the records (all steps counted; "not measured" where nothing is), and the
README shows it on its first screen."""
import json
import os
import shutil
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "bench"))
import headline  # noqa: E402

FIGURE = os.path.join(REPO, headline.FIGURE)


def have_matplotlib():
    try:
        import matplotlib  # noqa: F401
        return True
    except ImportError:
        return False


class CommittedFigureTest(unittest.TestCase):
    def test_drawn_from_the_records_in_the_tree(self):
        self.assertEqual(headline.check(FIGURE), [])

    def test_carries_every_source_and_its_checksum(self):
        recorded = json.loads(headline.png_text(FIGURE)[headline.METADATA_KEY])
        self.assertEqual(recorded, headline.sources_metadata())

    def test_a_changed_record_fails_the_check(self):
        with tempfile.TemporaryDirectory() as tmp:
            for rel in headline.SOURCES.values():
                os.makedirs(os.path.dirname(os.path.join(tmp, rel)), exist_ok=True)
                shutil.copy(os.path.join(REPO, rel), os.path.join(tmp, rel))
            self.assertEqual(headline.check(FIGURE, tmp), [])
            changed = os.path.join(tmp, headline.SOURCES[1])
            with open(changed, "a") as f:
                f.write(" ")
            problems = headline.check(FIGURE, tmp)
            self.assertEqual(len(problems), 1, problems)
            self.assertIn("changed since the figure was drawn", problems[0])
            self.assertIn("python3 bench headline --out", problems[0])
            os.remove(changed)
            self.assertIn("not in the tree", " ".join(headline.check(FIGURE, tmp)))

    def test_readme_shows_it_first(self):
        with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
            first_screen = "".join(f.readlines()[:30])
        self.assertIn(f"]({headline.FIGURE})", first_screen)


class PanelsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.panels = {g: headline.panel(headline.load(rel), g) for g, rel in headline.SOURCES.items()}

    def test_one_gpu_against_gromacs_of_the_same_allocation(self):
        p = self.panels[1]
        self.assertEqual(sorted(p["haloex"]), [5626, 11250, 22500, 45000, 90000, 180000, 360000, 720000])
        # Every step counted, the automatic nstlist alone: the record also holds nstlist 100 and 200 at 22 500.
        self.assertEqual(p["haloex"][22500][0], 34.1215205)
        self.assertEqual(p["haloex"][22500][3], 1)
        self.assertAlmostEqual(p["gromacs"][22500][0], 75.18496300739852)  # automatic, without CUDA graphs
        self.assertAlmostEqual(p["ratios"]["gromacs"][22500], 75.18496300739852 / 34.1215205)
        self.assertEqual(p["cpu"], {})  # one GPU: no exchange, no transport to compare
        bar = dict(p["bars"])["haloex\n22,500"]
        self.assertAlmostEqual(sum(bar.values()), 34.1215205)
        steady = [r for r in headline.load(headline.SOURCES[1])["runs"] if r["atoms"] == 22500
                  and headline.automatic_nstlist(r)][0]["us_per_step_steady"]
        self.assertAlmostEqual(bar["search, per step"], 34.1215205 - steady)

    def test_two_gpus_nvshmem_against_the_best_cpu_orchestrated(self):
        p = self.panels[2]
        self.assertEqual(len(p["haloex"]), 6)
        self.assertEqual(p["cpu_names"], {22500: "staged"})
        self.assertAlmostEqual(p["ratios"]["cpu"][22500], 128.8409835 / 50.2475345)
        self.assertEqual(p["gromacs"], {})  # not measured in that allocation
        parts = dict(p["bars"])["nvshmem\n22,500"]
        self.assertAlmostEqual(sum(parts.values()), 50.2475345)
        self.assertAlmostEqual(parts["exposed exchange"], 11.593600071500987)

    def test_four_gpus_not_measured_all_steps(self):
        p = self.panels[4]
        self.assertEqual((p["haloex"], p["cpu"], p["gromacs"], p["bars"]), ({}, {}, {}, []))

    def test_spread_only_from_three_repeats(self):
        rec = {"schema_version": 2, "runs": [
            {"schema_version": 2, "atoms": 1000, "ranks": 2, "transport": "nvshmem", "us_per_step": us,
             "us_per_step_steady": us - 1} for us in (10.0, 12.0, 11.0)]}
        self.assertEqual(headline.panel(rec, 2)["haloex"][1000], (11.0, 10.0, 12.0, 3))


class DrawTest(unittest.TestCase):
    @unittest.skipUnless(have_matplotlib(), "matplotlib is not importable (bench/requirements.txt; scripts/test.sh "
                                            "installs it into .deps/python)")
    def test_draw_writes_the_checksums(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "headline.png")
            headline.draw(out)
            self.assertEqual(headline.check(out), [])


if __name__ == "__main__":
    unittest.main()
