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
import signal
import stat
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from test_md_cli import CliCase, HOOKS_ON, checkpoint_step, frame_steps, json_of  # noqa: E402

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

    def test_kill_before_the_exchange_leaves_the_old_checkpoint_in_place(self):
        self.crash("synced")
        self.assertEqual(checkpoint_step(self.path("run.cpt")), 10)
        self.assertFalse(os.path.exists(self.path("run.cpt.prev")))
        status, _, err = self.restart("run.cpt")
        self.assertEqual(status, 0, err)
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


CASES = [CheckpointPreviousCopy, DerivedNames]


def list_tests():
    for case in CASES:
        for name in sorted(n for n in vars(case) if n.startswith("test_")):
            print(f"{case.__name__}.{name}")


if __name__ == "__main__":
    if sys.argv[1:] == ["--list"]:
        list_tests()
        sys.exit(0)
    unittest.main()
