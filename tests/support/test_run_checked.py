#!/usr/bin/env python3
"""run_checked.py judges what it runs: the exit status as well as the output
(a crash after the expected line fails), the figures, the skips."""
import os
import subprocess
import sys
import unittest

RUN_CHECKED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "run_checked.py")


def checked(*args, script):
    """run_checked.py's exit status and output for `sh -c script` under `args`."""
    p = subprocess.run([sys.executable, RUN_CHECKED, *args, "--", "sh", "-c", script], capture_output=True, text=True)
    return p.returncode, p.stdout


class RunChecked(unittest.TestCase):
    def test_the_expected_line_and_status_pass(self):
        self.assertEqual(checked("--match", "forces match", script="echo forces match")[0], 0)

    def test_a_crash_after_the_expected_line_fails(self):
        status, out = checked("--match", "forces match", script="echo forces match; kill -SEGV $$")
        self.assertEqual(status, 1)
        self.assertIn("exit status -11, expected 0", out)

    def test_a_refusal_must_fail_with_its_status_and_message(self):
        self.assertEqual(checked("--status", "2", "--match", "use a power", script="echo use a power; exit 2")[0], 0)
        self.assertEqual(checked("--status", "2", "--match", "use a power", script="echo use a power; exit 0")[0], 1)
        self.assertEqual(checked("--status", "nonzero", "--match", "x", script="echo x; exit 134")[0], 0)
        self.assertEqual(checked("--status", "nonzero", "--match", "x", script="echo x")[0], 1)

    def test_a_refusal_that_still_did_the_work_fails(self):
        args = ("--status", "nonzero", "--match", "cannot write", "--no-match", r"summary \(")
        self.assertEqual(checked(*args, script="echo cannot write; exit 2")[0], 0)
        status, out = checked(*args, script="echo cannot write; echo 'summary (48 x 36)'; exit 2")
        self.assertEqual(status, 1)
        self.assertIn("the output matches 'summary \\\\('", out)

    def test_exit_77_is_a_skip_unless_expected(self):
        self.assertEqual(checked("--match", "ok", script="echo SKIPPED: no GPU; exit 77")[0], 77)
        self.assertEqual(checked("--status", "77", "--match", "refused", script="echo refused; exit 77")[0], 0)
        self.assertEqual(checked("--status", "77", "--skip-match", "needs a GPU", "--match", "refused",
                                 script="echo needs a GPU; exit 77")[0], 77)

    def test_figures_must_be_finite_and_in_range(self):
        fig = ["--figure", "median", r"median (\S+)", ">0", "1e6"]
        self.assertEqual(checked(*fig, script="echo median 2.5; echo median 3")[0], 0)
        for bad in ("0", "-1", "nan", "inf", "2e6", "abc"):
            status, out = checked(*fig, script=f"echo median 2.5; echo median {bad}")
            self.assertEqual(status, 1, bad)
        self.assertEqual(checked(*fig, script="echo nothing")[0], 1)
        self.assertEqual(checked("--figure", "error", r"error (\S+)", "0", "1e-9", script="echo error 0.00e+00")[0], 0)


if __name__ == "__main__":
    unittest.main()
