#!/usr/bin/env python3
"""The API reference generated from the public headers with Doxygen
(docs/Doxyfile.in, configured into the build): every public symbol is
documented and every doc comment is well formed -- Doxygen prints no warning.
Skipped, saying why, without doxygen (Debian: apt-get install doxygen;
scripts/setup.sh test installs it).
    HALOEX_DOXYFILE=<build>/docs/Doxyfile [HALOEX_DOXYGEN=doxygen] test_api_reference.py"""
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import unittest

DOXYGEN = os.environ.get("HALOEX_DOXYGEN") or shutil.which("doxygen")
DOXYFILE = os.environ.get("HALOEX_DOXYFILE")


def run_doxygen(config, extra):
    """Doxygen's warnings (one per list entry, continuation lines joined)
    for `config` with `extra` settings appended, output in a scratch directory."""
    with tempfile.TemporaryDirectory() as out:
        log = pathlib.Path(out) / "warnings.txt"
        text = f"{config}\nOUTPUT_DIRECTORY = {out}\nWARN_LOGFILE = {log}\n{extra}\n"
        done = subprocess.run([DOXYGEN, "-"], input=text, text=True, capture_output=True, check=False)
        if done.returncode != 0:
            raise AssertionError(f"doxygen failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
        warnings = []
        for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
            if "warning:" in line or "error:" in line or not warnings:
                warnings.append(line)
            else:
                warnings[-1] += "\n" + line
        return [w for w in warnings if w.strip()]


class ApiReference(unittest.TestCase):
    def setUp(self):
        if not DOXYGEN:
            self.skipTest("doxygen not found: no API reference check (apt-get install doxygen; "
                          "scripts/setup.sh test installs it)")
        if not DOXYFILE or not os.path.exists(DOXYFILE):
            self.skipTest("HALOEX_DOXYFILE does not name the configured Doxyfile: run through ctest api_reference")
        self.config = pathlib.Path(DOXYFILE).read_text(encoding="utf-8")

    def test_every_public_symbol_is_documented(self):
        warnings = run_doxygen(self.config, "")
        self.assertEqual(warnings, [], f"{len(warnings)} Doxygen warnings in the public headers:\n"
                         + "\n".join(warnings))

    def test_an_undocumented_symbol_is_caught(self):
        """The same settings on a header with one documented and one
        undocumented function: exactly the second is reported."""
        with tempfile.TemporaryDirectory() as tmp:
            header = pathlib.Path(tmp) / "probe.hpp"
            header.write_text("#pragma once\n/// @file\n/// A probe.\n\n/// Documented.\nint documented();\n"
                              "int undocumented();\n")
            warnings = run_doxygen(self.config, f"INPUT = {header}\nEXCLUDE =\nSTRIP_FROM_PATH = {tmp}")
        self.assertEqual(len(warnings), 1, warnings)
        self.assertIn("undocumented", warnings[0])


if __name__ == "__main__":
    sys.exit(unittest.main())
