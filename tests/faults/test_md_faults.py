#!/usr/bin/env python3
"""The fault cases of the reviews of haloex-md (issues 28 and 38) that can be
automated, kept as a suite of their own (ctest label `faults`, one ctest per
case, named faults_<case>): hostile names planted in shared directories,
kills between the steps of a checkpoint write, outputs of an earlier run,
two runs with the same outputs, signals a scheduler sends, and options that
used to be ignored or to fail without a hint. Each case runs the built
haloex-md on the CPU in a directory of its own, as tests/cli does (whose
helpers it uses), and works as root.

Environment: as tests/cli/test_md_cli.py (HALOEX_MD, HALOEX_TEST_DATA_DIR,
HALOEX_TEST_HOOKS_ON).
"""
import os
import re
import shutil
import signal
import stat
import struct
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from test_md_cli import main, DATA_DIR, CliCase, HOOKS_ON, checkpoint_step, digest, frame_steps, json_of  # noqa: E402

# 1000 atoms on 2 virtual ranks, a search every 10 steps.
RUN = ["--device", "cpu", "--ranks", "2", "--atoms", "1000", "--nstlist", "10", "--thermo-every", "10", "--quiet"]
SIGTERM_STATUS = 128 + signal.SIGTERM


class FaultCase(CliCase):
    def require_hooks(self):
        if not HOOKS_ON:
            self.skipTest("this build has no test hooks (HALOEX_TEST_HOOKS=OFF): the injected faults do nothing")

    def write(self, name, text):
        with open(self.path(name), "w") as f:
            f.write(text)

    def read(self, name):
        with open(self.path(name)) as f:
            return f.read()

    def wait_until(self, condition, what, proc, timeout=120):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if condition():
                return
            if proc.poll() is not None:
                self.fail(f"haloex-md ended (status {proc.returncode}) before {what}:\n{''.join(self.stderr)}")
            time.sleep(0.01)
        self.fail(f"not within {timeout} s: {what}")

    def expect_separate_files(self, a, b):
        """Two names that are never one file (the old .prev was a hard link)."""
        x, y = os.lstat(self.path(a)), os.lstat(self.path(b))
        self.assertEqual(x.st_nlink, 1, f"{a} has another name")
        self.assertEqual(y.st_nlink, 1, f"{b} has another name")
        self.assertNotEqual((x.st_dev, x.st_ino), (y.st_dev, y.st_ino), f"{a} and {b} are one file")


class CheckpointPreviousCopy(FaultCase):
    """High (issue 38): the checkpoint's .prev copy was made by removing the
    name, hard-linking and, failing that, copy_file through whatever was at
    .prev: a link planted there between two checkpoints made the run overwrite
    the link's target. Now the previous checkpoint is kept by renames only."""

    def test_link_planted_at_the_previous_copy_between_checkpoints_is_not_followed(self):
        os.mkdir(self.path("victim"))
        self.write("victim/secret.txt", "the victim's secret\n")
        proc = self.start_md(RUN + ["--steps", "-1", "--cpt", "run.cpt", "--cpt-every", "10"])
        # After the first checkpoint: another user's link under the previous copy's name.
        self.wait_until(lambda: os.path.exists(self.path("run.cpt")), "the first checkpoint", proc)
        os.symlink(self.path("victim", "secret.txt"), self.path("run.cpt.prev"))
        # The next checkpoint replaces the link (a rename), then the run is stopped.
        self.wait_until(lambda: not os.path.islink(self.path("run.cpt.prev")), "the next checkpoint", proc)
        proc.send_signal(signal.SIGTERM)
        status, _, err = self.finish(proc)
        self.assertEqual(status, SIGTERM_STATUS, err)
        self.assertEqual(self.read("victim/secret.txt"), "the victim's secret\n")
        self.assertTrue(stat.S_ISREG(os.lstat(self.path("run.cpt.prev")).st_mode))
        self.assertLess(checkpoint_step(self.path("run.cpt.prev")), checkpoint_step(self.path("run.cpt")))
        self.expect_separate_files("run.cpt", "run.cpt.prev")
        self.assertNotIn("warning", err)

    def test_link_another_user_planted_in_a_sticky_directory_is_not_written_through(self):
        # The review's attack: in a shared sticky directory the run cannot
        # remove another user's link, and used to copy its previous checkpoint
        # through it. Two users need root: haloex-md runs as nobody.
        if os.geteuid() != 0:
            self.skipTest("needs root, to act as two users (the run and the one who plants the link)")
        nobody = 65534
        os.chmod(self.dir, 0o755)
        os.mkdir(self.path("home"))
        self.write("home/secret.txt", "the victim's secret\n")
        for name in ("home", "home/secret.txt"):
            os.chown(self.path(name), nobody, nobody)
        os.mkdir(self.path("shared"))
        os.chmod(self.path("shared"), 0o1777)

        def as_nobody():
            os.setgid(nobody)
            os.setuid(nobody)
        proc = self.start_md(RUN + ["--steps", "-1", "--cpt", "run.cpt", "--cpt-every", "10"], cwd=self.path("shared"),
                             preexec_fn=as_nobody)
        cpt = self.path("shared", "run.cpt")
        self.wait_until(lambda: os.path.exists(cpt), "the first checkpoint", proc)
        os.symlink(self.path("home", "secret.txt"), self.path("shared", "run.cpt.prev"))  # owned by root
        first = checkpoint_step(cpt)
        self.wait_until(lambda: checkpoint_step(cpt) >= first + 10, "the next checkpoint", proc)
        proc.send_signal(signal.SIGTERM)
        status, _, err = self.finish(proc)
        self.assertEqual(status, SIGTERM_STATUS, err)
        self.assertEqual(self.read("home/secret.txt"), "the victim's secret\n")
        self.assertTrue(os.path.islink(self.path("shared", "run.cpt.prev")))
        self.assertIn("the previous checkpoint could not be kept as run.cpt.prev", err)

    def test_previous_copy_that_cannot_be_kept_is_said_once_and_the_run_goes_on(self):
        proc = self.start_md(RUN + ["--steps", "-1", "--cpt", "run.cpt", "--cpt-every", "10"])
        self.wait_until(lambda: os.path.exists(self.path("run.cpt")), "the first checkpoint", proc)
        # No rename replaces a non-empty directory (nor, in a sticky
        # directory, another user's link).
        os.makedirs(self.path("run.cpt.prev", "inside"))
        first = checkpoint_step(self.path("run.cpt"))
        self.wait_until(lambda: checkpoint_step(self.path("run.cpt")) >= first + 20, "two more checkpoints", proc)
        proc.send_signal(signal.SIGTERM)
        status, _, err = self.finish(proc)
        self.assertEqual(status, SIGTERM_STATUS, err)
        self.assertEqual(err.count("the previous checkpoint could not be kept as run.cpt.prev"), 1, err)
        self.assertTrue(os.path.isdir(self.path("run.cpt.prev", "inside")))
        self.assertEqual(self.leftovers(), [])

    def crash(self, point, exchange=True):
        """A run killed (SIGKILL) at `point` of its second checkpoint write."""
        self.require_hooks()
        env = {"HALOEX_TEST_CRASH_IN_REPLACE": point}
        if not exchange:
            env["HALOEX_TEST_NO_RENAME_EXCHANGE"] = "1"
        status, _, err = self.run_md(RUN + ["--steps", "40", "--cpt", "run.cpt", "--cpt-every", "10"],
                                     env_extra=env)
        self.assertEqual(status, -signal.SIGKILL, err)

    def restart(self, source):
        return self.run_md(RUN + ["--steps", "10", "--restart", source, "--cpt", "run.cpt"])

    def test_kill_after_the_exchange_leaves_the_new_checkpoint_in_place(self):
        self.crash("exchanged")
        # The new checkpoint is in place; the old one was still under the temporary's name.
        self.assertEqual(checkpoint_step(self.path("run.cpt")), 20)
        self.assertFalse(os.path.exists(self.path("run.cpt.prev")))
        status, _, err = self.restart("run.cpt")
        self.assertEqual(status, 0, err)
        self.assertEqual(checkpoint_step(self.path("run.cpt")), 30)
        self.expect_separate_files("run.cpt", "run.cpt.prev")
        # The temporary the kill left (the checkpoint of step 10, under its
        # random name) was removed by the restart: no process held it locked.
        self.assertEqual(self.leftovers(), [])

    def test_kill_before_the_exchange_leaves_the_old_checkpoint_in_place(self):
        self.crash("synced")
        self.assertEqual(checkpoint_step(self.path("run.cpt")), 10)
        self.assertFalse(os.path.exists(self.path("run.cpt.prev")))
        self.assertEqual(len(self.leftovers()), 1)  # the new checkpoint, never put in place
        status, out, err = self.run_md([a for a in RUN if a != "--quiet"] +
                                       ["--steps", "10", "--restart", "run.cpt", "--cpt", "run.cpt"])
        self.assertEqual(status, 0, err)
        self.assertRegex(out, r"Removed \S*run\.cpt\.tmp\.[0-9a-f]{16}: the temporary of a write a killed run left")
        self.assertEqual(self.leftovers(), [])
        self.assertEqual(checkpoint_step(self.path("run.cpt")), 20)
        self.expect_separate_files("run.cpt", "run.cpt.prev")

    def test_kill_between_the_fallback_renames_names_the_previous_copy_to_restart_from(self):
        self.crash("moved-aside", exchange=False)
        self.assertFalse(os.path.exists(self.path("run.cpt")))
        self.assertEqual(checkpoint_step(self.path("run.cpt.prev")), 10)
        status, _, err = self.restart("run.cpt")
        self.assertEqual(status, 1)
        self.assertIn("restart from it with --restart run.cpt.prev", err)
        status, _, err = self.restart("run.cpt.prev")
        self.assertEqual(status, 0, err)
        self.assertEqual(checkpoint_step(self.path("run.cpt")), 20)
        self.expect_separate_files("run.cpt", "run.cpt.prev")

    def test_hard_linked_previous_copy_of_older_versions_is_separated_on_restart(self):
        status, _, err = self.run_md(RUN + ["--steps", "20", "--cpt", "run.cpt"])
        self.assertEqual(status, 0, err)
        os.link(self.path("run.cpt"), self.path("run.cpt.prev"))  # what an older version left
        status, out, err = self.run_md([a for a in RUN if a != "--quiet"] +
                                       ["--steps", "10", "--restart", "run.cpt", "--cpt", "run.cpt"])
        self.assertEqual(status, 0, err)
        self.assertIn("Removed run.cpt.prev: it was a second name of run.cpt", out)
        self.assertEqual(checkpoint_step(self.path("run.cpt")), 30)
        self.assertEqual(checkpoint_step(self.path("run.cpt.prev")), 20)
        self.expect_separate_files("run.cpt", "run.cpt.prev")


class DerivedNames(FaultCase):
    """High (issue 38), the audit: every name derived from a user's path is
    created exclusively, replaced by a rename, or refused when it is a link."""

    def test_write_gromacs_into_a_linked_directory_is_refused_before_step_zero(self):
        os.mkdir(self.path("elsewhere"))
        os.symlink("elsewhere", self.path("gmx"))
        self.expect_refused(RUN + ["--steps", "10", "--write-gromacs", "gmx"],
                            r"--write-gromacs gmx: the path is a symbolic link")
        self.assertEqual(os.listdir(self.path("elsewhere")), [])

    def test_h5md_trajectory_replaces_an_older_file_by_rename(self):
        h5py_missing = self.h5md_missing()
        if h5py_missing:
            self.skipTest(h5py_missing)
        self.write("traj.h5", "an older file\n")
        os.link(self.path("traj.h5"), self.path("other-name"))
        status, _, err = self.run_md(RUN + ["--steps", "10", "--traj", "traj.h5", "--traj-every", "5"])
        self.assertEqual(status, 0, err)
        self.assertEqual(self.read("other-name"), "an older file\n")  # never written in place
        self.assertEqual(self.leftovers(), [])

    def h5md_missing(self):
        """Why this haloex-md cannot write H5MD (None: it can)."""
        status, out, _ = self.run_md(["--version"])
        return None if status == 0 and re.search(r"^H5MD:\s+yes", out, re.M) else \
            "this haloex-md was built without HDF5 (no H5MD)"


class EarlierAndConcurrentRuns(FaultCase):
    """Medium (issue 38): a fresh run truncated an existing trajectory and
    energy file (only md.log was backed up), and two runs with the same
    output names ran side by side, interleaving their frames and rows."""

    OUTPUTS = ["--traj", "t.gro", "--traj-every", "5", "--energy", "e.xvg", "--cpt", "c.cpt", "--json", "run.json"]

    def test_fresh_run_backs_up_every_output_it_would_overwrite(self):
        gromacs = ["--write-gromacs", "gmx"]
        status, _, err = self.run_md(RUN + ["--steps", "20"] + self.OUTPUTS + gromacs)
        self.assertEqual(status, 0, err)
        names = ["t.gro", "e.xvg", "c.cpt", "run.json", "md.log", "gmx/conf.gro", "gmx/topol.top", "gmx/md.mdp"]
        before = {name: digest(self.path(name)) for name in names}
        status, out, err = self.run_md([a for a in RUN if a != "--quiet"] + ["--steps", "10"] + self.OUTPUTS + gromacs)
        self.assertEqual(status, 0, err)
        for name in names[5:]:
            backup = name.replace("gmx/", "gmx/#") + ".1#"
            self.assertIn(f"Backed up {name} to {backup}", out)
            self.assertEqual(digest(self.path(backup)), before[name], name)
        for name in names[:5]:
            self.assertIn(f"Backed up {name} to #{name}.1#", out)
            self.assertEqual(digest(self.path(f"#{name}.1#")), before[name], name)
        self.assertEqual(frame_steps(self.path("t.gro")), [0, 5, 10])
        self.assertEqual(frame_steps(self.path("#t.gro.1#")), [0, 5, 10, 15, 20])

    def test_fresh_run_backs_up_an_h5md_trajectory(self):
        missing = DerivedNames.h5md_missing(self)
        if missing:
            self.skipTest(missing)
        args = RUN + ["--steps", "20", "--traj", "t.h5", "--traj-every", "5"]
        status, _, err = self.run_md(args)
        self.assertEqual(status, 0, err)
        before = digest(self.path("t.h5"))
        status, _, err = self.run_md(args)
        self.assertEqual(status, 0, err)
        self.assertEqual(digest(self.path("#t.h5.1#")), before)

    def start_first_run(self):
        proc = self.start_md(RUN + ["--steps", "-1"] + self.OUTPUTS)
        self.wait_until(lambda: os.path.exists(self.path("t.gro")) and len(frame_steps(self.path("t.gro"))) >= 2,
                        "the first run's frames", proc)
        return proc

    def test_second_run_with_the_same_outputs_is_refused_naming_the_first(self):
        first = self.start_first_run()
        self.expect_refused(RUN + ["--steps", "10"] + self.OUTPUTS,
                            rf"--traj t\.gro: another run \(process {first.pid}\) is writing this file")
        self.assertFalse([n for n in os.listdir(self.dir) if n.startswith("#")], "a backup of the running run's files")
        first.send_signal(signal.SIGTERM)
        status, _, err = self.finish(first)
        self.assertEqual(status, SIGTERM_STATUS, err)
        # One run's frames and rows, each once, in order.
        steps = frame_steps(self.path("t.gro"))
        self.assertEqual(steps, list(range(0, steps[-1] + 1, 5)))
        with open(self.path("e.xvg")) as f:
            times = [float(line.split()[0]) for line in f if line.strip() and not line.startswith(("#", "@"))]
        self.assertEqual(times, sorted(set(times)))

    def test_runs_with_other_output_names_in_one_directory_run_side_by_side(self):
        first = self.start_first_run()
        status, _, err = self.run_md(RUN + ["--steps", "10", "--traj", "t2.gro", "--energy", "e2.xvg", "--cpt",
                                            "c2.cpt", "--json", "run2.json", "--log", "md2.log"])
        self.assertEqual(status, 0, err)
        first.send_signal(signal.SIGTERM)
        status, _, err = self.finish(first)
        self.assertEqual(status, SIGTERM_STATUS, err)


class SchedulerSignals(FaultCase):
    """Medium (issue 38): SIGHUP (a closed terminal) and SIGUSR1 (Slurm's
    pre-emption warning, sbatch --signal=USR1@...) killed the run at once,
    with no checkpoint. Now they stop it as SIGTERM does."""

    def test_sighup_and_sigusr1_stop_at_the_next_search_step_with_a_checkpoint(self):
        for name, number in (("HUP", signal.SIGHUP), ("USR1", signal.SIGUSR1)):
            with self.subTest(signal=name):
                proc = self.start_md([a for a in RUN if a != "--quiet"] +
                                     ["--steps", "-1", "--cpt", f"{name}.cpt", "--json", f"{name}.json", "--log",
                                      f"{name}.log"])
                self.wait_for_step(20)
                proc.send_signal(number)
                status, out, err = self.finish(proc)
                self.assertEqual(status, 128 + number, err)
                stop = json_of(self.path(f"{name}.json"))["stop"]
                self.assertEqual(stop["reason"], f"SIG{name}")
                self.assertEqual(stop["step"] % 10, 0, "not a search step")
                self.assertEqual(checkpoint_step(self.path(f"{name}.cpt")), stop["step"])
                self.assertIn(f"Stopped by SIG{name} at step {stop['step']} (a search step)", out)

    def test_sigusr1_at_a_chosen_step_stops_at_the_next_search_step(self):
        self.require_hooks()
        status, _, err = self.run_md(RUN + ["--steps", "100", "--cpt", "state.cpt", "--json", "run.json"],
                                     env_extra={"HALOEX_TEST_STOP_SIGNAL": "USR1@25"})
        self.assertEqual(status, 128 + signal.SIGUSR1, err)
        self.assertEqual(json_of(self.path("run.json"))["stop"]["step"], 30)
        self.assertEqual(checkpoint_step(self.path("state.cpt")), 30)


class OptionsThatDidNothing(FaultCase):
    """Medium and low (issue 38): options that did nothing in the run they
    were given to, with exit status 0, are refused with what to do."""

    def test_cpt_every_without_cpt_is_refused(self):
        self.expect_refused(RUN + ["--steps", "10", "--cpt-every", "10"],
                            r"--cpt-every 10 without --cpt: no checkpoint would be written; give --cpt FILE")

    def test_traj_every_without_traj_is_refused(self):
        self.expect_refused(RUN + ["--steps", "10", "--traj-every", "5"],
                            r"--traj-every 5 without --traj: no trajectory would be written; give --traj FILE")

    def test_tau_t_without_v_rescale_is_refused(self):
        self.expect_refused(RUN + ["--steps", "10", "--tau-t", "0.5"],
                            r"--tau-t 0.5 ps with --thermostat none: only v-rescale has a coupling time")

    def test_buffer_tolerance_on_a_restart_is_refused(self):
        status, _, err = self.run_md(RUN + ["--steps", "10", "--cpt", "c.cpt"])
        self.assertEqual(status, 0, err)
        self.expect_refused(RUN + ["--steps", "10", "--restart", "c.cpt", "--buffer-tolerance", "0.001"],
                            r"--buffer-tolerance 0\.001 with --restart c\.cpt: a restart keeps the checkpoint's rlist "
                            r"[0-9.]+ nm and nstlist \d+, which its buffer tolerance chose")

    def test_cuda_graphs_other_than_zero_or_one_is_refused(self):
        self.expect_refused(RUN + ["--steps", "10", "--cuda-graphs", "2"], r"--cuda-graphs: 2 not in \{0,1\}",
                            status=None)


def fnv1a64(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def patch_checkpoint(path, offset, fmt, value):
    """Overwrites one header field of a checkpoint and reseals its checksum (a damaged but consistent file)."""
    with open(path, "rb") as f:
        data = bytearray(f.read())
    struct.pack_into(fmt, data, offset, value)
    struct.pack_into("=Q", data, len(data) - 8, fnv1a64(data[:-8]))
    with open(path, "wb") as f:
        f.write(data)


class InputsAndSettings(FaultCase):
    """Low (issue 38): inputs and stored settings that failed without a hint,
    or ran something other than what was asked."""

    def test_gro_that_is_a_directory_is_named_as_one(self):
        os.mkdir(self.path("start.gro"))
        self.expect_refused(RUN + ["--gro", "start.gro"], r"start\.gro is a directory, not a \.gro file")

    def test_empty_file_names_are_refused_not_taken_for_no_option(self):
        for option in ("--gro", "--cpt", "--traj", "--json", "--restart"):
            with self.subTest(option=option):
                self.expect_refused(RUN + [option, ""], rf'{option} "": the file name is empty')

    def test_gro_of_one_atom_is_refused_before_step_zero(self):
        self.write("one.gro", "one atom\n    1\n    1POS      P    1   1.000   1.000   1.000\n   3.00000   3.00000   3.00000\n")
        self.expect_refused(RUN + ["--gro", "one.gro"], r"--gro one\.gro: 1 atom: a system needs at least 2 atoms")

    def test_gro_with_velocities_on_some_atom_lines_only_is_refused(self):
        with open(os.path.join(DATA_DIR, "ref-3000.gro")) as f:
            lines = f.read().splitlines()
        lines[3] += "  0.1000  0.2000  0.3000"  # atom 2 has velocities, atom 1 none
        self.write("mixed.gro", "\n".join(lines) + "\n")
        self.expect_refused(RUN + ["--gro", "mixed.gro"],
                            r"mixed\.gro:4: atom 2 of 3000 has velocities, but atom 1 of 3000 has none")

    def test_h5md_extension_in_upper_case_writes_h5md(self):
        missing = DerivedNames.h5md_missing(self)
        if missing:
            self.skipTest(missing)
        status, _, err = self.run_md(RUN + ["--steps", "10", "--traj", "t.H5", "--traj-every", "5"])
        self.assertEqual(status, 0, err)
        with open(self.path("t.H5"), "rb") as f:
            self.assertEqual(f.read(8), b"\x89HDF\r\n\x1a\n")

    def checkpoint(self, extra=()):
        status, _, err = self.run_md(RUN + ["--steps", "20", "--cpt", "r.cpt"] + list(extra))
        self.assertEqual(status, 0, err)

    def test_damaged_checkpoint_setting_is_reported_as_damage_not_as_an_option(self):
        self.checkpoint()
        patch_checkpoint(self.path("r.cpt"), 80, "=d", -0.002)  # the time step
        _, err = self.expect_refused(RUN + ["--steps", "10", "--restart", "r.cpt"],
                                     r"checkpoint 'r\.cpt': corrupt header \(time step -0\.002 ps\)")
        self.assertNotIn("--dt", err)

    def test_checkpoint_step_near_the_largest_step_number_is_refused(self):
        self.checkpoint()
        patch_checkpoint(self.path("r.cpt"), 16, "=q", 2**63 - 10)
        self.expect_refused(RUN + ["--steps", "100", "--restart", "r.cpt"],
                            r"--restart r\.cpt: the checkpoint is at step 9223372036854775798, and --steps 100 from "
                            r"there passes the largest step number")

    def test_another_thermo_every_for_a_continued_energy_file_is_refused(self):
        self.checkpoint(["--energy", "e.xvg"])
        i = RUN.index("--thermo-every")
        without = RUN[:i] + RUN[i + 2:]  # the checkpoint's is 10
        self.expect_refused(without + ["--steps", "10", "--restart", "r.cpt", "--cpt", "r.cpt", "--energy", "e.xvg",
                                       "--thermo-every", "5"],
                            r"--thermo-every 5 but checkpoint r\.cpt continues --energy e\.xvg with a row every 10 "
                            r"steps")

    def test_write_protected_outputs_are_refused_like_the_trajectory(self):
        for option, name in (("--json", "run.json"), ("--cpt", "state.cpt"), ("--traj", "t.gro")):
            with self.subTest(option=option):
                self.write(name, "protected\n")
                os.chmod(self.path(name), 0o444)
                self.expect_refused(RUN + ["--steps", "10", option, name],
                                    rf"{option} {re.escape(name)}: the file is write-protected \(mode 0444\)")
                self.assertEqual(self.read(name), "protected\n")

    def test_wait_limits_that_wrap_as_nanoseconds_are_refused(self):
        self.expect_refused(RUN + ["--wait-timeout", "1e308"], r"--wait-timeout 1e\+308: out of range")
        self.expect_refused(RUN + ["--steps", "10"], r"HALOEX_HOST_WAIT_TIMEOUT='1e10': use a number of seconds",
                            env_extra={"HALOEX_HOST_WAIT_TIMEOUT": "1e10"})

    def test_jacobi_wait_limits_that_wrap_as_nanoseconds_are_refused(self):
        jacobi = os.environ.get("HALOEX_JACOBI", "")
        if not jacobi:
            self.skipTest("HALOEX_JACOBI is not set (no haloex-jacobi in this build)")
        for value in ("nan", "1e308"):
            result = subprocess.run([jacobi, "--wait-timeout", value], capture_output=True, text=True, timeout=60)
            self.assertEqual(result.returncode, 2, result.stderr)
            self.assertIn(f"--wait-timeout {value}: use 0 (default 120) or a number of seconds up to 1e+09",
                          result.stderr.replace("1e+308", "1e308"))

    def test_plan_refuses_rank_counts_it_cannot_build(self):
        plan = os.environ.get("HALOEX_PLAN", "")
        if not plan:
            self.skipTest("HALOEX_PLAN is not set (no haloex-plan in this build)")
        for ranks in ("2147483647", "1000000"):
            result = subprocess.run([plan, "--ranks", ranks], capture_output=True, text=True, timeout=60)
            self.assertNotEqual(result.returncode, 0)
            self.assertIn(f"--ranks: Value {ranks} not in range 1 to 65536", result.stderr)


class StartUp(FaultCase):
    """Low (issue 38): start-up failures without a hint, a start-up that
    ignored SIGTERM, and a fast atom never checked in a short run."""

    def test_system_too_large_for_memory_says_so(self):
        i = RUN.index("--atoms")
        self.expect_refused(RUN[:i] + RUN[i + 2:] + ["--atoms", "1000000000"],
                            r"out of memory \(std::bad_alloc\): a system of 1000000000 atoms \(--atoms\) does not fit "
                            r"in this machine's memory", shell_prefix="ulimit -v 4000000")

    def test_signal_while_an_input_blocks_ends_the_start_up(self):
        for option in ("--gro", "--restart"):
            with self.subTest(option=option):
                fifo = self.path(f"input{option}")
                os.mkfifo(fifo)  # never written: opening it blocks
                proc = self.start_md(RUN + [option, fifo, "--steps", "10"])
                time.sleep(1.0)
                self.assertIsNone(proc.poll(), "".join(self.stderr))
                proc.send_signal(signal.SIGTERM)
                status, _, err = self.finish(proc, timeout=30)
                self.assertEqual(status, SIGTERM_STATUS, err)
                self.assertIn("stopped by SIGTERM during start-up, while reading its input: nothing was run", err)

    def test_atom_too_fast_at_the_start_is_refused_before_step_zero(self):
        with open(os.path.join(DATA_DIR, "ref-3000.gro")) as f:
            lines = f.read().splitlines()
        for i in range(2, len(lines) - 1):
            lines[i] += "  0.0010  0.0000  0.0000"
        lines[102] = lines[102][:-24] + " 60.0000  0.0000  0.0000"  # atom 101: 0.12 nm per 2 fs step
        self.write("fast.gro", "\n".join(lines) + "\n")
        self.expect_refused(RUN + ["--gro", "fast.gro", "--steps", "10"],
                            r"--gro fast\.gro: atom 100 \(global id\) would move 0\.12 nm in the first step")

    def test_full_disk_at_the_first_write_leaves_no_empty_outputs(self):
        # A full disk, simulated by a file-size limit of 0 (SIGXFSZ ignored, so
        # the write fails with EFBIG as with ENOSPC).
        self.expect_refused(RUN + ["--steps", "10", "--traj", "t.gro", "--energy", "e.xvg"],
                            r"--energy e\.xvg: cannot append: File too large", shell_prefix="trap '' XFSZ; ulimit -f 0")
        self.assertEqual(sorted(os.listdir(self.dir)), [])


class RestartFromAnOlderCheckpoint(FaultCase):
    """Low (issue 38): a restart from an older checkpoint cut the later frames
    and rows without a trace. Now what it cuts is kept in #NAME.cut.N#."""

    def test_frames_and_rows_a_restart_cuts_are_kept(self):
        outputs = ["--traj", "t.gro", "--traj-every", "5", "--energy", "e.xvg"]
        status, _, err = self.run_md(RUN + ["--steps", "20", "--cpt", "c.cpt"] + outputs)
        self.assertEqual(status, 0, err)
        shutil.copy(self.path("c.cpt"), self.path("at20.cpt"))
        status, _, err = self.run_md(RUN + ["--steps", "20", "--restart", "c.cpt", "--cpt", "c.cpt"] + outputs)
        self.assertEqual(status, 0, err)
        with open(self.path("t.gro")) as f:
            whole = f.read()
        status, out, err = self.run_md([a for a in RUN if a != "--quiet"] +
                                       ["--steps", "10", "--restart", "at20.cpt", "--cpt", "c.cpt"] + outputs)
        self.assertEqual(status, 0, err)
        self.assertRegex(out, r"--traj t\.gro: cut back from \d+ to \d+ bytes, .* the \d+ bytes cut are kept in "
                              r"#t\.gro\.cut\.1#")
        self.assertEqual(frame_steps(self.path("#t.gro.cut.1#")), [25, 30, 35, 40])
        self.assertEqual(self.read("#t.gro.cut.1#"), whole[whole.index("haloex-md t= 0.05000 step= 25"):])
        self.assertTrue(os.path.exists(self.path("#e.xvg.cut.1#")))
        self.assertEqual(frame_steps(self.path("t.gro")), list(range(0, 31, 5)))

    def test_h5md_frames_a_restart_cuts_are_kept(self):
        """The H5MD trajectory's cut frames were still dropped without a trace
        (HDF5 frames are no byte range: the whole file before the cut is kept)."""
        missing = DerivedNames.h5md_missing(self)
        if missing:
            self.skipTest(missing)
        outputs = ["--traj", "t.h5", "--traj-every", "5"]
        status, _, err = self.run_md(RUN + ["--steps", "20", "--cpt", "c.cpt"] + outputs)
        self.assertEqual(status, 0, err)
        shutil.copy(self.path("c.cpt"), self.path("at20.cpt"))
        status, _, err = self.run_md(RUN + ["--steps", "20", "--restart", "c.cpt", "--cpt", "c.cpt"] + outputs)
        self.assertEqual(status, 0, err)
        before = digest(self.path("t.h5"))
        status, out, err = self.run_md([a for a in RUN if a != "--quiet"] +
                                       ["--steps", "10", "--restart", "at20.cpt", "--cpt", "c.cpt"] + outputs)
        self.assertEqual(status, 0, err)
        self.assertRegex(out, r"--traj t\.h5: cut back from 9 to 5 frames, .* the file as it was before the cut is "
                              r"kept in #t\.h5\.cut\.1#")
        self.assertEqual(digest(self.path("#t.h5.cut.1#")), before)


class StopBetweenEnergySteps(FaultCase):
    """Low (issue 38): after a stop at a search step between two energy steps
    the restart counted its energy steps from its own first step, so its rows
    (and, with v-rescale, its thermostat's coupling and so its trajectory)
    differed from the uninterrupted run's."""

    def test_restart_after_a_stop_between_energy_steps_continues_the_energies_exactly(self):
        self.require_hooks()
        common = ["--device", "cpu", "--ranks", "2", "--thermo-every", "25", "--thermostat", "v-rescale",
                  "--energy", "e.xvg", "--traj", "t.gro", "--traj-every", "10", "--quiet"]
        os.mkdir(self.path("whole"))
        status, _, err = self.run_md(["--device", "cpu", "--ranks", "2", "--atoms", "1000", "--nstlist", "10",
                                      "--thermo-every", "25", "--thermostat", "v-rescale", "--energy", "whole/e.xvg",
                                      "--traj", "whole/t.gro", "--traj-every", "10", "--quiet", "--steps", "100"])
        self.assertEqual(status, 0, err)
        # SIGTERM at step 25 stops at the search step 30, between the energy steps 25 and 50.
        status, _, err = self.run_md(common + ["--atoms", "1000", "--nstlist", "10", "--steps", "100", "--cpt",
                                               "c.cpt"], env_extra={"HALOEX_TEST_STOP_SIGNAL": "TERM@25"})
        self.assertEqual(status, SIGTERM_STATUS, err)
        self.assertEqual(checkpoint_step(self.path("c.cpt")), 30)
        status, _, err = self.run_md(common + ["--steps", "70", "--restart", "c.cpt", "--cpt", "c.cpt"])
        self.assertEqual(status, 0, err)
        self.assertEqual(self.read("e.xvg"), self.read("whole/e.xvg"))
        self.assertEqual(digest(self.path("t.gro")), digest(self.path("whole", "t.gro")))


CASES = [CheckpointPreviousCopy, DerivedNames, EarlierAndConcurrentRuns, SchedulerSignals, OptionsThatDidNothing,
         InputsAndSettings, StartUp, RestartFromAnOlderCheckpoint, StopBetweenEnergySteps]


if __name__ == "__main__":
    sys.exit(main(CASES))
