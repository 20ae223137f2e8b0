#!/usr/bin/env python3
"""The docs' CPU mpirun examples run as written on a 2-core machine (run by ctest as docs_cpu_examples): every
`mpirun` line of a code block in README.md and docs/*.md that runs on the CPU (`--device cpu`, `--transport cpu`)
asks for no more ranks than 2 unless it says --oversubscribe, and runs with exit status 0, build/bin/ taken from
HALOEX_BIN (the build's bin folder), in a directory of its own."""
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORES = 2  # the smallest machine the README's quick start is measured on


def cpu_examples():
    """(page, line) of every CPU mpirun example in a code block."""
    out = []
    for page in [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md")):
        in_code = False
        for line in page.read_text(encoding="utf-8").splitlines():
            if line.startswith("```"):
                in_code = not in_code
                continue
            command = line.split(" #")[0].strip()
            if in_code and command.startswith("mpirun ") and re.search(r"--(device|transport) cpu\b", command):
                out.append((page.name, command))
    return out


def ranks(command):
    m = re.search(r"(?:-np|-n|--np)\s+(\d+)", command)
    return int(m.group(1)) if m else 1


class CpuExamples(unittest.TestCase):
    def test_the_docs_have_cpu_examples(self):
        pages = {page for page, _ in cpu_examples()}
        self.assertIn("running.md", pages)
        self.assertIn("jacobi.md", pages)

    def test_fit_two_cores_as_written(self):
        for page, command in cpu_examples():
            with self.subTest(page=page, command=command):
                self.assertTrue(ranks(command) <= CORES or "--oversubscribe" in command,
                                f"{page}: '{command}' starts {ranks(command)} ranks: on a {CORES}-core machine "
                                f"OpenMPI refuses that without --oversubscribe")

    def test_run_as_written(self):
        binaries = os.environ.get("HALOEX_BIN")
        if not binaries or not shutil.which("mpirun"):
            self.skipTest("needs mpirun and HALOEX_BIN (the build's bin folder; ctest sets it)")
        for page, command in cpu_examples():
            words = [w.replace("build/bin/", binaries.rstrip("/") + "/", 1) for w in shlex.split(command)]
            program = next(w for w in words if w.startswith(binaries))
            if not os.path.exists(program):
                continue  # not built here (haloex-jacobi needs MPI)
            with self.subTest(page=page, command=command), tempfile.TemporaryDirectory() as tmp:
                done = subprocess.run(words, cwd=tmp, capture_output=True, text=True, timeout=240)
                self.assertEqual(done.returncode, 0, f"{page}: '{command}' exited {done.returncode}:\n"
                                                     f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}")


if __name__ == "__main__":
    unittest.main()
