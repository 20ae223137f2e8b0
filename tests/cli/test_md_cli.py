#!/usr/bin/env python3
"""haloex-md as a careless or hostile user runs it (CPU path): every test runs
the built program in a directory of its own (ctest runs them in parallel) and
checks the exit status, the message and what is left on disk. Each test is one
ctest (tests/CMakeLists.txt lists them with --list).

Environment: HALOEX_MD, the haloex-md to run; HALOEX_TEST_DATA_DIR, tests/data.
Every test also works as root: no permission bits, but paths under a regular
file, FIFOs, symbolic links and device nodes.
"""
import hashlib
import json
import os
import queue
import re
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HALOEX_MD = os.environ.get("HALOEX_MD", "haloex-md")
DATA_DIR = os.environ.get("HALOEX_TEST_DATA_DIR", os.path.join(os.path.dirname(__file__), "..", "data"))
# A small, quick CPU run: 1000 lattice atoms on 2 virtual ranks.
QUICK = ["--device", "cpu", "--ranks", "2", "--atoms", "1000", "--steps", "10", "--quiet"]


def quick(extra):
    """QUICK with the options of `extra` (pairs of option and value) given there instead."""
    given = set(extra[0::2])
    args = []
    for i in range(0, len(QUICK)):
        if QUICK[i] in given or (i > 0 and QUICK[i - 1] in given):
            continue
        args.append(QUICK[i])
    return args + extra


def frame_steps(path):
    """The step of every frame of a haloex-md trajectory, in file order."""
    with open(path) as f:
        return [int(m) for m in re.findall(r"^haloex-md t= \S+ step= (\d+)$", f.read(), re.M)]


def checkpoint_step(path):
    """The step in a checkpoint's header (after the magic, version and marker)."""
    with open(path, "rb") as f:
        return struct.unpack("=q", f.read(24)[16:24])[0]


def checkpoint_atoms(path, atoms):
    """A checkpoint's atom records (ids, types, positions, velocities), without the header or checksum."""
    with open(path, "rb") as f:
        data = f.read()
    return data[-(8 + 64 * atoms):-8]


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class CliCase(unittest.TestCase):
    """Runs haloex-md in a directory of its own."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="haloex_md_cli_")
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def run_md(self, args, timeout=300, shell_prefix=None, env_extra=None):
        """Runs haloex-md in the test directory; returns (status, stdout, stderr)."""
        command = [HALOEX_MD] + [str(a) for a in args]
        if shell_prefix:
            # `exec` keeps the shell's pid: the prefix may use $$ as haloex-md's pid.
            command = ["sh", "-c", shell_prefix + ' && exec "$@"', "sh"] + command
        env = dict(os.environ, OMP_NUM_THREADS="1")
        for name in [n for n in env if n.startswith(("OMPI_COMM_WORLD", "PMI_", "PMIX_", "SLURM_"))]:
            del env[name]  # never look launched by mpirun
        env.update(env_extra or {})
        result = subprocess.run(command, cwd=self.dir, env=env, capture_output=True, text=True,
                                errors="backslashreplace", timeout=timeout)
        return result.returncode, result.stdout, result.stderr

    def start_md(self, args, cwd=None, preexec_fn=None):
        """Starts haloex-md in the test directory (or `cwd`); lines of its stdout arrive in self.lines."""
        env = dict(os.environ, OMP_NUM_THREADS="1")
        for name in [n for n in env if n.startswith(("OMPI_COMM_WORLD", "PMI_", "PMIX_", "SLURM_"))]:
            del env[name]
        proc = subprocess.Popen([HALOEX_MD] + [str(a) for a in args], cwd=cwd or self.dir, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="backslashreplace",
                                preexec_fn=preexec_fn)
        def cleanup():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdout.close()
            proc.stderr.close()
        self.addCleanup(cleanup)
        self.lines = queue.Queue()
        self.stdout, self.stderr = [], []

        def pump(stream, into, lines):
            for line in stream:
                into.append(line)
                if lines:
                    self.lines.put(line)
            if lines:
                self.lines.put(None)
        self.pumps = [threading.Thread(target=pump, args=(proc.stdout, self.stdout, True), daemon=True),
                      threading.Thread(target=pump, args=(proc.stderr, self.stderr, False), daemon=True)]
        for t in self.pumps:
            t.start()
        return proc

    def wait_for_step(self, at_least, timeout=120):
        """Waits for an energy line of a step >= at_least; returns that step."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=1)
            except queue.Empty:
                continue
            if line is None:
                self.fail("haloex-md ended before step %d:\n%s" % (at_least, "".join(self.stdout)))
            fields = line.split()
            if fields and fields[0].isdigit() and int(fields[0]) >= at_least:
                return int(fields[0])
        self.fail("no progress to step %d within %d s" % (at_least, timeout))

    def finish(self, proc, timeout=120):
        """Waits for the end; returns (status, stdout, stderr)."""
        proc.wait(timeout=timeout)
        for t in self.pumps:
            t.join(timeout=10)
        return proc.returncode, "".join(self.stdout), "".join(self.stderr)

    def run_mpirun(self, ranks, args):
        """haloex-md under mpirun (OpenMPI as ctest runs it: as root, oversubscribed, shared memory)."""
        mpirun = shutil.which("mpirun")
        if mpirun is None:
            self.skipTest("no mpirun on PATH")
        env = dict(os.environ, OMP_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   OMPI_MCA_rmaps_base_oversubscribe="1", OMPI_MCA_btl="self,vader",
                   OMPI_MCA_btl_vader_single_copy_mechanism="none")
        result = subprocess.run([mpirun, "-np", str(ranks), HALOEX_MD] + [str(a) for a in args], cwd=self.dir,
                                env=env, capture_output=True, text=True, errors="backslashreplace", timeout=300)
        return result.returncode, result.stdout, result.stderr

    def expect_refused(self, args, message, status=1, **kwargs):
        """A bad run: `status` (None: any but 0), `message` (a regex) on stderr, and no step was run."""
        got, out, err = self.run_md(args, **kwargs)
        if status is None:
            self.assertNotEqual(got, 0, f"stdout:\n{out}\nstderr:\n{err}")
        else:
            self.assertEqual(got, status, f"status {got}\nstdout:\n{out}\nstderr:\n{err}")
        self.assertRegex(err, message)
        self.assertNotIn("Performance:", out, "the run went ahead")
        return out, err

    def copy_reference(self, name="x.gro"):
        shutil.copy(os.path.join(DATA_DIR, "ref-3000.gro"), self.path(name))
        return name

    def leftovers(self):
        """Temporaries and other files a failed run must not leave behind."""
        return sorted(n for n in os.listdir(self.dir) if ".tmp" in n)


class MdCli(CliCase):
    # ---- 1. the checkpoint writer must not destroy files it does not own ----------

    def test_checkpoint_onto_device_node_refused(self):
        before = os.stat("/dev/null")
        self.expect_refused(QUICK + ["--cpt", "/dev/null"], r"--cpt /dev/null: the path is a character device")
        after = os.stat("/dev/null")
        self.assertTrue(stat.S_ISCHR(after.st_mode))
        self.assertEqual((before.st_ino, before.st_rdev), (after.st_ino, after.st_rdev))

    def test_checkpoint_onto_fifo_refused(self):
        os.mkfifo(self.path("state.cpt"))
        self.expect_refused(QUICK + ["--cpt", "state.cpt"], r"--cpt state.cpt: the path is a FIFO")
        self.assertTrue(stat.S_ISFIFO(os.lstat(self.path("state.cpt")).st_mode))

    def test_checkpoint_temporary_does_not_follow_planted_link(self):
        # The old temporary name was "<target>.tmp.<pid>": plant a link under it.
        with open(self.path("victim"), "w") as f:
            f.write("precious\n")
        status, out, err = self.run_md(QUICK + ["--cpt", "state.cpt"],
                                       shell_prefix="ln -s victim state.cpt.tmp.$$")
        self.assertEqual(status, 0, err)
        with open(self.path("victim"), "rb") as f:
            self.assertEqual(f.read(), b"precious\n")
        self.assertTrue(stat.S_ISREG(os.lstat(self.path("state.cpt")).st_mode))
        with open(self.path("state.cpt"), "rb") as f:
            self.assertEqual(f.read(8), b"HALOEXCP")

    def test_checkpoint_onto_symbolic_link_refused(self):
        with open(self.path("victim"), "w") as f:
            f.write("precious\n")
        os.symlink("victim", self.path("state.cpt"))
        self.expect_refused(QUICK + ["--cpt", "state.cpt"], r"--cpt state.cpt: the path is a symbolic link")
        with open(self.path("victim")) as f:
            self.assertEqual(f.read(), "precious\n")

    # ---- 2. an output must not overwrite an input or another output ---------------

    def test_trajectory_onto_input_structure_refused(self):
        gro = self.copy_reference()
        before = digest(self.path(gro))
        self.expect_refused(["--device", "cpu", "--ranks", "2", "--steps", "10", "--gro", gro, "--traj", gro],
                            r"--traj x.gro is the same file as the input --gro x.gro: the run would overwrite its "
                            r"input")
        self.assertEqual(digest(self.path(gro)), before)

    def test_json_onto_input_structure_refused(self):
        gro = self.copy_reference()
        before = digest(self.path(gro))
        os.symlink(gro, self.path("alias.gro"))  # the same file under another name
        self.expect_refused(["--device", "cpu", "--ranks", "2", "--steps", "10", "--gro", gro, "--json",
                             "alias.gro"], r"--json alias.gro is the same file as the input --gro x.gro")
        self.assertEqual(digest(self.path(gro)), before)

    def test_json_onto_checkpoint_refused(self):
        self.expect_refused(QUICK + ["--cpt", "r.cpt", "--json", "./r.cpt"],
                            r"--cpt r.cpt and --json ./r.cpt are the same file: one output would overwrite the other")
        self.assertFalse(os.path.exists(self.path("r.cpt")))

    def test_json_onto_restart_checkpoint_refused(self):
        status, _, err = self.run_md(QUICK + ["--cpt", "r.cpt"])
        self.assertEqual(status, 0, err)
        before = digest(self.path("r.cpt"))
        self.expect_refused(["--device", "cpu", "--ranks", "2", "--steps", "10", "--restart", "r.cpt", "--cpt",
                             "r.cpt", "--json", "r.cpt"],
                            r"--json r.cpt is the same file as the input --restart r.cpt")
        self.assertEqual(digest(self.path("r.cpt")), before)

    def test_write_gromacs_onto_input_refused(self):
        shutil.copy(os.path.join(DATA_DIR, "ref-3000.gro"), self.path("conf.gro"))
        self.expect_refused(["--device", "cpu", "--ranks", "2", "--steps", "10", "--gro", "conf.gro",
                             "--write-gromacs", "."],
                            r"--write-gromacs \. \(conf\.gro\) \./conf\.gro is the same file as the input --gro "
                            r"conf\.gro")

    def test_restart_in_place_still_works(self):
        status, _, err = self.run_md(QUICK + ["--cpt", "r.cpt"])
        self.assertEqual(status, 0, err)
        status, out, err = self.run_md(["--device", "cpu", "--ranks", "2", "--steps", "10", "--quiet",
                                        "--restart", "r.cpt", "--cpt", "r.cpt", "--json", "r.json"])
        self.assertEqual(status, 0, err)
        self.assertTrue(os.path.exists(self.path("r.cpt.prev")))
        self.assertEqual(self.leftovers(), [])

    # ---- 4. explosions stop with a reason ------------------------------------------

    def close_pair_gro(self, distance_nm):
        """ref-3000.gro with atom 2 moved to `distance_nm` from atom 1 (along x)."""
        with open(os.path.join(DATA_DIR, "ref-3000.gro")) as f:
            lines = f.read().splitlines()
        first = lines[2]
        x = float(first[20:28]) + distance_nm
        lines[3] = lines[3][:20] + f"{x:8.3f}" + first[28:44] + lines[3][44:]
        with open(self.path("close.gro"), "w") as f:
            f.write("\n".join(lines) + "\n")
        return "close.gro"

    def test_atoms_too_close_in_the_input_are_refused_before_step_zero(self):
        gro = self.close_pair_gro(0.02)
        out, _ = self.expect_refused(
            ["--device", "cpu", "--ranks", "2", "--steps", "10", "--gro", gro],
            r"--gro close.gro: atoms 0 and 1 \(global ids, lines 3 and 4 of the file\) are only 0\.0200 nm apart, "
            r"closer than --min-distance 0\.05 nm .*relax it \(energy minimisation\).*--min-distance 0 turns")
        self.assertNotIn("Step", out)

    def test_blow_up_from_close_atoms_stops_with_step_and_atom(self):
        gro = self.close_pair_gro(0.02)
        _, err = self.expect_refused(["--device", "cpu", "--ranks", "2", "--steps", "100", "--gro", gro,
                                      "--min-distance", "0", "--cpt", "state.cpt", "--json", "run.json"],
                                     r"(atom \d+ \(global id\)|temperature reached).* at step \d+.*the system blew up"
                                     r"\. Use a smaller --dt")
        self.assertNotIn("force oracle", err)
        self.assertNotIn("padding", err)
        # Nothing half-written is left: no JSON, no temporaries, no checkpoint of the blown-up state;
        # the run's log stays, up to the blow-up, as mdrun's does.
        self.assertEqual(sorted(os.listdir(self.dir)), ["close.gro", "md.log"])
        with open(self.path("md.log")) as f:
            self.assertIn("Settings (resolved):", f.read())

    def test_too_large_time_step_stops_with_a_reason(self):
        # 0.02 ps ran to the end at 1e23 K, or died in the force oracle's
        # internal message; --rlist keeps the buffer estimate for such a step
        # from asking for more than the box holds.
        _, err = self.expect_refused(["--device", "cpu", "--ranks", "2", "--atoms", "1000", "--steps", "200",
                                      "--dt", "0.02", "--rlist", "1.0", "--quiet", "--json", "run.json"],
                                     r"at step \d+.*atom \d+ \(global id\) (moves|has a non-finite).*the system "
                                     r"blew up\. Use a smaller --dt")
        self.assertNotIn("force oracle", err)
        self.assertEqual(os.listdir(self.dir), ["md.log"])  # the run's log, up to the blow-up

    # ---- 5. outputs are checked before the work ------------------------------------

    def test_json_into_missing_directory_refused_before_the_run(self):
        out, _ = self.expect_refused(QUICK[:-1] + ["--json", "nodir/run.json"],
                                     r"--json nodir/run\.json: the directory 'nodir' does not exist; create it first")
        self.assertNotIn("Step", out)

    def test_outputs_under_a_regular_file_refused_before_the_run(self):
        # What a read-only directory does for a user; as root only this fails.
        open(self.path("file"), "w").close()
        for option in ["--json", "--cpt", "--traj"]:
            with self.subTest(option=option):
                self.expect_refused(QUICK[:-1] + [option, "file/out"], option + r" file/out: .*is not a directory")

    def test_checkpoint_onto_directory_refused_before_the_run(self):
        os.mkdir(self.path("sub"))
        self.expect_refused(QUICK[:-1] + ["--cpt", "sub"], r"--cpt sub: the path is a directory")

    # ---- 6. numbers that wrap or are not checked -----------------------------------

    def test_numeric_options_out_of_range_are_refused_with_the_range(self):
        cases = [
            (["--steps", "2000000000000000"], r"--steps 2000000000000000: out of range; use -1 \(until stopped"),
            (["--steps", "-2"], r"--steps -2: out of range"),
            (["--atoms", "4294968296"], r"--atoms 4294968296: out of range; use 0 \(automatic\) or an even number"),
            (["--grid", "65536x65536x1"], r"rank grid 65536x65536x1 has 4294967296 ranks"),
            (["--ranks", "-3"], r"--ranks -3: out of range; use 0 \(automatic: 4\) or 1 to 1024"),
            (["--tau-t", "0"], r"--tau-t 0: out of range"),
            (["--tau-t", "-1"], r"--tau-t -1: out of range"),
            (["--tau-t", "nan"], r"--tau-t nan: out of range"),
            (["--buffer-tolerance", "nan"], r"--buffer-tolerance nan: out of range"),
            (["--temperature", "inf"], r"--temperature inf: out of range"),
            (["--thermo-every", "-5"], r"--thermo-every -5: out of range"),
            (["--cpt-every", "-1"], r"--cpt-every -1: out of range"),
            (["--wait-timeout", "nan"], r"--wait-timeout nan: out of range"),
        ]
        for extra, message in cases:
            with self.subTest(args=extra):
                self.expect_refused(quick(extra), message)
        # Refused while the command line is parsed (CLI11's exit status): an
        # unsigned option used to wrap -1 and clamp values past 2^64 - 1.
        for extra, message in [
            (["--seed", "-1"], r"--seed: -1 is out of range; use a whole number from 0 to 18446744073709551615"),
            (["--seed", "18446744073709551616"], r"--seed: 18446744073709551616 is out of range"),
        ]:
            with self.subTest(args=extra):
                self.expect_refused(quick(extra), message, status=None)

    def test_large_step_counts_do_not_wrap(self):
        # 2147483647 rounded up to a search step overflowed an int.
        status, out, err = self.run_md(QUICK + ["--cpt", "r.cpt", "--cpt-every", "2147483647"])
        self.assertEqual(status, 0, err)
        self.assertTrue(os.path.exists(self.path("r.cpt")))
        self.assertNotRegex(out + err, r"-\d{6,}")

    # ---- 7. bounded, escaped reads -------------------------------------------------

    def test_structure_without_line_ends_is_refused_quickly(self):
        self.expect_refused(["--device", "cpu", "--gro", "/dev/zero"],
                            r"/dev/zero:1: the line is longer than 4096 characters", timeout=60)

    def test_control_characters_of_the_input_are_escaped(self):
        with open(os.path.join(DATA_DIR, "ref-3000.gro")) as f:
            lines = f.read().splitlines()
        lines[2] = lines[2][:5] + "\x1b[2J" + lines[2][9:]  # a terminal escape as the residue name
        with open(self.path("evil.gro"), "w") as f:
            f.write("\n".join(lines) + "\n")
        _, err = self.expect_refused(["--device", "cpu", "--gro", "evil.gro"], r"evil\.gro:3: .*\\x1b\[2J")
        self.assertNotIn("\x1b", err)


class MdRestartOutputs(CliCase):
    """Defect 3, the restart half: a restart with the same --traj after a kill
    appended to the whole file, so the frames written after the last
    checkpoint came twice and out of order. The checkpoint now records where
    each continuing output stood; a restart cuts back to there, and refuses a
    file changed since."""

    def test_restart_after_kill_9_cuts_the_frames_after_the_checkpoint(self):
        args = ["--device", "cpu", "--ranks", "2", "--atoms", "1000", "--steps", "1000000", "--nstlist", "10",
                "--quiet", "--traj", "traj.gro", "--traj-every", "5", "--cpt", "state.cpt", "--cpt-every", "100"]
        proc = self.start_md(args)
        deadline = time.monotonic() + 120
        while True:
            self.assertLess(time.monotonic(), deadline, "no checkpoint with frames after it")
            time.sleep(0.01)
            if not os.path.exists(self.path("state.cpt")):
                continue
            frames = frame_steps(self.path("traj.gro"))
            if frames and frames[-1] >= checkpoint_step(self.path("state.cpt")) + 20:
                break
        proc.kill()
        proc.wait()
        step = checkpoint_step(self.path("state.cpt"))
        killed = frame_steps(self.path("traj.gro"))
        self.assertGreater(killed[-1], step, "no frame after the checkpoint: nothing to test")
        with open(self.path("traj.gro")) as f:
            before = f.read()
        status, out, err = self.run_md(["--device", "cpu", "--ranks", "2", "--steps", killed[-1] + 20 - step,
                                        "--restart", "state.cpt", "--traj", "traj.gro", "--traj-every", "5",
                                        "--cpt", "state.cpt"])
        self.assertEqual(status, 0, err)
        self.assertRegex(out, r"--traj traj\.gro: cut back from \d+ to \d+ bytes, where checkpoint state\.cpt "
                              r"recorded it \(step %d\)" % step)
        self.assertEqual(frame_steps(self.path("traj.gro")), list(range(0, killed[-1] + 21, 5)))
        # The frames written again are those the killed run wrote.
        with open(self.path("traj.gro")) as f:
            self.assertTrue(f.read().startswith(before))

    def test_restart_with_an_edited_trajectory_is_refused(self):
        status, _, err = self.run_md(QUICK + ["--traj", "traj.gro", "--traj-every", "5", "--cpt", "state.cpt"])
        self.assertEqual(status, 0, err)
        with open(self.path("traj.gro"), "r+") as f:
            f.truncate(len(f.read()) // 2)
        before = digest(self.path("traj.gro"))
        self.expect_refused(["--device", "cpu", "--ranks", "2", "--steps", "10", "--restart", "state.cpt", "--traj",
                             "traj.gro"],
                            r"--traj traj\.gro: the file has \d+ bytes, but checkpoint state\.cpt recorded it with "
                            r"\d+ bytes, 3 record\(s\), the last at step 10: it was cut or replaced after the "
                            r"checkpoint.*give --traj a new file name to start a new one at step 10")
        self.assertEqual(digest(self.path("traj.gro")), before)


def energy_rows(path):
    """The data rows of an --energy .xvg file: [time, LJ, Coulomb, ..., pressure] as strings."""
    with open(path) as f:
        return [line.split() for line in f if line.strip() and line[0] not in "#@"]


class MdEnergyFile(CliCase):
    """Issue 17's energy series (--energy, .xvg) through the output layer: every
    term in named columns, one row per energy step, the header once, and a
    restart that continues the file exactly where its checkpoint stood."""

    ARGS = ["--device", "cpu", "--ranks", "2", "--atoms", "1000", "--nstlist", "10", "--thermo-every", "10",
            "--quiet"]

    def test_rows_hold_every_term_of_the_json_series(self):
        status, _, err = self.run_md(self.ARGS + ["--steps", "40", "--energy", "ener.xvg", "--json", "run.json"])
        self.assertEqual(status, 0, err)
        with open(self.path("ener.xvg")) as f:
            text = f.read()
        for k, term in enumerate(["LJ (SR)", "Coulomb (SR)", "Potential", "Kinetic En.", "Total Energy",
                                  "Conserved En.", "Temperature", "Pressure"]):
            self.assertIn('@ s%d legend "%s"' % (k, term), text)
        rows = energy_rows(self.path("ener.xvg"))
        table = json_of(self.path("run.json"))["energy_series"]
        series = [dict(zip(table["columns"], row)) for row in table["rows"]]
        self.assertEqual(len(rows), len(series))
        for row, sample in zip(rows, series):
            values = [float(v) for v in row]
            self.assertAlmostEqual(values[0], sample["time"], places=6)
            for column, key in enumerate(["lj", "coulomb", "potential", "kinetic", "total", "conserved",
                                          "temperature", "pressure"], start=1):
                self.assertAlmostEqual(values[column], sample[key], delta=1e-9 * max(1.0, abs(sample[key])),
                                       msg=key)

    def test_restart_from_an_earlier_checkpoint_cuts_the_rows_after_it(self):
        # A 100-step run checkpoints at 50 (kept as state.cpt.prev) and at 100;
        # restarting from step 50 with the same file must drop rows 50..99
        # and write them again: the file then equals the uninterrupted run's.
        status, _, err = self.run_md(self.ARGS + ["--steps", "100", "--energy", "ener.xvg", "--cpt", "state.cpt",
                                                  "--cpt-every", "50"])
        self.assertEqual(status, 0, err)
        with open(self.path("ener.xvg")) as f:
            uninterrupted = f.read()
        self.assertEqual(checkpoint_step(self.path("state.cpt.prev")), 50)
        shutil.copy(self.path("state.cpt.prev"), self.path("at50.cpt"))
        status, out, err = self.run_md(["--device", "cpu", "--ranks", "2", "--steps", "50", "--thermo-every", "10",
                                        "--restart", "at50.cpt", "--energy", "ener.xvg", "--cpt", "again.cpt"])
        self.assertEqual(status, 0, err)
        self.assertRegex(out, r"--energy ener\.xvg: cut back from \d+ to \d+ bytes")
        with open(self.path("ener.xvg")) as f:
            self.assertEqual(f.read(), uninterrupted)
        self.assertEqual(sum(1 for line in uninterrupted.splitlines() if line.startswith("@ s0 ")), 1)

    def test_drift_from_fits_the_energy_steps_from_that_time(self):
        # Energy steps at 0, 10, 20, 30 and 40, the last step (0 to 0.08 ps): --drift-from 0.02 fits the last four.
        status, out, err = self.run_md(self.ARGS + ["--steps", "40", "--dt", "0.002", "--drift-from", "0.02",
                                                    "--json", "run.json"])
        self.assertEqual(status, 0, err)
        record = json_of(self.path("run.json"))
        table = record["energy_series"]
        rows = [dict(zip(table["columns"], row)) for row in table["rows"]]
        fitted = [(r["time"], r["conserved"]) for r in rows if r["time"] >= 0.02 - 1e-12]
        self.assertEqual(len(fitted), 4)
        n = len(fitted)
        st, se = sum(t for t, _ in fitted), sum(e for _, e in fitted)
        stt, ste = sum(t * t for t, _ in fitted), sum(t * e for t, e in fitted)
        slope = (n * ste - st * se) / (n * stt - st * st) / 1000  # 1000 atoms
        self.assertEqual(record["conserved_drift_samples"], 4)
        self.assertEqual(record["settings"]["drift_from_ps"], 0.02)
        self.assertAlmostEqual(record["conserved_drift_per_atom"], slope, delta=1e-9 * max(1.0, abs(slope)))
        self.assertRegex(out, r"Conserved-energy drift: \S+ kJ/mol/ps per atom \(least squares over 4 energy steps "
                              r"from 0\.02 ps on \(--drift-from\); over only 0\.06 ps: too short to mean much")
        # A fit over less than 10 ps is flagged, in the record too.
        self.assertAlmostEqual(record["conserved_drift_span_ps"], fitted[-1][0] - fitted[0][0], delta=1e-12)
        self.assertTrue(record["conserved_drift_too_short"])
        # The search parts come in the order a search step runs them, in ms to the microsecond.
        parts = re.search(r"Search step: \S+ ms \(rank 0, mean of \d+: (.*)\)", out).group(1)
        names = [p.rsplit(" ", 1)[0] for p in parts.split(", ")]
        self.assertEqual(names, ["upload", "download", "buffer check", "migrate", "plan", "transport set-up",
                                 "static data", "pair search", "step"])
        self.assertTrue(all(re.fullmatch(r"\d+\.\d{3}", p.rsplit(" ", 1)[1]) for p in parts.split(", ")), parts)

    def test_energy_terms_on_the_screen_are_named_as_in_md_log(self):
        status, out, err = self.run_md(["--device", "cpu", "--atoms", "1000", "--steps", "2", "--log", "run.log"])
        self.assertEqual(status, 0, err)
        self.assertRegex(out, r"Step +Time +LJ \(SR\) +Coulomb \(SR\)")
        self.assertNotIn("Coulomb (RF)", out)
        with open(self.path("run.log")) as f:
            self.assertIn("Coulomb (SR)", f.read())

    def test_drift_from_with_too_few_energy_steps_says_so(self):
        status, out, err = self.run_md(self.ARGS + ["--steps", "40", "--dt", "0.002", "--drift-from", "0.07",
                                                    "--json", "run.json"])
        self.assertEqual(status, 0, err)
        self.assertIn("Conserved-energy drift: not fitted: 1 energy step from 0.07 ps on (--drift-from), at least 3 "
                      "needed", out)
        self.assertEqual(json_of(self.path("run.json"))["conserved_drift_samples"], 1)

    def test_drift_from_outside_the_run_is_refused(self):
        self.expect_refused(self.ARGS + ["--steps", "40", "--dt", "0.002", "--drift-from", "1"],
                            r"--drift-from 1 ps: this run ends at 0\.08 ps \(step 40 of 0\.002 ps\); give a time "
                            r"within it, or 0 to fit the whole run")
        self.expect_refused(self.ARGS + ["--steps", "40", "--drift-from", "-1"], r"--drift-from -1: out of range")

    def test_energy_file_onto_the_input_structure_is_refused(self):
        shutil.copy(os.path.join(DATA_DIR, "ref-3000.gro"), self.path("x.gro"))
        status, _, err = self.run_md(self.ARGS + ["--steps", "10", "--gro", "x.gro", "--energy", "x.gro"])
        self.assertNotEqual(status, 0)
        self.assertIn("--energy x.gro is the same file as the input --gro x.gro", err)


def log_steps(path):
    """The steps of the energy blocks of a run log, in file order."""
    with open(path) as f:
        lines = f.read().splitlines()
    return [int(lines[i + 1].split()[0]) for i, line in enumerate(lines[:-1])
            if line.split() == ["Step", "Time"]]


class MdLog(CliCase):
    """Issue 17's run log (md.log by default): the settings with their reasons,
    an energy block per energy step, averages, the per-rank spread of the wall
    time; an existing log backed up, never overwritten; a restart continuing it
    through the output layer."""

    ARGS = ["--device", "cpu", "--ranks", "2", "--atoms", "1000", "--nstlist", "10", "--thermo-every", "10",
            "--quiet"]

    def test_log_holds_settings_energies_averages_and_per_rank_times(self):
        status, _, err = self.run_md(self.ARGS + ["--steps", "40", "--json", "run.json"])
        self.assertEqual(status, 0, err)
        with open(self.path("md.log")) as f:
            text = f.read()
        self.assertRegex(text, r"haloex-md \(haloex \d+\.\d+\.\d+\), commit")
        self.assertIn("Command line: ", text)
        self.assertRegex(text, r"nstlist +10 \(set")
        self.assertRegex(text, r"rlist +0\.9\d* nm \(buffer tolerance")
        rows = json_of(self.path("run.json"))["energy_series"]["rows"]
        self.assertEqual(log_steps(self.path("md.log")), [row[0] for row in rows])
        self.assertIn("A V E R A G E S", text)
        self.assertIn("Per-rank wall time (2 rank(s))", text)
        self.assertRegex(text, r"steps without search \(s\) +[\d.e-]+ +[\d.e-]+ +[\d.e-]+ +[\d.]+%")
        self.assertIn("Performance:", text)

    def test_existing_log_is_backed_up_never_overwritten(self):
        with open(self.path("md.log"), "w") as f:
            f.write("an earlier run's log\n")
        for expected in ("#md.log.1#", "#md.log.2#"):
            status, _, err = self.run_md(self.ARGS + ["--steps", "10"])
            self.assertEqual(status, 0, err)
            self.assertTrue(os.path.exists(self.path(expected)), expected)
        with open(self.path("#md.log.1#")) as f:
            self.assertEqual(f.read(), "an earlier run's log\n")

    def test_restart_from_an_earlier_checkpoint_continues_the_log_without_duplicates(self):
        status, _, err = self.run_md(self.ARGS + ["--steps", "100", "--cpt", "state.cpt", "--cpt-every", "50"])
        self.assertEqual(status, 0, err)
        uninterrupted = log_steps(self.path("md.log"))
        shutil.copy(self.path("state.cpt.prev"), self.path("at50.cpt"))
        status, out, err = self.run_md(["--device", "cpu", "--ranks", "2", "--steps", "50", "--thermo-every", "10",
                                        "--restart", "at50.cpt", "--cpt", "again.cpt"])
        self.assertEqual(status, 0, err)
        self.assertRegex(out, r"--log md\.log: cut back from \d+ to \d+ bytes")
        self.assertFalse(os.path.exists(self.path("#md.log.1#")), "a continued log is not backed up")
        with open(self.path("md.log")) as f:
            text = f.read()
        self.assertIn("Restarted from at50.cpt at step 50", text)
        self.assertEqual(log_steps(self.path("md.log")), uninterrupted)

    def test_log_none_writes_no_log_and_a_log_onto_the_input_is_refused(self):
        status, _, err = self.run_md(self.ARGS + ["--steps", "10", "--log", "none"])
        self.assertEqual(status, 0, err)
        self.assertFalse(os.path.exists(self.path("md.log")))
        shutil.copy(os.path.join(DATA_DIR, "ref-3000.gro"), self.path("x.gro"))
        status, _, err = self.run_md(self.ARGS + ["--steps", "10", "--gro", "x.gro", "--log", "x.gro"])
        self.assertNotEqual(status, 0)
        self.assertIn("--log x.gro is the same file as the input --gro x.gro", err)


def json_of(path):
    with open(path) as f:
        return json.load(f)


HOOKS_ON = os.environ.get("HALOEX_TEST_HOOKS_ON", "1") == "1"
MPIEXEC = os.environ.get("HALOEX_MPIEXEC", "")
SIGTERM_STATUS, SIGINT_STATUS, MAXH_STATUS = 128 + signal.SIGTERM, 128 + signal.SIGINT, 75


class MdStop(CliCase):
    """Defect 3, the signal half: SIGTERM or SIGINT (a scheduler's warning,
    Ctrl-C) ended the run with nothing written since the last checkpoint, by
    default the whole run. Now SIGTERM/SIGINT and --maxh stop it at the next
    search step, agreed by every rank, with a final checkpoint, the JSON (with
    the reason) and whole trajectory frames; a second signal stops at the next
    energy or search step; a signal during start-up ends with a message and
    writes nothing. Exit status: 128 + signal, 75 for --maxh."""

    # 1000 atoms on 2 ranks, searches every 10 steps, energies and frames every 5.
    RUN = ["--device", "cpu", "--ranks", "2", "--atoms", "1000", "--nstlist", "10", "--thermo-every", "5",
           "--traj", "traj.gro", "--traj-every", "5", "--cpt", "state.cpt", "--json", "run.json"]

    def require_hooks(self):
        if not HOOKS_ON:
            self.skipTest("this build has no test hooks (HALOEX_TEST_HOOKS=OFF): HALOEX_TEST_STOP_SIGNAL does nothing")

    def expect_stopped(self, status, err, reason, step, exit_status, search_step=True):
        """The stop as the exit status, the JSON and the checkpoint tell it."""
        self.assertEqual(status, exit_status, err)
        summary = json_of(self.path("run.json"))
        self.assertFalse(summary["completed"])
        self.assertEqual(summary["stop"], {"reason": reason, "step": step, "search_step": search_step,
                                           "exit_status": exit_status})
        self.assertEqual(summary["steps"], step)
        self.assertEqual(checkpoint_step(self.path("state.cpt")), step)
        # Whole frames, each once, up to the stop.
        self.assertEqual(frame_steps(self.path("traj.gro")), list(range(0, step + 1, 5)))

    def test_sigterm_stops_at_a_search_step_and_a_restart_continues_identically(self):
        proc = self.start_md(self.RUN + ["--steps", "1000000"])
        self.wait_for_step(20)
        proc.send_signal(signal.SIGTERM)
        status, out, err = self.finish(proc)
        stop = json_of(self.path("run.json"))["stop"]
        self.assertIsNotNone(stop, err)
        step = stop["step"]
        self.assertEqual(step % 10, 0, "not a search step")
        self.assertGreaterEqual(step, 20)
        self.expect_stopped(status, err, "SIGTERM", step, SIGTERM_STATUS)
        self.assertIn("Stopped by SIGTERM at step %d (a search step)" % step, out)
        # The restart continues the trajectory where the checkpoint is; the
        # result is the file an uninterrupted run writes, byte for byte.
        total = step + 30
        restart = ["--device", "cpu", "--ranks", "2", "--thermo-every", "5", "--traj", "traj.gro", "--traj-every",
                   "5", "--cpt", "state.cpt", "--restart", "state.cpt", "--steps", total - step, "--quiet"]
        status, out, err = self.run_md(restart)
        self.assertEqual(status, 0, err)
        os.mkdir(self.path("whole"))
        status, _, err = self.run_md(["--device", "cpu", "--ranks", "2", "--atoms", "1000", "--nstlist", "10",
                                      "--thermo-every", "5", "--traj", "whole/traj.gro", "--traj-every", "5",
                                      "--steps", total, "--quiet"])
        self.assertEqual(status, 0, err)
        self.assertEqual(frame_steps(self.path("traj.gro")), list(range(0, total + 1, 5)))
        self.assertEqual(digest(self.path("traj.gro")), digest(self.path("whole", "traj.gro")))

    def test_sigterm_at_a_chosen_step_stops_at_the_next_search_step(self):
        self.require_hooks()
        status, out, err = self.run_md(self.RUN + ["--steps", "100"], env_extra={"HALOEX_TEST_STOP_SIGNAL": "TERM@25"})
        self.expect_stopped(status, err, "SIGTERM", 30, SIGTERM_STATUS)

    def test_second_signal_stops_at_the_next_energy_step(self):
        self.require_hooks()
        # Energies every step: the first signal (step 12) would stop at 20, the
        # second (step 13) stops after step 13's energies, at 14.
        args = [("1" if prev == "--thermo-every" else a) for prev, a in zip([None] + self.RUN, self.RUN)]
        args += ["--steps", "100"]
        status, out, err = self.run_md(args, env_extra={"HALOEX_TEST_STOP_SIGNAL": "TERM@12,INT@13"})
        self.assertEqual(status, SIGTERM_STATUS, err)
        summary = json_of(self.path("run.json"))
        self.assertEqual(summary["stop"], {"reason": "SIGTERM", "step": 14, "search_step": False,
                                           "exit_status": SIGTERM_STATUS})
        self.assertEqual(checkpoint_step(self.path("state.cpt")), 14)
        self.assertEqual(frame_steps(self.path("traj.gro")), [0, 5, 10])
        # A checkpoint between searches is a correct restart too.
        status, _, err = self.run_md(["--device", "cpu", "--ranks", "2", "--steps", "16", "--restart", "state.cpt",
                                      "--traj", "traj.gro", "--traj-every", "5", "--cpt", "state.cpt", "--quiet"])
        self.assertEqual(status, 0, err)
        self.assertEqual(frame_steps(self.path("traj.gro")), [0, 5, 10, 15, 20, 25, 30])

    def test_third_signal_ends_the_process_at_once(self):
        # No search or energy step for minutes: the first two signals cannot
        # be acted on; the third ends the process by the default action.
        proc = self.start_md(["--device", "cpu", "--ranks", "1", "--atoms", "1000", "--steps", "1000000",
                              "--nstlist", "100000", "--rlist", "0.95", "--thermo-every", "1000000",
                              "--cpt", "state.cpt"])
        self.wait_for_step(0)
        for _ in range(3):
            time.sleep(0.2)
            proc.send_signal(signal.SIGTERM)
        status, out, err = self.finish(proc, timeout=60)
        self.assertEqual(status, -signal.SIGTERM, err)
        self.assertFalse(os.path.exists(self.path("state.cpt")))

    def test_maxh_stops_at_the_first_search_step_after_the_limit(self):
        # 1e-9 h: long past at the first search after step 0.
        status, out, err = self.run_md(self.RUN + ["--steps", "100", "--maxh", "1e-9"])
        self.expect_stopped(status, err, "maxh", 10, MAXH_STATUS)
        self.assertIn("Stopped by --maxh 1e-09 (0.99 of it passed) at step 10", out)

    def test_maxh_out_of_range_is_refused(self):
        self.expect_refused(QUICK + ["--maxh", "-1"], r"--maxh -1: out of range; use 0 \(no limit\)")

    def test_signal_during_start_up_writes_nothing(self):
        self.require_hooks()
        status, out, err = self.run_md(self.RUN + ["--steps", "100"], env_extra={"HALOEX_TEST_STOP_SIGNAL": "INT@start"})
        self.assertEqual(status, SIGINT_STATUS, err)
        self.assertIn("stopped by SIGINT during start-up, before step 0: nothing was run, and no checkpoint, "
                      "trajectory or JSON was written", err)
        self.assertEqual(os.listdir(self.dir), [])
        self.assertNotRegex(out, r"(?m)^\s+0\s")  # no energies: step 0 was not run

    def test_ranks_of_an_mpi_run_stop_at_the_same_step(self):
        """Only rank 0 gets the signal: the other learns it in the search
        step's reduction and both stop at step 30."""
        self.require_hooks()
        if not MPIEXEC:
            self.skipTest("this build has no MPI (no mpiexec)")
        env = dict(os.environ, OMP_NUM_THREADS="1", HALOEX_TEST_STOP_SIGNAL="TERM@25", OMPI_ALLOW_RUN_AS_ROOT="1",
                   OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1",
                   OMPI_MCA_btl="self,vader", OMPI_MCA_btl_vader_single_copy_mechanism="none")
        args = [a for a in self.RUN + ["--steps", "100", "--quiet"]]
        args = args[:args.index("--ranks")] + args[args.index("--ranks") + 2:]
        result = subprocess.run([MPIEXEC, "-n", "2", "--oversubscribe", "-x", "HALOEX_TEST_STOP_SIGNAL", HALOEX_MD]
                                + args, cwd=self.dir, env=env, capture_output=True, text=True, timeout=240)
        self.assertEqual(json_of(self.path("run.json"))["ranks"], 2)
        self.expect_stopped(result.returncode, result.stdout + result.stderr, "SIGTERM", 30, SIGTERM_STATUS)


class MdStepConventions(CliCase):
    """mdrun's nsteps conventions: --steps 0 ran the default 200 steps (and the
    JSON's energies were the last step's); -1 was refused. Now 0 is a
    single-point evaluation of the first step, -1 runs until stopped, and no
    --steps the documented default."""

    def test_steps_zero_is_a_single_point_evaluation(self):
        status, out, err = self.run_md(["--device", "cpu", "--ranks", "2", "--atoms", "1000", "--steps", "0",
                                        "--json", "run.json", "--traj", "traj.gro", "--cpt", "state.cpt"])
        self.assertEqual(status, 0, err)
        self.assertRegex(out, r"Single-point evaluation of step 0: maximum force [0-9.e+]+ kJ/mol/nm on atom \d+ "
                              r"\(global id\), RMS force [0-9.e+]+ kJ/mol/nm")
        summary = json_of(self.path("run.json"))
        self.assertEqual((summary["steps"], summary["requested_steps"], summary["completed"]), (0, 0, True))
        self.assertEqual(summary["energies"]["step"], 0)
        self.assertEqual([row[0] for row in summary["energy_series"]["rows"]], [0])
        self.assertGreater(summary["single_point"]["max_force"], summary["single_point"]["rms_force"])
        # Nothing advanced: the start's frame, no checkpoint.
        self.assertEqual(frame_steps(self.path("traj.gro")), [0])
        self.assertFalse(os.path.exists(self.path("state.cpt")))

    def test_no_steps_runs_the_documented_default(self):
        status, out, err = self.run_md(["--device", "cpu", "--ranks", "2", "--atoms", "1000", "--quiet",
                                        "--json", "run.json"])
        self.assertEqual(status, 0, err)
        self.assertEqual(json_of(self.path("run.json"))["steps"], 200)

    def test_transport_creation_counts_as_start_up_never_in_time(self):
        status, out, err = self.run_md(["--device", "cpu", "--ranks", "2", "--atoms", "1000", "--steps", "20",
                                        "--json", "run.json"])
        self.assertEqual(status, 0, err)
        summary = json_of(self.path("run.json"))
        part_ms = summary["startup_phases_ms"]["transport"]
        self.assertGreaterEqual(part_ms, 0.0)
        self.assertGreaterEqual(summary["startup_seconds"] * 1e3, part_ms)
        self.assertIn("transport", out[out.index("Start-up parts"):].splitlines()[0])

    def test_steps_minus_one_runs_until_maxh(self):
        status, out, err = self.run_md(["--device", "cpu", "--ranks", "2", "--atoms", "1000", "--nstlist", "10",
                                        "--steps", "-1", "--maxh", "1e-9", "--json", "run.json", "--cpt",
                                        "state.cpt"])
        self.assertEqual(status, MAXH_STATUS, err)
        summary = json_of(self.path("run.json"))
        self.assertEqual((summary["requested_steps"], summary["steps"]), (-1, 10))
        self.assertEqual(summary["stop"]["reason"], "maxh")
        self.assertEqual(checkpoint_step(self.path("state.cpt")), 10)

    def test_steps_minus_one_runs_until_a_signal(self):
        if not HOOKS_ON:
            self.skipTest("this build has no test hooks (HALOEX_TEST_HOOKS=OFF)")
        status, out, err = self.run_md(["--device", "cpu", "--ranks", "2", "--atoms", "1000", "--nstlist", "10",
                                        "--steps", "-1", "--json", "run.json"],
                                       env_extra={"HALOEX_TEST_STOP_SIGNAL": "TERM@25"})
        self.assertEqual(status, SIGTERM_STATUS, err)
        self.assertEqual(json_of(self.path("run.json"))["stop"]["step"], 30)
        self.assertIn("until stopped", out)


def gro_velocities(path):
    """The velocities (nm/ps) of a .gro file's atom lines (%8.3f positions, %8.4f velocities)."""
    with open(path) as f:
        lines = f.read().splitlines()
    count = int(lines[1])
    return [tuple(float(line[44 + 8 * k:52 + 8 * k]) for k in range(3)) for line in lines[2:2 + count]]


# MDAnalysis and h5py (tests/requirements.txt) read the H5MD trajectories back: from the interpreter's own
# packages, or from the project's environment .deps/python, where scripts/setup.sh installs them.
DEPS_PYTHON = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".deps", "python")
if os.path.isdir(DEPS_PYTHON) and DEPS_PYTHON not in sys.path:
    sys.path.append(DEPS_PYTHON)


def gro_frames(path):
    """Every frame of a multi-frame .gro: (step from the title, [(x, y, z) in nm, ...])."""
    with open(path) as f:
        lines = f.read().splitlines()
    frames, i = [], 0
    while i < len(lines):
        count = int(lines[i + 1])
        step = int(re.search(r"step= (\d+)$", lines[i]).group(1))
        frames.append((step, [tuple(float(line[20 + 8 * k:28 + 8 * k]) for k in range(3))
                              for line in lines[i + 2:i + 2 + count]]))
        i += count + 3
    return frames


class MdCompactTrajectory(CliCase):
    """Compact trajectories in H5MD (issue 17): --traj *.h5 writes what MDAnalysis reads, the same coordinates as
    the .gro trajectory of the same run, continued exactly by a restart (the frames after the checkpoint cut
    back), with the checkpoint's frame spacing. A build without HDF5 refuses it before step 0."""

    RUN = ["--device", "cpu", "--ranks", "2", "--atoms", "1000", "--nstlist", "10", "--traj-every", "5"]

    def h5md_built(self):
        result = subprocess.run([HALOEX_MD, "--version"], capture_output=True, text=True, timeout=60)
        line = next((l for l in result.stdout.splitlines() if l.startswith("H5MD:")), "")
        return line.split(":", 1)[1].strip().startswith("yes")

    def readers(self):
        """MDAnalysis and h5py, or the test skips saying how to install them."""
        if not self.h5md_built():
            self.skipTest("this haloex-md was built without HDF5 (haloex-md --version: H5MD)")
        try:
            import h5py
            import MDAnalysis
        except ImportError as e:
            self.skipTest(f"{e.name} is not importable (tests/requirements.txt; scripts/setup.sh installs it into "
                          f".deps/python, which needs PyPI)")
        return MDAnalysis, h5py

    def compare(self, mda, h5py, h5, gro):
        """The H5MD file holds the .gro trajectory's frames: steps, times and coordinates (the .gro's 3 decimals)."""
        reference = gro_frames(self.path(gro))
        with open(self.path(gro)) as f:  # its first frame as the topology
            lines = f.read().splitlines()
        with open(self.path("top.gro"), "w") as f:
            f.write("\n".join(lines[:int(lines[1]) + 3]) + "\n")
        # MDAnalysis knows H5MD by the extension .h5md; a .h5 file needs the format named.
        u = mda.Universe(self.path("top.gro"), self.path(h5), format="H5MD")
        self.assertEqual(len(u.trajectory), len(reference))
        with h5py.File(self.path(h5), "r") as f:
            self.assertEqual(list(f["h5md"].attrs["version"]), [1, 1])
            self.assertEqual(f["h5md/creator"].attrs["name"], "haloex-md")
            self.assertEqual(f["particles/all/position/value"].attrs["unit"], "nm")
            self.assertEqual(f["particles/all/position/time"].attrs["unit"], "ps")
            self.assertEqual(list(f["particles/all/box"].attrs["boundary"]), ["periodic"] * 3)
            steps = [int(s) for s in f["particles/all/position/step"][:]]
        self.assertEqual(steps, [step for step, _ in reference])
        worst = 0.0
        for ts, (step, positions) in zip(u.trajectory, reference):
            self.assertAlmostEqual(ts.time, step * 0.002, places=6)  # ps (MDAnalysis's unit too)
            for got, want in zip(ts.positions, positions):  # MDAnalysis gives Angstrom
                worst = max(worst, max(abs(got[k] / 10 - want[k]) for k in range(3)))
        # Both round the same positions: %8.3f to 0.0005 nm, float32 to ~1e-6 nm.
        self.assertLess(worst, 0.0005 + 1e-5)

    def test_h5md_reads_back_in_mdanalysis_as_the_gro_trajectory(self):
        mda, h5py = self.readers()
        for name in ("run.gro", "run.h5md"):
            status, _, err = self.run_md(self.RUN + ["--steps", "20", "--quiet", "--traj", name])
            self.assertEqual(status, 0, err)
        self.compare(mda, h5py, "run.h5md", "run.gro")

    def test_h5md_restart_cuts_back_to_the_checkpoint_and_continues_exactly(self):
        mda, h5py = self.readers()
        status, _, err = self.run_md(self.RUN + ["--steps", "30", "--quiet", "--traj", "run.h5", "--cpt", "state.cpt",
                                                 "--cpt-every", "10"])
        self.assertEqual(status, 0, err)
        # The checkpoint before the last (step 20): the frames at 25 and 30 came after it.
        shutil.copy(self.path("state.cpt.prev"), self.path("at20.cpt"))
        self.assertEqual(checkpoint_step(self.path("at20.cpt")), 20)
        status, out, err = self.run_md(["--device", "cpu", "--ranks", "2", "--steps", "20", "--restart", "at20.cpt",
                                        "--traj", "run.h5", "--cpt", "state.cpt"])
        self.assertEqual(status, 0, err)
        self.assertIn("--traj run.h5: cut back from 7 to 5 frames, where checkpoint at20.cpt recorded it (step 20)",
                      out)
        # The spacing came from the checkpoint (no --traj-every given); one straight run is the reference.
        status, _, err = self.run_md(self.RUN + ["--steps", "40", "--quiet", "--traj", "straight.gro"])
        self.assertEqual(status, 0, err)
        self.compare(mda, h5py, "run.h5", "straight.gro")

    def test_h5md_restart_refuses_another_spacing_and_a_changed_file(self):
        self.readers()
        status, _, err = self.run_md(self.RUN + ["--steps", "10", "--quiet", "--traj", "run.h5", "--cpt", "state.cpt"])
        self.assertEqual(status, 0, err)
        before = digest(self.path("run.h5"))
        restart = ["--device", "cpu", "--ranks", "2", "--steps", "10", "--restart", "state.cpt"]
        self.expect_refused(restart + ["--traj", "run.h5", "--traj-every", "2"],
                            r"--traj-every 2 but checkpoint state\.cpt continues --traj run\.h5 with a frame every 5 "
                            r"steps \(3 frames so far\): one trajectory keeps one spacing")
        self.assertEqual(digest(self.path("run.h5")), before)
        # Another run's file in its place (other positions, same steps) is refused, and left as it is.
        status, _, err = self.run_md(self.RUN + ["--steps", "10", "--quiet", "--seed", "7", "--traj", "other.h5",
                                                 "--log", "other.log"])
        self.assertEqual(status, 0, err)
        shutil.copy(self.path("other.h5"), self.path("run.h5"))
        before = digest(self.path("run.h5"))
        self.expect_refused(restart + ["--traj", "run.h5"],
                            r"--traj run\.h5 holds 3 frame\(s\), the last at step 10, but checkpoint state\.cpt "
                            r"recorded it with 3 frame\(s\), the last at step 10 and other positions")
        self.assertEqual(digest(self.path("run.h5")), before)
        # A new file may have its own spacing.
        status, _, err = self.run_md(restart + ["--traj", "new.h5", "--traj-every", "2", "--quiet"])
        self.assertEqual(status, 0, err)

    def test_h5md_without_hdf5_is_refused_before_step_zero(self):
        if self.h5md_built():
            self.skipTest("this haloex-md was built with HDF5 (the refusal is for builds without it)")
        self.expect_refused(QUICK + ["--traj", "run.h5", "--log", "none"],
                            r"--traj run\.h5: this haloex-md was built without HDF5.*libhdf5-dev")
        self.assertEqual(os.listdir(self.dir), [])


def gpu_visible():
    smi = shutil.which("nvidia-smi")
    return smi is not None and subprocess.run([smi, "-L"], capture_output=True).returncode == 0


class MdConventions(MdCli):
    """What a GROMACS user expects of mdrun (issue 17): start velocities, messages, --version."""

    def gro_without_velocities(self, name="novel.gro"):
        """ref-3000.gro (positions only, like a structure from a builder)."""
        shutil.copy(os.path.join(DATA_DIR, "ref-3000.gro"), self.path(name))
        return name

    def start_velocities(self, gro, ranks, extra=()):
        """The start velocities haloex-md used (its --write-gromacs conf.gro) and its stdout."""
        out_dir = f"inputs-{ranks}"
        status, out, err = self.run_md(["--device", "cpu", "--ranks", ranks, "--steps", "2", "--gro", gro,
                                        "--write-gromacs", out_dir] + list(extra))
        self.assertEqual(status, 0, err)
        return gro_velocities(self.path(out_dir, "conf.gro")), out

    def test_gro_without_velocities_starts_from_maxwell_boltzmann(self):
        gro = self.gro_without_velocities()
        velocities, out = self.start_velocities(gro, 1)
        self.assertRegex(out, r"Generated velocities \(novel\.gro has none\): Maxwell-Boltzmann at 300 K "
                              r"\(--temperature\), seed 2026")
        # Kinetic temperature over 3N - 3 degrees of freedom (mass 12 u), from the
        # file's 4-decimal velocities: the target within their rounding.
        mass, boltzmann = 12.0, 0.0083144626
        kinetic = 0.5 * mass * sum(vx * vx + vy * vy + vz * vz for vx, vy, vz in velocities)
        temperature = 2.0 * kinetic / ((3 * len(velocities) - 3) * boltzmann)
        self.assertAlmostEqual(temperature, 300.0, delta=0.5)
        # No centre-of-mass motion: the sum of 3000 velocities rounded to 1e-4 is
        # about sqrt(3000) * 3e-5 = 0.002 nm/ps (one atom's thermal speed is 0.46).
        for d in range(3):
            self.assertLess(abs(sum(v[d] for v in velocities)), 0.006)
        # The same velocities on any number of ranks.
        for ranks in (2, 3):
            with self.subTest(ranks=ranks):
                same = self.start_velocities(gro, ranks)[0] == velocities
                self.assertTrue(same, f"the start velocities on {ranks} ranks differ from those on 1")

    def test_start_velocities_follow_seed_and_temperature(self):
        gro = self.gro_without_velocities()
        base, _ = self.start_velocities(gro, 1, ["--seed", "5"])
        other, _ = self.start_velocities(gro, 1, ["--seed", "6"])
        self.assertTrue(base != other, "--seed 5 and --seed 6 gave the same velocities")
        hot, out = self.start_velocities(gro, 1, ["--seed", "5", "--temperature", "1200"])
        self.assertIn("Maxwell-Boltzmann at 1200 K", out)
        ratio = sum(v[0] ** 2 for v in hot) / sum(v[0] ** 2 for v in base)
        self.assertAlmostEqual(ratio, 4.0, delta=0.01)

    def test_gen_vel_replaces_the_velocities_of_the_file(self):
        gro = self.gro_without_velocities()
        drawn, _ = self.start_velocities(gro, 1)
        # inputs-1/conf.gro has velocities now; --gen-vel with another seed replaces them.
        shutil.copy(self.path("inputs-1", "conf.gro"), self.path("withvel.gro"))
        kept, out = self.start_velocities("withvel.gro", 1)
        self.assertTrue(kept == drawn, "the velocities of the file were not kept")
        self.assertNotIn("Generated velocities", out)
        replaced, out = self.start_velocities("withvel.gro", 1, ["--gen-vel", "--seed", "9"])
        self.assertRegex(out, r"Generated velocities \(--gen-vel replaces those of withvel\.gro\)")
        self.assertTrue(replaced != drawn, "--gen-vel kept the velocities of the file")

    def test_gen_vel_with_restart_is_refused(self):
        status, _, err = self.run_md(QUICK + ["--cpt", "r.cpt"])
        self.assertEqual(status, 0, err)
        self.expect_refused(["--device", "cpu", "--ranks", "2", "--restart", "r.cpt", "--gen-vel"],
                            r"--gen-vel with --restart: a restart continues with the checkpoint's velocities")

    # ---- messages ------------------------------------------------------------------

    def test_too_large_time_step_on_one_rank_names_the_time_step(self):
        # Said "use fewer ranks" on one rank, with rlist = 1.9000000000000001 nm.
        _, err = self.expect_refused(["--device", "cpu", "--ranks", "1", "--dt", "0.02", "--steps", "10"],
                                     r"the pair-list radius rlist = 1\.9 nm, chosen for --dt 0\.02 ps and nstlist "
                                     r"\d+ .*more than half the shortest box length \(3\.107 nm\).*Use a smaller --dt")
        self.assertNotIn("fewer ranks", err)
        self.assertNotRegex(err, r"\d\.\d{7,}", "a value printed with all its digits")

    def test_cpu_run_prints_no_gpu_only_lines(self):
        status, out, err = self.run_md(QUICK)
        self.assertEqual(status, 0, err)
        self.assertIn("Performance:", out)
        for gpu_only in ["CUDA graphs", "host synchronisations", "dynamic pruning", "library initialisation",
                         "Device timeline"]:
            self.assertNotIn(gpu_only, out)

    def test_cpu_run_splits_each_ranks_step_where_the_ranks_wait(self):
        """md.log's per-rank table read 0 % imbalance on the CPU (the ranks synchronise, so their wall times are
        equal): the split into own compute and the exchanges (waits included) is timed on the host too."""
        status, out, err = self.run_md(QUICK[:-1] + ["--nstlist", "5", "--thermo-every", "10", "--json", "r.json"])
        self.assertEqual(status, 0, err)
        self.assertRegex(out, r"Host timeline, rank 0 \(us, 2 steps; mean / median / p90\): local [0-9.]+ .*exchanges")
        with open(self.path("r.json")) as f:
            timing = json.load(f)["timing"]
        self.assertEqual(timing["clock"], "host")
        self.assertEqual(timing["samples"], 2)  # the last step of each chunk after a search: steps 4 and 9
        with open(self.path("md.log")) as f:
            log = f.read()
        rows = {}
        for name in ("step: local compute (us)", "step: exposed halo exchange (us)", "step: search, amortised (us)"):
            m = re.search(re.escape(name) + r"\s+([0-9.e+-]+)\s+([0-9.e+-]+)\s+([0-9.e+-]+)\s+([0-9.]+)%", log)
            self.assertIsNotNone(m, f"no row {name!r} in md.log")
            low, avg, high = (float(m.group(k)) for k in (1, 2, 3))
            self.assertTrue(0 < low <= avg <= high, f"{name}: {low} {avg} {high}")
            rows[name] = avg
        self.assertGreater(rows["step: local compute (us)"], rows["step: exposed halo exchange (us)"] / 100)

    def test_adjusted_option_is_reported_with_its_value(self):
        # --cpt-every 30 became 50 without a word.
        status, out, err = self.run_md(QUICK[:-1] + ["--nstlist", "50", "--cpt", "r.cpt", "--cpt-every", "30",
                                                     "--json", "r.json"])
        self.assertEqual(status, 0, err)
        message = "--cpt-every 30 rounded up to 50, a multiple of nstlist 50"
        self.assertIn("Note: " + message, out)
        self.assertIn("adjusted: " + message, out)
        with open(self.path("r.json")) as f:
            self.assertTrue(json.load(f)["settings"]["adjusted"][0].startswith(message))
        status, out, err = self.run_md(QUICK[:-1] + ["--nstlist", "50", "--cpt", "r.cpt", "--cpt-every", "100"])
        self.assertEqual(status, 0, err)
        self.assertNotIn("adjusted", out)

    def test_ranks_under_mpirun_is_refused_unless_it_agrees(self):
        # --ranks 4 under mpirun -np 2 ran 2 ranks without a word.
        status, out, err = self.run_mpirun(2, ["--device", "cpu", "--atoms", "1000", "--steps", "4", "--ranks", "4"])
        self.assertNotEqual(status, 0, out)
        message = "--ranks 4: the launcher started 2 rank(s), and --ranks only sets the virtual ranks"
        self.assertEqual(err.count(message), 1, err)  # said once, by rank 0
        self.assertNotIn("Performance:", out)
        status, out, err = self.run_mpirun(2, ["--device", "cpu", "--atoms", "1000", "--steps", "4", "--ranks", "2"])
        self.assertEqual(status, 0, err)
        # The transport's notes, the same on both ranks, once each (they were printed once per rank).
        for note in ("staged: exchangeBlocks: every block in one World::sendRecvMany (one round trip)\n",
                     "staged: host memory, one World::sendRecv per pulse and direction\n"):
            self.assertEqual(out.count(note), 1, out)

    def test_ranks_without_launcher_is_refused_on_gpu(self):
        # A GPU run without a launcher is one rank: --ranks 4 was ignored.
        if not gpu_visible():
            self.skipTest("no GPU: nvidia-smi is missing or lists none")
        self.expect_refused(["--device", "gpu", "--ranks", "4", "--steps", "10"],
                            r"--ranks 4: virtual ranks are threads of the CPU reference \(--device cpu\); on GPUs "
                            r"launch one process per GPU: mpirun -np 4 haloex-md")

    def test_version_names_the_build(self):
        tools = [HALOEX_MD] + [os.path.join(os.path.dirname(HALOEX_MD), name) for name in
                               ("haloex-jacobi", "haloex-commbench", "haloex-halo-stress", "haloex-plan")]
        for tool in [t for t in tools if os.path.exists(t) or t == HALOEX_MD]:
            with self.subTest(tool=os.path.basename(tool)):
                result = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=60)
                self.assertEqual(result.returncode, 0, result.stderr)
                lines = result.stdout.splitlines()
                self.assertRegex(lines[0], r"^" + re.escape(os.path.basename(tool)) +
                                 r" \(haloex \d+\.\d+\.\d+\), commit ([0-9a-f]{7,}(-dirty)?|unknown)$")
                self.assertRegex(lines[1], r"^build: ")
                for part in ("CUDA", "MPI", "NCCL", "NVSHMEM", "H5MD"):
                    self.assertTrue(any(line.startswith(part + ":") for line in lines), f"{part}: {lines}")
                cuda = next(line for line in lines if line.startswith("CUDA:"))
                self.assertRegex(cuda, r"GPU architectures \S+|not built")

    # ---- NVTX ranges (what an nsys timeline shows) -------------------------------

    def nvtx_ranges(self, args):
        """Runs haloex-md with the NVTX recorder injected; returns (stdout, {range name: count})."""
        recorder = os.environ.get("HALOEX_NVTX_RECORDER")
        if not recorder:
            self.skipTest("this build has no NVTX ranges (built without CUDA): no HALOEX_NVTX_RECORDER")
        log = self.path("nvtx.log")
        status, out, err = self.run_md(args, shell_prefix=f"export NVTX_INJECTION64_PATH='{recorder}' "
                                                         f"HALOEX_NVTX_LOG='{log}'")
        self.assertEqual(status, 0, err)
        self.assertTrue(os.path.exists(log), "the NVTX recorder was not loaded (no ranges were pushed)")
        counts, ranges = {}, {}
        with open(log) as f:
            for line in f.read().splitlines():
                words = line.split(" ", 2)
                if words[0] == "range":
                    ranges[words[2]] = int(words[1])
                else:
                    counts[words[0]] = int(words[1])
        self.assertEqual(counts["pushes"], counts["pops"], f"ranges left open: {ranges}")
        self.assertEqual(counts["unmatched_pops"], 0)
        return out, ranges

    def test_nvtx_ranges_name_the_search_step_parts(self):
        _, ranges = self.nvtx_ranges(QUICK + ["--nstlist", "5", "--cpt", "r.cpt"])
        # Every search step (warm-up, steps 0 and 5, and step 10's for the last step's energies, on 2 ranks)
        # and its parts, as the summary names them.
        self.assertEqual(ranges.get("search step"), 2 * 4, ranges)
        for part in ["download", "buffer check", "migrate", "plan", "transport set-up", "upload", "static data",
                     "pair search"]:
            self.assertEqual(ranges.get(part), 2 * 4, f"{part}: {ranges}")
        self.assertIn("energies", ranges)
        self.assertIn("output", ranges)

    def test_nvtx_ranges_name_the_step_phases_on_gpu(self):
        if not gpu_visible():
            self.skipTest("no GPU: nvidia-smi is missing or lists none")
        gpu = ["--device", "gpu", "--atoms", "22500", "--steps", "20", "--nstlist", "10", "--quiet"]
        _, ranges = self.nvtx_ranges(gpu + ["--cuda-graphs", "0"])
        # One rank's default is the fused update: one kernel for the forces' scatter, leapfrog and gather.
        for name in ["search step", "migrate", "plan", "transport set-up", "positions", "pair search",
                     "grid and counts", "lists", "prune", "count check", "MD step", "local non-bonded F",
                     "scatter + leapfrog + gather"]:
            self.assertIn(name, ranges)
        self.assertNotIn("leapfrog", ranges)
        _, ranges = self.nvtx_ranges(gpu + ["--cuda-graphs", "0", "--fuse-update", "0"])
        for name in ["local non-bonded F", "leapfrog", "clear forces"]:
            self.assertIn(name, ranges)
        self.assertNotIn("scatter + leapfrog + gather", ranges)
        # With graphs the step is one launch: one range around it, its phases are graph nodes. The step
        # after each search (steps 0 and 10) runs without one, while the graph is updated behind it, and so
        # does step 20's, evaluated after the run for the last step's energies (after its search): all three
        # energy steps (every 2nd). So do steps 9 and 19, each a call's last normal step before a search,
        # which records the timeline's events (the normal step's graph has none).
        _, ranges = self.nvtx_ranges(gpu)
        self.assertIn("MD step (CUDA graph)", ranges)
        self.assertEqual(ranges.get("MD step, energies", 0), 3, ranges)
        self.assertEqual(ranges.get("MD step", 0), 2, ranges)

    def test_kernel_trace_accounts_the_search_steps_on_gpu(self):
        """haloex-kernel-trace (tools/kernel_trace) injected into a GPU run, as docs/running.md shows: its CSV
        holds the search steps' ranges and their kernels (a graph's one by one), and bench/kernel_trace.py
        accounts them."""
        if not gpu_visible():
            self.skipTest("no GPU: nvidia-smi is missing or lists none")
        lib = os.environ.get("HALOEX_KERNEL_TRACE_LIB")
        if not lib:
            self.skipTest("this build has no haloex-kernel-trace (a toolkit without CUPTI): "
                          "no HALOEX_KERNEL_TRACE_LIB")
        ldd = subprocess.run(["ldd", lib], capture_output=True, text=True).stdout
        cupti = next((line.split("=>")[1].split()[0] for line in ldd.splitlines()
                      if "libcupti" in line and "=>" in line), None)
        self.assertIsNotNone(cupti, f"ldd {lib} names no libcupti:\n{ldd}")
        base = self.path("trace")
        status, _, err = self.run_md(["--device", "gpu", "--atoms", "11250", "--steps", "60", "--nstlist", "20",
                                      "--quiet", "--log", "none"],
                                     env_extra={"CUDA_INJECTION64_PATH": lib, "NVTX_INJECTION64_PATH": cupti,
                                                "HALOEX_KERNEL_TRACE": base})
        self.assertEqual(status, 0, err)
        self.assertIn("haloex-kernel-trace:", err)
        self.assertNotIn("dropped", err)
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
        import kernel_trace
        trace = kernel_trace.Trace(kernel_trace.read_trace(base + ".csv"))
        summary = kernel_trace.summarize(trace)
        self.assertGreaterEqual(summary["search_steps"], 2, summary)  # steps 20, 40 and 60, after the first
        total = summary["total"]
        self.assertGreater(total["kernels"], 0, total)
        self.assertGreater(total["gpu_busy_us"], 0, total)
        self.assertLessEqual(total["gpu_busy_us"], total["wall_us"], total)
        self.assertIn("pair search", summary["phases"])
        self.assertIn("grid and counts", summary["phases"]["pair search"]["parts"])
        self.assertTrue(any("searchKernel" in name for name in summary["kernel_us_per_search_step"]),
                        list(summary["kernel_us_per_search_step"])[:20])
        # The normal steps run as graphs (the default): their nodes, one by one.
        graph = kernel_trace.normal_steps(trace).get("MD step (CUDA graph)")
        self.assertIsNotNone(graph, "no graph step with launched work")
        self.assertGreaterEqual(graph["kernels"], 1, graph)
        self.assertLessEqual(graph["busy_us"], graph["span_us"] + 1e-6, graph)


class MdAutoTransport(CliCase):
    """--transport auto (issue 15): the Auto that measures, its options and what the run says about the choice.
    The measuring itself needs several GPU ranks (scripts/device/run.sh auto-select); here the CPU cases."""

    def test_auto_options_are_checked_with_clear_errors(self):
        transports = r"use auto \(measured inside MD steps\), auto:rule \(the fixed rule\), reference, staged, ipc, nccl, " \
                     r"nvshmem, nccl-device"
        cases = [
            (["--auto-steps", "0"], r"--auto-steps 0: out of range; use 1 to 100000 timed MD steps per repeat"),
            (["--auto-steps", "-2"], r"--auto-steps -2: out of range"),
            (["--auto-steps", "100001"], r"--auto-steps 100001: out of range"),
            (["--transport", "staged", "--auto-steps", "5"],
             r"--auto-steps and --auto-cache set how --transport auto measures, but this run has --transport staged: "
             r"drop them, or use --transport auto"),
            (["--transport", "auto:rule", "--auto-cache", "c.json"], r"this run has --transport auto:rule"),
            (["--transport", "warp"], r"--transport 'warp': " + transports),
            (["--transport", "Auto"], r"--transport 'Auto': "),
            (["--auto-cache", "missing/c.json"], r"--auto-cache missing/c\.json: the directory"),
            (["--auto-cache", "run.json", "--json", "run.json"],
             r"--json run\.json and --auto-cache run\.json are the same file"),
        ]
        for extra, message in cases:
            with self.subTest(args=extra):
                self.expect_refused(quick(extra), message)
        # Not a number: refused while the command line is parsed.
        self.expect_refused(quick(["--auto-steps", "abc"]), r"--auto-steps", status=None)
        self.assertEqual(self.leftovers(), [])

    def test_virtual_ranks_take_the_rule_and_the_run_says_so(self):
        status, _, err = self.run_md(quick(["--json", "auto.json"]))
        self.assertEqual(status, 0, err)
        record = json_of(self.path("auto.json"))
        self.assertEqual(record["transport"], "reference")
        self.assertEqual(record["transport_reason"],
                         "auto: by rule, without measuring: virtual ranks in one process exchange through the "
                         "reference transport")
        self.assertEqual(record["auto_selection"]["source"], "rule")
        self.assertEqual(record["auto_selection"]["candidates"], [])
        with open(self.path("md.log")) as f:
            self.assertRegex(f.read(), r"transport +reference \(auto: by rule, without measuring")
        for transport, reason in [("auto:rule", "auto:rule: virtual ranks in one process"),
                                  ("reference", "virtual ranks in one process")]:
            with self.subTest(transport=transport):
                status, _, err = self.run_md(quick(["--transport", transport, "--json", transport + ".json"]))
                self.assertEqual(status, 0, err)
                record = json_of(self.path(transport + ".json"))
                self.assertTrue(record["transport_reason"].startswith(reason), record["transport_reason"])
                self.assertIsNone(record["auto_selection"], "nothing was selected automatically")

    def test_mpi_ranks_on_the_cpu_have_one_candidate_and_name_the_others(self):
        status, out, err = self.run_mpirun(2, ["--device", "cpu", "--atoms", "1000", "--steps", "4", "--quiet",
                                               "--json", "m.json", "--auto-cache", "auto.json"])
        self.assertEqual(status, 0, err)
        record = json_of(self.path("m.json"))
        self.assertEqual(record["transport"], "staged")
        self.assertEqual(record["transport_reason"], "auto: the only candidate that can run here, without measuring")
        selection = record["auto_selection"]
        self.assertEqual(selection["source"], "rule")
        skipped = {s["backend"]: s["reason"] for s in selection["skipped"]}
        self.assertEqual(sorted(skipped), ["ipc", "nccl", "nccl-device", "nvshmem", "reference"])
        self.assertIn("in-process oracle", skipped["reference"])
        self.assertIn("device memory", skipped["nccl"])
        self.assertFalse(os.path.exists(self.path("auto.json")), "nothing was measured, so nothing was cached")
        self.assertNotIn("chosen by measurement", out)


def main(cases, whole=()):
    """A test module's entry point: --list prints Case.test_name, one a line (ctest registers one test each),
    else unittest runs. `whole`: cases listed with the tests they inherit (dir), the others with their own (vars)."""
    if sys.argv[1:] == ["--list"]:
        for case in cases:
            own = dir(case) if case in whole else vars(case)
            for name in sorted(n for n in own if n.startswith("test_")):
                print(f"{case.__name__}.{name}")
        return 0
    unittest.main()
    return 0


if __name__ == "__main__":
    # MdConventions inherits MdCli's helpers, not its tests: MdCli alone is listed whole.
    sys.exit(main([MdCli, MdRestartOutputs, MdEnergyFile, MdLog, MdStop, MdStepConventions, MdConventions,
                   MdCompactTrajectory, MdAutoTransport], whole=(MdCli,)))
