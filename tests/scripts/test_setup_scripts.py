"""scripts/setup.sh and its helpers (scripts/lib/deps.sh, build.sh), without installing or building anything:
what each profile installs, the messages when nothing can be installed, and the build's progress display
(run by ctest as scripts_setup: python3 -m unittest)."""
import os
import shutil
import subprocess
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SETUP = os.path.join(REPO, "scripts", "setup.sh")
DEPS = os.path.join(REPO, "scripts", "lib", "deps.sh")
BUILD = os.path.join(REPO, "scripts", "lib", "build.sh")
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
BASH = shutil.which("bash") or "/bin/bash"


def bash(script, path, env_extra=None):
    env = {"PATH": path, "HOME": os.environ.get("HOME", "/tmp")}
    env.update(env_extra or {})
    return subprocess.run([BASH, "-c", script], capture_output=True, text=True, env=env, timeout=60)


def stub(directory, name, text):
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + text)
    os.chmod(path, 0o755)


class ProfilesTest(unittest.TestCase):
    def listed(self, profile):
        done = subprocess.run([SETUP, profile, "--list"], capture_output=True, text=True, timeout=60)
        self.assertEqual(done.returncode, 0, done.stderr)
        return done.stdout

    def test_run_installs_only_what_haloex_md_needs(self):
        run = self.listed("run")
        for piece in ("cmake", "ninja-build", "g++", "libcli11-dev", "nlohmann-json3-dev", "libfmt-dev"):
            self.assertIn(f"required apt {piece}\n", run)
        for test_only in ("gtest", "gmock", "clang-format", "clang-tidy", "doxygen", "benchmark", "requirements.txt"):
            self.assertNotIn(test_only, run)

    def test_test_installs_the_test_tools_too(self):
        test = self.listed("test")
        self.assertIn("required apt libgtest-dev libgmock-dev\n", test)
        self.assertIn("optional apt clang-format\n", test)
        self.assertIn("optional apt clang-tidy\n", test)
        self.assertIn("optional apt doxygen\n", test)
        self.assertIn("optional pip tests/requirements.txt bench/requirements.txt\n", test)
        self.assertNotIn("benchmark", test)  # Google Benchmark: used nowhere

    def test_unknown_profile_is_refused(self):
        done = subprocess.run([SETUP, "everything"], capture_output=True, text=True, timeout=60)
        self.assertEqual(done.returncode, 2)
        self.assertIn("usage", done.stderr)


class MissingPackagesTest(unittest.TestCase):
    """deps_resolve with pieces that are never present ('false' checks) and stand-ins for apt-get."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.bin = os.path.join(self.tmp.name, "bin")
        os.makedirs(self.bin)
        self.log = os.path.join(self.tmp.name, "apt.log")

    def tearDown(self):
        self.tmp.cleanup()

    def resolve(self, wants, path, env_extra=None):
        script = f". {DEPS}\n" + "".join(f"deps_want {w}\n" for w in wants) + f"deps_resolve {self.log}\n"
        return bash(script, path, env_extra)

    def test_no_apt_get_says_so_and_stops_for_a_required_piece(self):
        # A PATH of an empty directory: no apt-get anywhere (the checks are builtins).
        done = self.resolve(['required false "libfoo-dev"', 'optional false clang-format "format_check skips"'],
                            self.bin)
        self.assertEqual(done.returncode, 1, done.stdout)
        self.assertIn("has no apt-get", done.stdout)
        self.assertIn("error: required and missing: libfoo-dev", done.stdout)
        self.assertIn("skipped: clang-format (format_check skips)", done.stdout)
        self.assertNotIn("HALOEX_NO_INSTALL", done.stdout)  # it was not set: the old, wrong advice

    def test_no_registry_says_so(self):
        stub(self.bin, "apt-get", 'case "$*" in *update*) echo "W: Failed to fetch http://deb.debian.org/x"; '
                                  'exit 0;; esac\necho "E: Unable to locate package"; exit 100\n')
        stub(self.bin, "id", 'echo 0\n')
        done = self.resolve(['required false "libfoo-dev"'], f"{self.bin}:{SYSTEM_PATH}")
        self.assertEqual(done.returncode, 1, done.stdout)
        self.assertIn("reached no package registry", done.stdout)
        self.assertIn("carried .deb files", done.stdout)

    def test_optional_pieces_missing_are_skips_not_a_stop(self):
        stub(self.bin, "apt-get", 'case "$*" in *update*) echo "W: Failed to fetch x"; exit 0;; esac\nexit 100\n')
        stub(self.bin, "id", 'echo 0\n')
        done = self.resolve(['optional false clang-format "format_check skips"', 'optional false libhdf5-dev '
                             '"no HDF5"', 'required true cmake'], f"{self.bin}:{SYSTEM_PATH}")
        self.assertEqual(done.returncode, 0, done.stdout)
        self.assertEqual(done.stdout.count("skipped:"), 2, done.stdout)

    def test_no_install_names_the_variable(self):
        done = self.resolve(['required false "libfoo-dev"'], f"{self.bin}:{SYSTEM_PATH}", {"HALOEX_NO_INSTALL": "1"})
        self.assertEqual(done.returncode, 1)
        self.assertIn("unset HALOEX_NO_INSTALL", done.stdout)


class ProgressTest(unittest.TestCase):
    """build_with_progress against a stand-in cmake that prints ninja's status lines and a compiler warning."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.bin = os.path.join(self.tmp.name, "bin")
        os.makedirs(self.bin)
        self.log = os.path.join(self.tmp.name, "build.log")

    def tearDown(self):
        self.tmp.cleanup()

    def build(self, status):
        stub(self.bin, "cmake", 'i=1\nwhile [ $i -le 200 ]; do echo "[$i/200] Building CXX object x$i.o"; '
                                'i=$((i+1)); done\n'
                                'echo "x.cpp:1:2: warning: something [-Wrestrict]"\n'
                                'echo "k.cu(212): warning #20054-D: dynamic initialization"\n'
                                f'[ {status} = 0 ] || echo "x.cpp:3:4: error: broken"\nexit {status}\n')
        stub(self.bin, "nproc", "echo 2\n")
        return bash(f". {BUILD}\nbuild_with_progress build {self.log} haloex-md", f"{self.bin}:{SYSTEM_PATH}")

    def test_progress_in_steps_warnings_in_the_log(self):
        done = self.build(0)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        progress = [line for line in done.stdout.splitlines() if "building:" in line]
        self.assertLessEqual(len(progress), 11, done.stdout)
        self.assertGreaterEqual(len(progress), 10, done.stdout)
        self.assertIn("200/200 (100%)", progress[-1])
        self.assertNotIn("Wrestrict", done.stdout)
        self.assertNotIn("20054", done.stdout)
        self.assertIn("2 compiler warning line(s)", done.stdout)
        with open(self.log) as f:
            log = f.read()
        self.assertIn("[-Wrestrict]", log)
        self.assertIn("[200/200]", log)

    def test_a_failed_build_shows_its_error_and_status(self):
        done = self.build(3)
        self.assertEqual(done.returncode, 3)
        self.assertIn("error: broken", done.stdout)
        self.assertIn("build failed (exit 3)", done.stdout)


if __name__ == "__main__":
    unittest.main()
