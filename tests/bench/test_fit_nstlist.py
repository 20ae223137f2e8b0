"""bench/fit_nstlist.py without a GPU: runs made from known constants are fitted back to them, the choice table
names the nstlist the runs measured fastest, the model's constants are read from its C++ source, and records it
cannot use are refused with the reason (run by ctest: python3 -m unittest)."""
import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "bench"))
import fit_nstlist  # noqa: E402

KNOWN = {"kStepFixedUs": 12.0, "kInnerPairNs": 0.006, "kOuterPairNs": 0.002, "kSearchFixedUs": 250.0,
         "kSearchAtomNs": 0.5, "kSearchPairNs": 0.012}
# The radii haloex-md's buffer gives each nstlist at the default tolerance (inner: 8 prune parts).
RLIST = {40: 0.96, 50: 0.985, 80: 1.065, 150: 1.13}


def run(atoms, nstlist, c=KNOWN, label=None, graphs=True):
    p = {"atoms": atoms, "nstlist": nstlist, "rlist": RLIST[nstlist], "inner": 0.92}
    kn = atoms / 1000.0
    outer, inner = fit_nstlist.pairs_per_atom(p["rlist"]), fit_nstlist.pairs_per_atom(p["inner"])
    steady = c["kStepFixedUs"] + kn * (c["kInnerPairNs"] * inner + c["kOuterPairNs"] * (outer - inner))
    beyond = c["kSearchFixedUs"] + kn * (c["kSearchAtomNs"] + c["kSearchPairNs"] * outer)
    return {"label": label or f"nstlist={nstlist}", "atoms": atoms, "ranks": 1, "search": "device",
            "cuda_graphs": graphs, "us_per_step": steady + beyond / nstlist, "us_per_step_steady": steady,
            "search_step_ms": (beyond + steady) / 1e3,
            "settings": {"nstlist": nstlist, "rlist": RLIST[nstlist], "rlist_inner": 0.92}}


def record():
    runs = [run(n, k) for n in (22500, 90000, 720000) for k in (40, 50, 80, 150)]
    runs.append(run(22500, 150, label="nstlist=auto"))
    runs.append(dict(run(22500, 50), cuda_graphs=False, us_per_step=1.0))  # not the model's: ignored
    return {"runs": runs}


class FitNstlistTest(unittest.TestCase):
    def test_runs_made_from_known_constants_fit_back_to_them(self):
        fitted = fit_nstlist.fit(fit_nstlist.points_of(record()))
        for name, value in KNOWN.items():
            self.assertAlmostEqual(fitted[name], value, delta=1e-6 * abs(value), msg=name)

    def test_the_choice_table_names_the_fastest_measured_nstlist(self):
        points = fit_nstlist.points_of(record())
        self.assertEqual(len(points), 13)  # the run without graphs is left out
        picks = fit_nstlist.choices(points, KNOWN, fit_nstlist.fit(points))
        self.assertEqual([c["atoms"] for c in picks], [22500, 90000, 720000])
        for c in picks:
            fastest = min(c["us_of"], key=c["us_of"].get)
            self.assertEqual(c["measured_best"], fastest)
            self.assertEqual(c["current_model"], fastest)  # the runs follow these constants exactly
            self.assertEqual(c["fitted_model"], fastest)
        self.assertEqual(picks[0]["auto"], 150)
        self.assertIsNone(picks[1]["auto"])

    def test_the_current_constants_come_from_the_model_source(self):
        constants = fit_nstlist.read_constants()
        self.assertEqual(sorted(constants), sorted(fit_nstlist.CONSTANTS))
        self.assertTrue(all(v > 0 for v in constants.values()), constants)
        with tempfile.NamedTemporaryFile("w", suffix=".cpp") as f:
            f.write("constexpr double kStepFixedUs = 1.0;\n")
            f.flush()
            with self.assertRaisesRegex(fit_nstlist.FitError, "no 'constexpr double kInnerPairNs"):
                fit_nstlist.read_constants(f.name)

    def test_main_prints_the_fit_and_writes_its_json(self):
        with tempfile.TemporaryDirectory() as tmp:
            path, out_json = os.path.join(tmp, "r.json"), os.path.join(tmp, "fit.json")
            with open(path, "w") as f:
                json.dump(record(), f)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                self.assertEqual(fit_nstlist.main([path, "--json", out_json]), 0)
            self.assertIn("constexpr double kSearchPairNs = 0.012;", out.getvalue())
            self.assertIn("| 22500 | 150 (auto) |", out.getvalue())
            with open(out_json) as f:
                saved = json.load(f)
            self.assertAlmostEqual(saved["fitted"]["kSearchFixedUs"], 250.0, delta=1e-3)
            # A derived record: the header every record carries, the measured record named as its source.
            self.assertEqual(saved["schema_version"], fit_nstlist.SCHEMA_VERSION)
            self.assertEqual(saved["tool"], "bench/fit_nstlist.py")
            self.assertEqual(saved["source"]["record"], path)
            self.assertIn("derived", saved["schema_note"])
            self.assertIn("unknown", saved["machine"])

    def test_records_it_cannot_use_are_refused_with_the_reason(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "r.json")
            cases = [({"runs": [dict(run(22500, 50), search="host")]}, "no one-GPU device-search run"),
                     ({"runs": [run(22500, 50), run(90000, 50)]}, "2 runs cannot fix 3 constants"),
                     ({"runs": [run(22500, 50)] * 4}, "do not separate the constants")]
            for content, message in cases:
                with open(path, "w") as f:
                    json.dump(content, f)
                err = io.StringIO()
                with contextlib.redirect_stderr(err):
                    self.assertEqual(fit_nstlist.main([path]), 1)
                self.assertIn(message, err.getvalue())

    def test_the_tie_rule_is_the_codes_and_goes_to_the_shortest_list_within_it(self):
        self.assertEqual(fit_nstlist.read_tie_rule(), (0.02, 40))  # nstlist_choice.cpp
        points = fit_nstlist.points_of({"runs": [run(720000, k) for k in (40, 50, 80, 150)]})
        cheapest = min(points, key=lambda p: fit_nstlist.per_step(KNOWN, p))["nstlist"]
        self.assertEqual(fit_nstlist.pick_with_tie(points, KNOWN, (0.0, 0))["nstlist"], cheapest)
        self.assertEqual(fit_nstlist.pick_with_tie(points, KNOWN, (10.0, 0))["nstlist"], 40)  # all tie
        self.assertEqual(fit_nstlist.pick_with_tie(points, KNOWN, (10.0, 50))["nstlist"], 50)  # 40 is out
        with tempfile.TemporaryDirectory() as tmp:
            source = os.path.join(tmp, "model.cpp")
            with open(source, "w") as f:
                f.write("constexpr double kStepFixedUs = 1;\n")
            self.assertEqual(fit_nstlist.read_tie_rule(source), (0.0, 0))  # no rule: the cheapest

    def test_the_age_model_fits_runs_made_from_it_and_picks_their_fastest(self):
        # Runs whose steady step follows the list's age (a + N (b + c min(nstlist, 60))), the search as KNOWN.
        runs = []
        for atoms in (22500, 90000, 720000):
            for nstlist in (40, 50, 80, 150):
                r = run(atoms, nstlist)
                kn = atoms / 1000.0
                steady = 15.0 + kn * (0.8 + 0.006 * min(nstlist, 60))
                beyond = 1e3 * r["search_step_ms"] - r["us_per_step_steady"]
                r.update(us_per_step_steady=steady, us_per_step=steady + beyond / nstlist,
                         search_step_ms=(beyond + steady) / 1e3)
                runs.append(r)
        points = fit_nstlist.points_of({"runs": runs})
        text = fit_nstlist.age_model(points, 60, {20: 0.94, 40: 0.96})
        self.assertRegex(text, r"age form \(limit 60\) rms 0\.00 %")
        self.assertIn("a = 15 us, b = 0.8, c = 0.006 ns", text)
        for line in text.splitlines()[3:]:
            cells = [c.strip() for c in line.strip("|").split("|")]
            self.assertEqual(cells[1].split()[0], cells[2].split()[0], line)  # the measured fastest is picked
            self.assertIn(cells[3], ("20", "40"))  # the ladder's pick is one of its candidates
        err = io.StringIO()
        with contextlib.redirect_stderr(err), tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "r.json")
            with open(path, "w") as f:
                json.dump({"runs": runs}, f)
            with contextlib.redirect_stdout(io.StringIO()):
                self.assertEqual(fit_nstlist.main([path, "--age-limit", "60", "--ladder", "20-0.94"]), 1)
        self.assertIn("--ladder '20-0.94': give NSTLIST:RLIST pairs", err.getvalue())


if __name__ == "__main__":
    unittest.main()
