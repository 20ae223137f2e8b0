#!/usr/bin/env python3
"""bench/gromacs_bench.py: md.log parsing (real trimmed logs of GROMACS 2026.3
on haloex's exported inputs, and one synthetic GPU snippet whose GPU lines
follow mdrun's formats with made-up numbers), mdp adaptation, command lines."""
import argparse
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import gromacs_bench  # noqa: E402
from gromacs_bench import (adapt_mdp, export_command, get_mdp_option, mdrun_command, parse_md_log,  # noqa: E402
                           steps_counted, us_per_step, us_per_step_without_search_and_dd)

_TESTDATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "gromacs")


class ParseTest(unittest.TestCase):
    def _read(self, name):
        with open(os.path.join(_TESTDATA, name)) as f:
            return f.read()

    def _consistent(self, p, steps, dt=0.002):
        # The Performance line covers the counted steps: ns/day = steps dt 86.4 / wall, ms/step = wall / steps
        self.assertAlmostEqual(steps * dt * 86.4 / p["wall_s"], p["ns_per_day"], delta=0.01 * p["ns_per_day"])
        self.assertAlmostEqual(p["wall_s"] * 1000 / steps, p["ms_per_step"], delta=0.0015 + 0.01 * p["ms_per_step"])

    def test_cpu_nve(self):
        """Real md.log (trimmed) of this build: haloex's exported inputs as they are (NVE,
        verlet-buffer-tolerance -1), gmx mdrun -nb cpu -nsteps 100 -resethway."""
        p = parse_md_log(self._read("md-cpu-nve.log"))
        self.assertEqual(p["version"], "2026.3")
        self.assertEqual(p["nsteps"], 100)
        self.assertEqual(p["dt"], 0.002)
        self.assertEqual(p["reset_step"], 50)
        self.assertEqual((p["nstlist"], p["rlist"]), (50, 0.985))
        self.assertIsNone(p["nstlist_changed_from"])
        self.assertFalse(p["dynamic_pruning"])
        self.assertEqual(p["notes"], ["Can not increase nstlist because an NVE ensemble is used"])
        self.assertFalse(p["gpu_update"] or p["gpu_nonbonded"] or p["cuda_graph"])
        self.assertTrue(p["finished"])
        self.assertEqual(p["drift"], 2.73e-02)
        self.assertEqual((p["wall_s"], p["ns_per_day"], p["ms_per_step"]), (0.201, 43.838, 3.942))
        self.assertEqual(steps_counted(p, 100), 51)  # steps 50..100: 51 force calls (cycle table: Force 51)
        self._consistent(p, 51)
        self.assertAlmostEqual(us_per_step(p, 100), 0.201e6 / 51)

    def test_cpu_nvt_auto(self):
        """Real md.log (trimmed) of this build: v-rescale, verlet-buffer-tolerance 0.005, nstlist 10 in
        the mdp; mdrun (CPU) raised it to 50 and prunes dynamically."""
        p = parse_md_log(self._read("md-cpu-nvt-auto.log"))
        self.assertEqual(p["nstlist_changed_from"], 10)
        self.assertEqual((p["nstlist"], p["rlist"]), (50, 1.0))
        self.assertEqual((p["nstlist_prune"], p["rlist_inner"]), (5, 0.904))
        self.assertTrue(p["dynamic_pruning"])
        self.assertEqual(p["notes"], [])
        self.assertEqual(p["drift"], 1.29e-02)
        self.assertEqual(steps_counted(p, 100), 51)
        self._consistent(p, 51)

    def test_gpu_snippet(self):
        """md-gpu-snippet.log: the CPU log with the GPU-run lines in mdrun's formats (synthetic numbers)."""
        p = parse_md_log(self._read("md-gpu-snippet.log"))
        self.assertEqual(p["version"], "2026.3")
        self.assertEqual(p["nsteps"], 20000)
        self.assertEqual(p["nstlist_changed_from"], 10)
        self.assertEqual((p["nstlist"], p["rlist"]), (100, 1.099))
        self.assertEqual((p["nstlist_prune"], p["rlist_inner"]), (10, 0.902))
        self.assertTrue(p["dynamic_pruning"])
        self.assertTrue(p["gpu_update"] and p["gpu_nonbonded"])
        self.assertFalse(p["cuda_graph"])
        self.assertEqual(p["reset_step"], 10000)
        self.assertEqual(p["drift"], -3.21e-05)
        self.assertEqual(steps_counted(p, 20000), 10001)
        self._consistent(p, 10001)
        self.assertAlmostEqual(us_per_step(p, 20000), 4.321e6 / 10001)
        self.assertEqual(p["ns_per_day"], 399.947)

    def test_step_without_search_and_dd(self):
        """Issue 34's GROMACS figure: wall time minus the "Domain decomp." and "Neighbor search" rows of the
        cycle accounting, over the counted steps."""
        p = parse_md_log(self._read("md-cpu-nvt-auto.log"))
        self.assertEqual(p["cycle_wall_s"]["Neighbor search"], 0.016)
        self.assertEqual(p["cycle_wall_s"]["Rest"], 0.002)
        self.assertEqual(p["cycle_wall_s"]["Total"], 0.122)
        self.assertNotIn("Domain decomp.", p["cycle_wall_s"])  # one rank: no row, nothing subtracted for it
        self.assertAlmostEqual(us_per_step_without_search_and_dd(p, 100), (0.122 - 0.016) * 1e6 / 51)
        # A table of another interval (its Total is not the Time line's wall time) gives no figure.
        snippet = parse_md_log(self._read("md-gpu-snippet.log"))
        self.assertIsNone(us_per_step_without_search_and_dd(snippet, 20000))
        # Both rows subtracted where both are there.
        dd = parse_md_log(self._read("md-cpu-nvt-auto.log").replace(
            " Neighbor search           1    1          2       0.016          0.040  13.2\n",
            " Domain decomp.            1    1          2       0.010          0.020   8.2\n"
            " Neighbor search           1    1          2       0.016          0.040  13.2\n"))
        self.assertAlmostEqual(us_per_step_without_search_and_dd(dd, 100), (0.122 - 0.016 - 0.010) * 1e6 / 51)
        self.assertIsNone(us_per_step_without_search_and_dd(parse_md_log(""), 100))

    def test_nsteps_from_log_wins(self):
        p = parse_md_log("Overriding nsteps with value passed on the command line: 400 steps, 0.8 ps\n"
                         "step 200: resetting all time and cycle counters\n")
        self.assertEqual(steps_counted(p, 999), 201)

    def test_no_reset(self):
        self.assertEqual(steps_counted({"reset_step": None, "nsteps": None}, 100), 101)

    def test_empty_log(self):
        p = parse_md_log("")
        self.assertIsNone(p["wall_s"])
        self.assertIsNone(us_per_step(p, 100))
        self.assertFalse(p["finished"])


class MdpTest(unittest.TestCase):
    MDP = ("integrator               = md\nnstlist                  = 50\n"
           "; comment\nverlet-buffer-tolerance  = -1\nrlist                    = 0.985\n"
           "rcoulomb                 = 0.9\n")

    def test_gromacs_policy_auto(self):
        t = adapt_mdp(self.MDP, "gromacs", "auto", 0.005)
        self.assertEqual(get_mdp_option(t, "nstlist"), "10")
        self.assertEqual(get_mdp_option(t, "verlet-buffer-tolerance"), "0.005")
        self.assertEqual(get_mdp_option(t, "rlist"), "0.9")
        self.assertIn("; comment", t)

    def test_gromacs_policy_fixed(self):
        t = adapt_mdp(self.MDP, "gromacs", "80", 0.005)
        self.assertEqual(get_mdp_option(t, "nstlist"), "80")

    def test_haloex_policy(self):
        self.assertEqual(adapt_mdp(self.MDP, "haloex", "auto", 0.005), self.MDP)


class CommandTest(unittest.TestCase):
    def _args(self, *extra):
        ns = argparse.Namespace(gmx="gmx", haloex_md="hx", steps=1000, thermo_every=100, thermostat=None,
                                rlist_policy="gromacs", hx_arg=[], mdrun_arg=[], nb="gpu", update="gpu",
                                pin="on", ntomp=16, maxwarn=0, ntmpi=1, dd=None)
        for k, v in extra:
            setattr(ns, k, v)
        return ns

    def test_mdrun_command(self):
        cmd = mdrun_command(self._args(), "/w", "auto")
        s = " ".join(cmd)
        self.assertIn("-nb gpu -update gpu -pin on -ntmpi 1 -ntomp 16 -nsteps 1000 -resethway -noconfout", s)
        self.assertNotIn("-nstlist", s)
        self.assertIn("-nstlist 80", " ".join(mdrun_command(self._args(), "/w", "80")))
        self.assertNotIn("-nstlist", " ".join(mdrun_command(self._args(("rlist_policy", "haloex")), "/w", "80")))
        self.assertNotIn("-dd", s)
        two = " ".join(mdrun_command(self._args(("ntmpi", 2), ("ntomp", 8), ("dd", [2, 1, 1])), "/w", "auto"))
        self.assertIn("-ntmpi 2 -ntomp 8", two)
        self.assertIn("-dd 2 1 1", two)

    def test_several_ranks_checked_and_logged(self):
        with self.assertRaises(SystemExit):  # 4 domains for 2 ranks
            gromacs_bench.main(["--gmx", "gmx", "--haloex-md", "hx", "--atoms", "100", "--ntmpi", "2",
                                "--dd", "2", "2", "1", "--dry-run"])
        with self.assertRaises(SystemExit):
            gromacs_bench.main(["--gmx", "gmx", "--haloex-md", "hx", "--atoms", "100", "--ntmpi", "0", "--dry-run"])
        log = ("Domain decomposition grid 2 x 1 x 1, separate PME ranks 0\n"
               "GPU direct communication will be used between MPI ranks.\n")
        parsed = parse_md_log(log)
        self.assertEqual(parsed["dd_grid"], [2, 1, 1])
        self.assertTrue(parsed["gpu_direct_comm"])
        self.assertIsNone(parse_md_log("")["dd_grid"])
        self.assertFalse(parse_md_log("")["gpu_direct_comm"])

    def test_export_command(self):
        s = " ".join(export_command(self._args(("rlist_policy", "haloex")), 3000, "80"))
        self.assertIn("--device cpu --atoms 3000 --steps 1", s)
        self.assertIn("--thermo-every 100", s)
        self.assertIn("--nstlist 80", s)
        self.assertNotIn("--nstlist", " ".join(export_command(self._args(), 3000, "80")))




if __name__ == "__main__":
    unittest.main()
