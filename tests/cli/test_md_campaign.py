#!/usr/bin/env python3
"""Restarts and campaigns as mdrun users expect them (issue 37, part 2): a
--restart that continues the outputs its checkpoint recorded, or refuses
naming every one it cannot; a checkpoint at every signal or --maxh stop, and by
wall time (--cpt-minutes); --deffnm. One ctest per case (md_campaign_<case>),
on the CPU, each in a directory of its own, with tests/cli/test_md_cli.py's
helpers.

Environment: as tests/cli/test_md_cli.py (HALOEX_MD, HALOEX_TEST_DATA_DIR).
"""
import os
import shutil
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_md_cli import HOOKS_ON, CliCase, checkpoint_step, digest, energy_rows, frame_steps  # noqa: E402

# 1000 atoms on 2 virtual ranks, a search and an energy step every 10 steps.
RUN = ["--device", "cpu", "--ranks", "2", "--atoms", "1000", "--nstlist", "10", "--thermo-every", "10", "--quiet"]
RESTART = ["--device", "cpu", "--ranks", "2", "--quiet"]
MAXH_STATUS = 75


def row_steps(path, dt=0.002):
    return [round(float(row[0]) / dt) for row in energy_rows(path)]


class MdRestartContinuesRecordedOutputs(CliCase):
    """`haloex-md --restart state.cpt --steps 20` without the output names
    exited 0 having written no frame, no energy row and no checkpoint, and
    began a new md.log. It now continues what the checkpoint recorded, as
    mdrun -cpi does, or refuses naming every output it cannot continue."""

    OUTPUTS = ["--traj", "t.gro", "--traj-every", "5", "--energy", "e.xvg", "--cpt", "state.cpt"]

    def first_half(self):
        status, _, err = self.run_md(RUN + ["--steps", "20"] + self.OUTPUTS)
        self.assertEqual(status, 0, err)

    def test_restart_without_output_names_continues_the_recorded_outputs(self):
        self.first_half()
        status, out, err = self.run_md(["--device", "cpu", "--ranks", "2", "--steps", "20", "--restart", "state.cpt"])
        self.assertEqual(status, 0, err)
        self.assertIn("Note: --restart state.cpt continues the outputs it recorded: --traj t.gro, --energy e.xvg, "
                      "--log md.log (name one to start a new file instead); checkpoints go to state.cpt", out)
        self.assertEqual(frame_steps(self.path("t.gro")), list(range(0, 41, 5)))
        self.assertEqual(checkpoint_step(self.path("state.cpt")), 40)
        with open(self.path("md.log")) as f:
            log = f.read()
        self.assertEqual(log.count("New run at step 0"), 1)
        self.assertIn("Restarted from state.cpt at step 20", log)
        self.assertFalse(os.path.exists(self.path("#md.log.1#")), "the recorded log is continued, not replaced")
        # The energy file is the uninterrupted run's.
        os.mkdir(self.path("whole"))
        status, _, err = self.run_md(RUN + ["--steps", "40", "--energy", "whole/e.xvg", "--log", "none"])
        self.assertEqual(status, 0, err)
        with open(self.path("e.xvg")) as a, open(self.path("whole", "e.xvg")) as b:
            self.assertEqual(a.read(), b.read())

    def test_restart_refuses_naming_every_recorded_output_it_cannot_continue(self):
        self.first_half()
        os.remove(self.path("t.gro"))
        with open(self.path("e.xvg")) as f:
            text = f.read()
        with open(self.path("e.xvg"), "w") as f:
            f.write(text.replace("0.020000", "0.029999", 1))
        before = {name: digest(self.path(name)) for name in ("e.xvg", "md.log", "state.cpt")}
        _, err = self.expect_refused(RESTART + ["--steps", "20", "--restart", "state.cpt"],
                                     r"--restart state\.cpt continues the outputs it recorded \(--traj t\.gro, --energy "
                                     r"e\.xvg, --log md\.log\), as no other names were given; 2 outputs cannot be "
                                     r"continued from step 20 \(checkpoint state\.cpt\):\n"
                                     r"  --traj t\.gro: the file has 0 bytes \(it is missing\), but checkpoint state\.cpt recorded it "
                                     r"with \d+ bytes, 5 record\(s\), the last at step 20: it was removed or moved.*\n"
                                     r"  --energy e\.xvg: its last bytes before byte \d+ differ.*\n"
                                     r"Nothing was changed\. Restore them, or name other files")
        self.assertEqual({name: digest(self.path(name)) for name in before}, before)
        self.assertFalse(os.path.exists(self.path("t.gro")))

    def test_named_outputs_win_over_the_recorded_ones(self):
        self.first_half()
        status, _, err = self.run_md(RESTART + ["--steps", "20", "--restart", "state.cpt", "--traj", "more.gro",
                                                "--log", "none"])
        self.assertEqual(status, 0, err)
        self.assertEqual(frame_steps(self.path("more.gro")), [25, 30, 35, 40])  # a new file from step 20
        self.assertEqual(frame_steps(self.path("t.gro")), [0, 5, 10, 15, 20])
        self.assertEqual(row_steps(self.path("e.xvg")), [0, 10, 20, 30, 40])  # continued: not named

    def test_a_moved_run_directory_is_continued_from_beside_the_checkpoint(self):
        os.mkdir(self.path("run"))
        status, _, err = self.run_md(RUN + ["--steps", "20", "--traj", "run/t.gro", "--traj-every", "5",
                                            "--energy", "run/e.xvg", "--cpt", "run/state.cpt", "--log", "run/md.log"])
        self.assertEqual(status, 0, err)
        os.rename(self.path("run"), self.path("moved"))
        status, out, err = self.run_md(["--device", "cpu", "--ranks", "2", "--steps", "20", "--restart",
                                        "moved/state.cpt"])
        self.assertEqual(status, 0, err)
        self.assertIn("continues the outputs it recorded: --traj moved/t.gro, --energy moved/e.xvg, --log "
                      "moved/md.log", out)
        self.assertEqual(frame_steps(self.path("moved", "t.gro")), list(range(0, 41, 5)))
        self.assertEqual(checkpoint_step(self.path("moved", "state.cpt")), 40)
        self.assertEqual(sorted(os.listdir(self.dir)), ["moved"])


class MdStopCheckpoint(CliCase):
    """A signal or --maxh stop without --cpt lost the state (it said so); now
    it writes state.cpt, as mdrun writes its -cpo, keeping an earlier one.
    --cpt-minutes adds checkpoints by wall time, as mdrun -cpt."""

    def test_a_stop_without_cpt_writes_state_cpt_and_a_restart_continues_from_it(self):
        with open(self.path("state.cpt"), "w") as f:
            f.write("an earlier run's checkpoint\n")
        status, out, err = self.run_md(RUN[:-1] + ["--steps", "40", "--maxh", "1e-9", "--energy", "e.xvg"])
        self.assertEqual(status, MAXH_STATUS, err)
        self.assertIn("checkpoint state.cpt written at step 10 (no --cpt: the default name); continue with "
                      "--restart state.cpt", out)
        self.assertIn("Backed up state.cpt to #state.cpt.1#", out)
        self.assertEqual(checkpoint_step(self.path("state.cpt")), 10)
        with open(self.path("#state.cpt.1#")) as f:
            self.assertEqual(f.read(), "an earlier run's checkpoint\n")
        status, _, err = self.run_md(RESTART + ["--steps", "30", "--restart", "state.cpt"])
        self.assertEqual(status, 0, err)
        self.assertEqual(checkpoint_step(self.path("state.cpt")), 40)
        self.assertEqual(row_steps(self.path("e.xvg")), [0, 10, 20, 30, 40])

    def test_a_signal_without_cpt_writes_state_cpt(self):
        if not HOOKS_ON:
            self.skipTest("this build has no test hooks (HALOEX_TEST_HOOKS=OFF)")
        status, out, err = self.run_md(RUN + ["--steps", "100"], env_extra={"HALOEX_TEST_STOP_SIGNAL": "TERM@25"})
        self.assertEqual(status, 128 + 15, err)
        self.assertEqual(checkpoint_step(self.path("state.cpt")), 30)

    def test_cpt_minutes_writes_checkpoints_by_wall_time(self):
        # 1e-9 minutes: due at every search step after the start (10 and 20), then the end (30).
        status, _, err = self.run_md(RUN + ["--steps", "30", "--cpt", "c.cpt", "--cpt-minutes", "1e-9"])
        self.assertEqual(status, 0, err)
        self.assertEqual(checkpoint_step(self.path("c.cpt")), 30)
        self.assertEqual(checkpoint_step(self.path("c.cpt.prev")), 20)
        with open(self.path("md.log")) as f:
            self.assertRegex(f.read(), r"checkpoint +c\.cpt every 1e-09 minutes, at a stop and at the end")
        self.expect_refused(RUN + ["--steps", "30", "--cpt-minutes", "15"],
                            r"--cpt-minutes 15 without --cpt: no checkpoint would be written; give --cpt FILE")
        self.expect_refused(RUN + ["--cpt", "c.cpt", "--cpt-minutes", "-1"], r"--cpt-minutes -1: out of range")


class MdDefaultName(CliCase):
    """--deffnm NAME, as mdrun -deffnm: every output not named on its own is
    NAME.<ext>; an explicit name wins."""

    def test_deffnm_names_every_output_and_explicit_names_win(self):
        os.mkdir(self.path("out"))
        status, _, err = self.run_md(RUN + ["--steps", "10", "--deffnm", "out/md", "--traj-every", "5", "--json",
                                            "own.json"])
        self.assertEqual(status, 0, err)
        self.assertEqual(sorted(os.listdir(self.path("out"))), ["md.cpt", "md.gro", "md.log", "md.xvg"])
        self.assertEqual(frame_steps(self.path("out", "md.gro")), [0, 5, 10])
        self.assertEqual(checkpoint_step(self.path("out", "md.cpt")), 10)
        self.assertTrue(os.path.exists(self.path("own.json")))
        # Without --traj-every no trajectory, as mdrun writes none without nstxout; a restart continues the rest.
        status, _, err = self.run_md(RESTART + ["--steps", "10", "--deffnm", "out/md", "--restart", "out/md.cpt"])
        self.assertEqual(status, 0, err)
        self.assertEqual(sorted(os.listdir(self.path("out"))),
                         ["md.cpt", "md.cpt.prev", "md.gro", "md.json", "md.log", "md.xvg"])
        self.assertEqual(frame_steps(self.path("out", "md.gro")), [0, 5, 10, 15, 20])
        self.assertEqual(row_steps(self.path("out", "md.xvg")), [0, 10, 20])
        self.expect_refused(RUN + ["--deffnm", "out/"], r"--deffnm out/: a base name for the output files .*, not a "
                                                        r"directory; give e\.g\. --deffnm out/md")


CASES = [MdRestartContinuesRecordedOutputs, MdStopCheckpoint, MdDefaultName]


def list_tests():
    for case in CASES:
        for name in sorted(n for n in vars(case) if n.startswith("test_")):
            print(f"{case.__name__}.{name}")


if __name__ == "__main__":
    if sys.argv[1:] == ["--list"]:
        list_tests()
        sys.exit(0)
    unittest.main()
