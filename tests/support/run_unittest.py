#!/usr/bin/env python3
"""Runs a unittest file for ctest so that a skip shows as skipped, not passed:
    run_unittest.py <test file> [unittest arguments...]
Exit status: 0 when the tests passed (each partial skip printed with its
reason), 77 (SKIP_RETURN_CODE in tests/CMakeLists.txt) when every test that
ran was skipped (the reasons printed), 1 on a failure or when no test ran."""
import importlib.util
import os
import sys
import unittest

SKIPPED = 77


def load(path):
    """The test file as a module of its own name (its __main__ block does not run)."""
    name = os.path.splitext(os.path.basename(path))[0]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def verdict(result):
    """The exit status for a unittest result, and the lines that say why."""
    reasons = [f"SKIPPED: {test.id()}: {why}" for test, why in result.skipped]
    if not result.wasSuccessful():
        return 1, reasons
    if result.testsRun == 0:
        return 1, ["no test ran (a misspelt test name?)"]
    if len(result.skipped) == result.testsRun:
        return SKIPPED, reasons
    return 0, reasons


def main(argv):
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    module = load(argv[0])
    program = unittest.main(module=module, argv=[argv[0]] + argv[1:], exit=False)
    status, lines = verdict(program.result)
    for line in lines:
        print(line)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
