#!/usr/bin/env python3
"""Runs a program for ctest and judges it on its exit status, its output and
the figures it prints (ctest's PASS_REGULAR_EXPRESSION alone ignores the exit
status: a crash after the matching line would pass):

    run_checked.py [--status N|nonzero] [--match REGEX]... [--no-match REGEX]... [--skip-match REGEX]
                   [--figure NAME REGEX MIN MAX]... -- command [arguments...]

--status      the expected exit status (default 0); `nonzero`: any failure
              status (a refusal through MPI_Abort, whose code mpirun chooses)
--match       a regular expression the output must contain (each one given)
--no-match    a regular expression the output must not contain (a refusal
              that still did the work, e.g. printed its summary)
--skip-match  output that means the program could not run here (e.g. no
              GPU): the test is skipped, whatever the status
--figure      every match of REGEX (its first group) parses as a finite
              number within [MIN, MAX]; at least one match. MIN written as
              ">X" excludes X (">0": positive)

Exit status: 0 passed, 77 skipped (ctest's SKIP_RETURN_CODE; the program
exited 77 where that was not expected, or --skip-match matched), 1 failed.
The program's output is printed as it comes, then the verdict and why."""
import argparse
import math
import re
import subprocess
import sys

SKIPPED = 77


def parse_args(argv):
    p = argparse.ArgumentParser(prog="run_checked.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--status", default="0")
    p.add_argument("--match", action="append", default=[])
    p.add_argument("--no-match", action="append", default=[])
    p.add_argument("--skip-match")
    p.add_argument("--figure", nargs=4, action="append", default=[], metavar=("NAME", "REGEX", "MIN", "MAX"))
    p.add_argument("command", nargs=argparse.REMAINDER)
    a = p.parse_args(argv)
    if a.command[:1] == ["--"]:
        a.command = a.command[1:]
    if not a.command:
        p.error("no command given (after --)")
    return a


def run(command):
    """The command's exit status and its output (stdout and stderr, in order), echoed as it comes."""
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
    lines = []
    for line in proc.stdout:
        sys.stdout.write(line)
        sys.stdout.flush()
        lines.append(line)
    return proc.wait(), "".join(lines)


def within(value, low, high):
    exclusive = low.startswith(">")
    low_value = float(low[1:] if exclusive else low)
    return math.isfinite(value) and (value > low_value if exclusive else value >= low_value) and value <= float(high)


def check_figure(name, regex, low, high, output):
    """Problems with one figure: missing, not a number, not finite or out of range."""
    found = re.findall(regex, output, re.MULTILINE)
    if not found:
        return [f"figure {name}: no match of {regex!r}"]
    problems = []
    values = []
    for text in found:
        text = text[0] if isinstance(text, tuple) else text
        try:
            value = float(text)
        except ValueError:
            problems.append(f"figure {name}: {text!r} is not a number")
            continue
        values.append(value)
        if not within(value, low, high):
            problems.append(f"figure {name}: {value!r} is outside [{low}, {high}] or not finite")
    print(f"[run_checked] figure {name}: {len(found)} value(s), {', '.join(f'{v:g}' for v in values[:8])}"
          f"{' ...' if len(values) > 8 else ''} (allowed [{low}, {high}])")
    return problems


def verdict(a, status, output):
    """(exit status, reasons) for what the command did."""
    if a.skip_match and re.search(a.skip_match, output, re.MULTILINE):
        return SKIPPED, [f"skipped: the output matches {a.skip_match!r}"]
    if status == SKIPPED and a.status != str(SKIPPED):
        return SKIPPED, ["skipped: the program exited 77 (it cannot run here; its reason is above)"]
    problems = []
    if a.status == "nonzero":
        if status == 0:
            problems.append("exit status 0, expected a failure status")
    elif status != int(a.status):
        problems.append(f"exit status {status}, expected {a.status}")
    for regex in a.match:
        if not re.search(regex, output, re.MULTILINE):
            problems.append(f"no match of {regex!r} in the output")
    for regex in a.no_match:
        if re.search(regex, output, re.MULTILINE):
            problems.append(f"the output matches {regex!r}, which it must not")
    for name, regex, low, high in a.figure:
        problems += check_figure(name, regex, low, high, output)
    return (1, problems) if problems else (0, [f"passed: exit status {status}, every match and figure as expected"])


def main(argv):
    a = parse_args(argv)
    try:
        status, output = run(a.command)
    except OSError as e:
        print(f"[run_checked] cannot start {a.command[0]}: {e}")
        return 1
    code, reasons = verdict(a, status, output)
    for reason in reasons:
        print(f"[run_checked] {reason}")
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
