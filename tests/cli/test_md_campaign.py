#!/usr/bin/env python3
"""Restarts and campaigns as mdrun users expect them (issue 37, part 2): a
--restart that continues the outputs its checkpoint recorded, or refuses
naming every one it cannot; --until-step, the whole run's length, so that a
resubmitted command ends a chain at its last step (the documented Slurm
script, run as written); a checkpoint at every signal or --maxh stop, and by
wall time (--cpt-minutes); --deffnm. One ctest per case (md_campaign_<case>),
on the CPU, each in a directory of its own, with tests/cli/test_md_cli.py's
helpers.

Environment: as tests/cli/test_md_cli.py (HALOEX_MD, HALOEX_TEST_DATA_DIR).
"""
import os
import re
import shutil
import stat
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_md_cli import (main, HALOEX_MD, HOOKS_ON, CliCase, checkpoint_step, digest, energy_rows,  # noqa: E402
                         frame_steps, json_of)

DOCS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "running.md")
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


class MdUntilStep(CliCase):
    """--steps counted per job, so a resubmitted job ran another full --steps
    and a chain never reached a defined length. --until-step N is the whole
    run's last step: a chain ends there, and a job after it says the run is
    complete and exits 0."""

    def test_until_step_runs_what_is_left_and_then_says_the_run_is_complete(self):
        args = RUN + ["--until-step", "30", "--cpt", "c.cpt", "--energy", "e.xvg", "--json", "run.json"]
        status, _, err = self.run_md(args + ["--maxh", "1e-9"])  # stops at step 10
        self.assertEqual(status, MAXH_STATUS, err)
        self.assertEqual(checkpoint_step(self.path("c.cpt")), 10)
        status, _, err = self.run_md(args + ["--restart", "c.cpt"])
        self.assertEqual(status, 0, err)
        self.assertEqual(checkpoint_step(self.path("c.cpt")), 30)
        summary = json_of(self.path("run.json"))
        self.assertEqual((summary["first_step"], summary["steps"], summary["settings"]["until_step"]), (10, 20, 30))
        self.assertEqual(row_steps(self.path("e.xvg")), [0, 10, 20, 30])
        before = {name: digest(self.path(name)) for name in os.listdir(self.dir)}
        status, out, err = self.run_md(args + ["--restart", "c.cpt"])
        self.assertEqual(status, 0, err)
        self.assertIn("The run is already complete: checkpoint c.cpt is at step 30, the last of --until-step 30. "
                      "Nothing was run or written", out)
        self.assertEqual({name: digest(self.path(name)) for name in os.listdir(self.dir)}, before)

    def test_until_step_with_steps_or_before_the_checkpoint_is_refused(self):
        self.expect_refused(RUN + ["--until-step", "30", "--steps", "10"],
                            r"--until-step 30 and --steps 10: give one\. --until-step is the last step of the whole "
                            r"run, counted from step 0 across restarts")
        self.expect_refused(RUN + ["--until-step", "-1"], r"--until-step: -1: out of range; use the run's last step, "
                                                          r"from 1 to 1000000000000000", status=None)
        status, _, err = self.run_md(RUN + ["--steps", "20", "--cpt", "c.cpt"])
        self.assertEqual(status, 0, err)
        self.expect_refused(RESTART + ["--until-step", "10", "--restart", "c.cpt"],
                            r"--until-step 10: checkpoint c\.cpt is at step 20, past it; give the run's last step")

    def test_the_documented_slurm_script_ends_at_the_last_step(self):
        """docs/running.md's Slurm script, as written: srun and sbatch are
        stand-ins, build/bin/haloex-md runs this haloex-md on the CPU with a
        small system (the script's sizes scaled down) and --maxh stopping
        each job after one search interval. Every job the script submits is
        run, until one ends the chain."""
        with open(DOCS) as f:
            docs = f.read()
        section = docs[docs.index("## Batch systems (Slurm)"):]
        script = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
        self.write_executable("job.sh", script)
        os.makedirs(self.path("shims"))
        os.makedirs(self.path("build", "bin"))
        # srun: its own options, then the program.
        self.write_executable("shims/srun", '#!/bin/bash\nwhile [[ "$1" == --* ]]; do shift; done\nexec "$@"\n')
        self.write_executable("shims/sbatch", '#!/bin/bash\necho "$*" >> "$SUBMITTED"\n')
        # The script's system, scaled down: 1000 atoms, the last step 40, checkpoints every 10 steps.
        self.write_executable("build/bin/haloex-md", f'''#!/usr/bin/env python3
import os, sys
scaled = {{"--atoms": "1000", "--until-step": "40", "--cpt-every": "10"}}
args = sys.argv[1:]
args = [scaled.get(args[i - 1], a) if i > 0 else a for i, a in enumerate(args)]
os.execv({HALOEX_MD!r}, [{HALOEX_MD!r}, "--device", "cpu", "--ranks", "2", "--nstlist", "10", "--thermo-every",
                          "10", "--maxh", "1e-9", "--quiet"] + args)
''')
        env = dict(os.environ, PATH=self.path("shims") + os.pathsep + os.environ["PATH"],
                   SUBMITTED=self.path("submitted.txt"), OMP_NUM_THREADS="1")
        statuses = []
        for _ in range(10):
            submitted = self.submissions()
            result = subprocess.run(["bash", "job.sh"], cwd=self.dir, env=env, capture_output=True, text=True,
                                    timeout=300)
            statuses.append(result.returncode)
            if self.submissions() == submitted:
                break  # the job submitted no successor: the chain has ended
        self.assertEqual(statuses, [MAXH_STATUS] * 3 + [0], result.stderr)
        self.assertEqual(checkpoint_step(self.path("md.cpt")), 40)
        self.assertEqual(row_steps(self.path("md.xvg")), [0, 10, 20, 30, 40])
        # The energy series is the uninterrupted run's, byte for byte.
        os.mkdir(self.path("whole"))
        status, _, err = self.run_md(RUN + ["--until-step", "40", "--deffnm", "whole/md"])
        self.assertEqual(status, 0, err)
        with open(self.path("md.xvg")) as a, open(self.path("whole", "md.xvg")) as b:
            self.assertEqual(a.read(), b.read())
        with open(self.path("md.log")) as f:
            self.assertEqual(f.read().count("Restarted from md.cpt"), 3)
        # A surplus job of the chain ends at once, with exit status 0.
        result = subprocess.run(["bash", "job.sh"], cwd=self.dir, env=env, capture_output=True, text=True,
                                timeout=300)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("The run is already complete", result.stdout)

    def submissions(self):
        try:
            with open(self.path("submitted.txt")) as f:
                return f.read().count("\n")
        except FileNotFoundError:
            return 0

    def write_executable(self, name, text):
        with open(self.path(name), "w") as f:
            f.write(text)
        os.chmod(self.path(name), os.stat(self.path(name)).st_mode | stat.S_IXUSR)


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


CASES = [MdRestartContinuesRecordedOutputs, MdUntilStep, MdStopCheckpoint, MdDefaultName]


if __name__ == "__main__":
    sys.exit(main(CASES))
