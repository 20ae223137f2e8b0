#!/usr/bin/env python3
"""haloex-md's output bugs of issue 37 (part 3), each with the case that showed
it: files named for another format written as .gro or .xvg text, a continued
output found by one rule and checked by another, `atoms 0` with --gro, and an
energy series that ended a step before the frame and the checkpoint. One
ctest per case (md_outputs_<case>), on the CPU, each in a directory of its
own, with tests/cli/test_md_cli.py's helpers.

Environment: as tests/cli/test_md_cli.py (HALOEX_MD, HALOEX_TEST_DATA_DIR).
"""
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_md_cli import main, HALOEX_MD, CliCase, checkpoint_step, digest, energy_rows, frame_steps  # noqa: E402

# 1000 atoms on 2 virtual ranks, a search and an energy step every 10 steps.
RUN = ["--device", "cpu", "--ranks", "2", "--atoms", "1000", "--nstlist", "10", "--thermo-every", "10", "--quiet"]
RESTART = ["--device", "cpu", "--ranks", "2", "--quiet"]


def row_steps(path, dt=0.002):
    """The step of every row of an --energy .xvg file."""
    return [round(float(row[0]) / dt) for row in energy_rows(path)]


class MdEnergySeriesEnd(CliCase):
    """The last energy row was at step N - 1 while the last frame and the
    checkpoint were at N: the series was uneven across a restart (a row at 39
    and one at 40, none at 80 but one at 79). It now ends at N, and a restart
    continues it as the uninterrupted run writes it."""

    OUTPUTS = ["--energy", "e.xvg", "--traj", "t.gro", "--traj-every", "20", "--cpt", "c.cpt"]

    def test_energy_series_ends_where_the_frame_and_checkpoint_are(self):
        status, _, err = self.run_md(RUN + ["--steps", "40"] + self.OUTPUTS)
        self.assertEqual(status, 0, err)
        self.assertEqual(row_steps(self.path("e.xvg")), [0, 10, 20, 30, 40])
        self.assertEqual(frame_steps(self.path("t.gro")), [0, 20, 40])
        self.assertEqual(checkpoint_step(self.path("c.cpt")), 40)
        # The restart continues the series exactly: the uninterrupted run's file, byte for byte.
        status, out, err = self.run_md(RESTART + ["--steps", "40", "--restart", "c.cpt"] + self.OUTPUTS)
        self.assertEqual(status, 0, err)
        os.mkdir(self.path("whole"))
        status, _, err = self.run_md(RUN + ["--steps", "80", "--energy", "whole/e.xvg"])
        self.assertEqual(status, 0, err)
        self.assertEqual(row_steps(self.path("e.xvg")), [0, 10, 20, 30, 40, 50, 60, 70, 80])
        with open(self.path("e.xvg")) as a, open(self.path("whole", "e.xvg")) as b:
            self.assertEqual(a.read(), b.read())
        # The row of the checkpoint's step, written after it, is cut and written
        # again without a copy of it: a resubmission chain leaves no #e.xvg.cut.N#.
        self.assertEqual([n for n in os.listdir(self.dir) if ".cut." in n], [])

    def test_a_run_ending_between_energy_steps_adds_no_row_to_the_continued_series(self):
        status, _, err = self.run_md(RUN + ["--steps", "45", "--energy", "e.xvg", "--cpt", "c.cpt"])
        self.assertEqual(status, 0, err)
        self.assertEqual(row_steps(self.path("e.xvg")), [0, 10, 20, 30, 40, 45])
        status, _, err = self.run_md(RESTART + ["--steps", "35", "--restart", "c.cpt", "--cpt", "c.cpt",
                                                "--energy", "e.xvg"])
        self.assertEqual(status, 0, err)
        self.assertEqual(row_steps(self.path("e.xvg")), [0, 10, 20, 30, 40, 50, 60, 70, 80])


class MdAtomCount(CliCase):
    """With --gro, md.log's settings and the .xvg header said `atoms 0` (the
    --atoms option, unused by a --gro start, was written): the system's count."""

    def test_log_and_energy_header_give_the_atoms_of_a_gro_start(self):
        self.copy_reference("x.gro")
        status, _, err = self.run_md(["--device", "cpu", "--ranks", "2", "--steps", "2", "--quiet", "--gro", "x.gro",
                                      "--energy", "e.xvg", "--log", "run.log"])
        self.assertEqual(status, 0, err)
        with open(self.path("e.xvg")) as f:
            self.assertIn("# haloex-md energies: 3000 atoms,", f.read())
        with open(self.path("run.log")) as f:
            self.assertRegex(f.read(), r"(?m)^ +atoms +3000$")


class MdOutputFormats(CliCase):
    """--traj x.xtc --energy e.edr ran and wrote .gro text into x.xtc and .xvg
    text into e.edr, which gmx and MDAnalysis then fail to read. A name of a
    format haloex-md does not write is refused before step 0, naming the
    formats it writes; nothing is created."""

    def test_trajectory_and_energy_names_of_other_formats_are_refused(self):
        for option, name, message in (
                ("--traj", "x.xtc", r"--traj x\.xtc: haloex-md writes a trajectory as \.gro .* or as H5MD "
                                    r"\(\.h5 or \.h5md: .*\), not \.xtc; give a name ending in \.gro or \.h5md"),
                ("--traj", "frames", r"--traj frames: .* not a name without an extension; give a name ending in "
                                     r"\.gro or \.h5md"),
                ("--energy", "e.edr", r"--energy e\.edr: haloex-md writes the energy series as \.xvg text .*, not "
                                      r"\.edr; give a name ending in \.xvg")):
            with self.subTest(option=option, name=name):
                self.expect_refused(RUN + ["--steps", "10", "--log", "none", option, name], message)
                self.assertEqual(os.listdir(self.dir), [])
        # The extensions are told in any case.
        status, _, err = self.run_md(RUN + ["--steps", "10", "--traj", "T.GRO", "--energy", "E.XVG"])
        self.assertEqual(status, 0, err)
        self.assertEqual(frame_steps(self.path("T.GRO")), [0, 10])


def h5md_built():
    result = subprocess.run([HALOEX_MD, "--version"], capture_output=True, text=True, timeout=60)
    return any(line.startswith("H5MD:") and line.split(":", 1)[1].strip().startswith("yes")
               for line in result.stdout.splitlines())


class MdContinuedOutputIdentity(CliCase):
    """The restart's options compared paths (sameFile) while the output layer
    found the continued file by its contents: after moving the run directory,
    which the docs support, the spacing checks were skipped and one file got
    two spacings. One rule now finds the continued file and checks it."""

    def run_and_move(self, trajectory):
        os.mkdir(self.path("run"))
        status, _, err = self.run_md(RUN + ["--steps", "20", "--traj", "run/" + trajectory, "--traj-every", "5",
                                            "--energy", "run/e.xvg", "--cpt", "run/c.cpt", "--log", "run/md.log"])
        self.assertEqual(status, 0, err)
        os.rename(self.path("run"), self.path("moved"))

    def expect_spacings_kept(self, trajectory):
        moved = ["--restart", "moved/c.cpt", "--cpt", "moved/c.cpt", "--log", "moved/md.log"]
        before = {name: digest(self.path("moved", name)) for name in (trajectory, "e.xvg", "md.log")}
        self.expect_refused(RESTART + ["--steps", "10", "--traj", "moved/" + trajectory, "--traj-every", "2",
                                       "--energy", "moved/e.xvg"] + moved,
                            r"--traj-every 2 but checkpoint moved/c\.cpt continues --traj moved/%s with a frame every "
                            r"5 steps \(5 frames so far\): one trajectory keeps one spacing" % trajectory)
        self.expect_refused(RESTART + ["--steps", "10", "--traj", "moved/" + trajectory, "--energy", "moved/e.xvg",
                                       "--thermo-every", "5"] + moved,
                            r"--thermo-every 5 but checkpoint moved/c\.cpt continues --energy moved/e\.xvg with a "
                            r"row every 10 steps \(2 rows so far\): one energy file keeps one spacing")
        self.assertEqual({name: digest(self.path("moved", name)) for name in before}, before)
        # With the recorded spacings the moved files are continued.
        status, _, err = self.run_md(RESTART + ["--steps", "10", "--traj", "moved/" + trajectory, "--energy",
                                                "moved/e.xvg"] + moved)
        self.assertEqual(status, 0, err)

    def test_a_moved_run_directory_keeps_the_spacings_of_a_gro_trajectory(self):
        self.run_and_move("t.gro")
        self.expect_spacings_kept("t.gro")
        self.assertEqual(frame_steps(self.path("moved", "t.gro")), [0, 5, 10, 15, 20, 25, 30])

    def test_a_moved_run_directory_keeps_the_spacings_of_an_h5md_trajectory(self):
        if not h5md_built():
            self.skipTest("this haloex-md was built without HDF5 (haloex-md --version: H5MD)")
        self.run_and_move("t.h5md")
        self.expect_spacings_kept("t.h5md")


CASES = [MdEnergySeriesEnd, MdAtomCount, MdOutputFormats, MdContinuedOutputIdentity]


if __name__ == "__main__":
    sys.exit(main(CASES))
