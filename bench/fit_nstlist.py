#!/usr/bin/env python3
"""Fits haloex-md's nstlist cost model to measured runs and checks its choice.

Reads a bench/md_bench.py record (the `nstlist` suite: every size at several
fixed nstlist and at the automatic choice; `single` works too, with fewer
points) and fits, by least squares over its one-GPU device-search runs, the
two parts of the model in proxies/md/src/nstlist_choice.cpp:

  steady step (us)             = kStepFixedUs + N/1000 (kInnerPairNs p_inner + kOuterPairNs (p_outer - p_inner))
  search step beyond a steady  = kSearchFixedUs + N/1000 (kSearchAtomNs + kSearchPairNs p_outer)

N home atoms, p_r the pairs per atom within r (2 pi/3 density r^3, haloex-md's
density 100 /nm^3), rlist and the inner radius from each run's settings. It
prints the fitted constants as C++ lines, every run's measured time per step
(all steps counted) beside the current and the fitted model's, and per size
the nstlist that measured fastest against the one each model would choose
among the measured ones (and the automatic run's). The current constants are
read from the source file, so the comparison is always with the code.
"""
import argparse
import json
import math
import os
import re
import sys

from bench_common import SCHEMA_VERSION, commit, now_utc

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL_SOURCE = os.path.join(ROOT, "proxies", "md", "src", "nstlist_choice.cpp")
DENSITY = 100.0  # atoms per nm^3: haloex-md's lattice start (system.hpp, kNumberDensity)
CONSTANTS = ["kStepFixedUs", "kInnerPairNs", "kOuterPairNs", "kSearchFixedUs", "kSearchAtomNs", "kSearchPairNs"]


class FitError(Exception):
    pass


def pairs_per_atom(r, density=DENSITY):
    """Pairs per atom within r, each pair counted once (nstlist_choice.cpp's pairsPerAtom)."""
    return 2.0 * math.pi / 3.0 * density * r ** 3


def read_constants(path=MODEL_SOURCE):
    """The model's constants as the code has them ("constexpr double kName = value;")."""
    with open(path) as f:
        text = f.read()
    out = {}
    for name in CONSTANTS:
        m = re.search(r"constexpr double %s = ([0-9.eE+-]+);" % name, text)
        if not m:
            raise FitError(f"{path}: no 'constexpr double {name} = ...;' (the model's source changed)")
        out[name] = float(m.group(1))
    return out


def points_of(record):
    """The runs the model describes: one rank, search on the device, CUDA graphs (the default), a measured steady
    step and search step."""
    points = []
    for r in record.get("runs", []):
        s = r.get("settings") or {}
        needed = ("us_per_step", "us_per_step_steady", "search_step_ms")
        if r.get("ranks", 1) != 1 or r.get("search") != "device" or not all(r.get(k) for k in needed):
            continue
        if r.get("cuda_graphs") is False:
            continue
        if not s.get("rlist") or not s.get("nstlist"):
            continue
        inner = s.get("rlist_inner") or s["rlist"]  # no pruning: the inner list is the outer one
        points.append({"label": r.get("label", ""), "atoms": r["atoms"], "nstlist": s["nstlist"], "rlist": s["rlist"],
                       "inner": inner, "us_all": r["us_per_step"], "steady": r["us_per_step_steady"],
                       "search_beyond": 1e3 * r["search_step_ms"] - r["us_per_step_steady"],
                       "auto": r.get("label") == "nstlist=auto"})
    return points


def solve(rows, values):
    """Least squares of rows x = values (normal equations, Gaussian elimination with pivoting)."""
    n = len(rows[0])
    if len(rows) < n:
        raise FitError(f"{len(rows)} runs cannot fix {n} constants")
    a = [[sum(r[i] * r[j] for r in rows) for j in range(n)] + [sum(r[i] * v for r, v in zip(rows, values))]
         for i in range(n)]
    for c in range(n):
        p = max(range(c, n), key=lambda k: abs(a[k][c]))
        if abs(a[p][c]) < 1e-12 * max(1.0, max(abs(x) for x in a[c][:n])):
            raise FitError("the runs do not separate the constants (vary the size and the nstlist)")
        a[c], a[p] = a[p], a[c]
        for k in range(n):
            if k != c:
                f = a[k][c] / a[c][c]
                a[k] = [x - f * y for x, y in zip(a[k], a[c])]
    return [a[i][n] / a[i][i] for i in range(n)]


def fit(points):
    steady_rows, steady_values, search_rows, search_values = [], [], [], []
    for p in points:
        kn = p["atoms"] / 1000.0
        outer, inner = pairs_per_atom(p["rlist"]), pairs_per_atom(p["inner"])
        steady_rows.append([1.0, kn * inner, kn * (outer - inner)])
        steady_values.append(p["steady"])
        search_rows.append([1.0, kn, kn * outer])
        search_values.append(p["search_beyond"])
    steady = solve(steady_rows, steady_values)
    search = solve(search_rows, search_values)
    return dict(zip(CONSTANTS, steady + search))


def per_step(c, p):
    """The model's time per step (us) for a run's size, radii and nstlist."""
    kn = p["atoms"] / 1000.0
    outer, inner = pairs_per_atom(p["rlist"]), pairs_per_atom(p["inner"])
    steady = c["kStepFixedUs"] + kn * (c["kInnerPairNs"] * inner + c["kOuterPairNs"] * (outer - inner))
    search = c["kSearchFixedUs"] + kn * (c["kSearchAtomNs"] + c["kSearchPairNs"] * outer)
    return steady + search / p["nstlist"]


def relative_fit(rows, values):
    """Least squares of the relative error; returns the constants and the rms and largest relative error."""
    x = solve([[v / y for v in r] for r, y in zip(rows, values)], [1.0] * len(values))
    errors = [(sum(a * b for a, b in zip(r, x)) - y) / y for r, y in zip(rows, values)]
    return x, math.sqrt(sum(e * e for e in errors) / len(errors)), max(abs(e) for e in errors)


def age_model(points, limit, ladder):
    """The steady step priced by the list's age instead of its outer pairs, a + N/1000 (b + c min(nstlist, limit))
    (us), beside the present form, both fitted by relative least squares with the search step
    (kSearchFixedUs + N/1000 (kSearchAtomNs + kSearchPairNs p_outer)); per size, the age model's pick among the
    measured nstlist and over `ladder` ({nstlist: rlist}, e.g. the model's whole ladder of candidates)."""
    kn = [p["atoms"] / 1000.0 for p in points]
    steady = [p["steady"] for p in points]
    present, present_rms, present_max = relative_fit(
        [[1.0, k * pairs_per_atom(p["inner"]), k * (pairs_per_atom(p["rlist"]) - pairs_per_atom(p["inner"]))]
         for k, p in zip(kn, points)], steady)
    age, age_rms, age_max = relative_fit([[1.0, k, k * min(p["nstlist"], limit)] for k, p in zip(kn, points)], steady)
    search, _, _ = relative_fit([[1.0, k, k * pairs_per_atom(p["rlist"])] for k, p in zip(kn, points)],
                                [p["search_beyond"] for p in points])

    def cost(atoms, nstlist, rlist):
        k = atoms / 1000.0
        return (age[0] + k * (age[1] + age[2] * min(nstlist, limit)) +
                (search[0] + k * (search[1] + search[2] * pairs_per_atom(rlist))) / nstlist)

    lines = [f"Steady step, relative least squares over {len(points)} runs: present form rms "
             f"{100 * present_rms:.2f} % (largest {100 * present_max:.2f} %); age form (limit {limit}) rms "
             f"{100 * age_rms:.2f} % (largest {100 * age_max:.2f} %): a = {age[0]:.4g} us, b = {age[1]:.4g}, "
             f"c = {age[2]:.4g} ns per atom and step of age",
             "| atoms | fastest measured | age model's pick among the measured | age model's pick over the ladder |",
             "|---:|---|---|---|"]
    for atoms in sorted({p["atoms"] for p in points}):
        fixed = mean_by_nstlist([p for p in points if p["atoms"] == atoms and not p["auto"]])
        if not fixed:
            continue
        best = min(fixed, key=lambda p: p["us_all"])
        pick = min(fixed, key=lambda p: cost(atoms, p["nstlist"], p["rlist"]))
        free = min(ladder, key=lambda n: cost(atoms, n, ladder[n])) if ladder else "-"
        lines.append(f"| {atoms} | {best['nstlist']} ({best['us_all']:.1f}) | {pick['nstlist']} "
                     f"({pick['us_all']:.1f}) | {free} |")
    return "\n".join(lines)


def parse_ladder(text):
    """'20:0.94,25:0.95' -> {20: 0.94, 25: 0.95}."""
    try:
        return {int(n): float(r) for n, r in (item.split(":") for item in text.split(","))} if text else {}
    except ValueError:
        raise FitError(f"--ladder {text!r}: give NSTLIST:RLIST pairs separated by commas, e.g. 40:0.995,150:1.13")


def mean_by_nstlist(runs):
    """Repeats of one nstlist as one point, their time per step averaged."""
    out = {}
    for p in runs:
        out.setdefault(p["nstlist"], []).append(p)
    return [dict(group[0], us_all=sum(p["us_all"] for p in group) / len(group)) for group in out.values()]


def read_tie_rule(path=MODEL_SOURCE):
    """The code's tie-break (nstlist_choice.cpp): candidates within kModelTieFraction of the cheapest, from
    kShortestTieNstlist steps up, go to the shortest. (0, 0) when the source has none."""
    with open(path) as f:
        text = f.read()
    fraction = re.search(r"constexpr double kModelTieFraction = ([0-9.eE+-]+);", text)
    shortest = re.search(r"constexpr int kShortestTieNstlist = ([0-9]+);", text)
    return (float(fraction.group(1)), int(shortest.group(1))) if fraction and shortest else (0.0, 0)


def pick_with_tie(points, constants, tie):
    """The model's pick among points as the code makes it: the cheapest, or the shortest within the tie rule."""
    cheapest = min(points, key=lambda p: per_step(constants, p))
    fraction, shortest = tie
    ties = [p for p in points if p["nstlist"] >= shortest and
            per_step(constants, p) <= per_step(constants, cheapest) * (1.0 + fraction)]
    return min(ties, key=lambda p: p["nstlist"]) if fraction > 0 and ties else cheapest


def choices(points, current, fitted, tie=(0.0, 0)):
    """Per size: the measured best fixed nstlist, the automatic run, and each model's pick among the fixed ones
    (repeats averaged), with the code's tie rule (read_tie_rule)."""
    out = []
    for atoms in sorted({p["atoms"] for p in points}):
        fixed = mean_by_nstlist([p for p in points if p["atoms"] == atoms and not p["auto"]])
        if not fixed:
            continue
        auto = mean_by_nstlist([p for p in points if p["atoms"] == atoms and p["auto"]])
        best = min(fixed, key=lambda p: p["us_all"])
        pick = lambda c: pick_with_tie(fixed, c, tie)  # noqa: E731
        out.append({"atoms": atoms, "measured_best": best["nstlist"], "measured_best_us": best["us_all"],
                    "auto": auto[0]["nstlist"] if auto else None, "auto_us": auto[0]["us_all"] if auto else None,
                    "current_model": pick(current)["nstlist"], "fitted_model": pick(fitted)["nstlist"],
                    "us_of": {p["nstlist"]: p["us_all"] for p in fixed}})
    return out


def report(points, current, fitted, picks):
    lines = ["Fitted to %d one-GPU device-search runs (least squares):" % len(points)]
    for name in CONSTANTS:
        lines.append(f"constexpr double {name} = {fitted[name]:.4g};  // now {current[name]:g}")
    negative = [n for n in CONSTANTS if fitted[n] < 0]
    if negative:
        lines.append("warning: negative " + ", ".join(negative) + ": the runs do not separate these terms; drop "
                     "one or add runs at other sizes and nstlist")
    lines.append("")
    lines.append("| atoms | nstlist | rlist | inner | us/step all steps | steady | search beyond steady | "
                 "current model | fitted model |")
    lines.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for p in sorted(points, key=lambda p: (p["atoms"], p["nstlist"], p["auto"])):
        lines.append(f"| {p['atoms']} | {p['nstlist']}{' (auto)' if p['auto'] else ''} | {p['rlist']:.3f} | "
                     f"{p['inner']:.3f} | {p['us_all']:.1f} | {p['steady']:.1f} | {p['search_beyond']:.0f} | "
                     f"{per_step(current, p):.1f} | {per_step(fitted, p):.1f} |")
    lines.append("")
    lines.append("| atoms | fastest measured nstlist (us/step) | automatic run | current model picks | fitted model "
                 "picks |")
    lines.append("|---:|---|---|---|---|")
    for c in picks:
        auto = f"{c['auto']} ({c['auto_us']:.1f})" if c["auto"] is not None else "-"
        lines.append(f"| {c['atoms']} | {c['measured_best']} ({c['measured_best_us']:.1f}) | {auto} | "
                     f"{c['current_model']} ({c['us_of'][c['current_model']]:.1f}) | "
                     f"{c['fitted_model']} ({c['us_of'][c['fitted_model']]:.1f}) |")
    return "\n".join(lines)


def fit_record(record, record_path, fitted, current, picks):
    """The --json record: a derived one. It measures nothing, so its machine, measurement date and commit are the
    fitted record's; its own date and commit say when and with which code the fit was made."""
    return {
        "schema_version": SCHEMA_VERSION,
        "schema_note": (f"schema {SCHEMA_VERSION}, derived: bench/fit_nstlist.py's least-squares fit of the nstlist "
                        "cost model (proxies/md/src/nstlist_choice.cpp) to the one-GPU device-search runs of "
                        "source.record. fitted and current are the model's constants (us and ns as named); choices "
                        "compare, per size, the fastest measured nstlist (us_of: us/step, all steps counted) with "
                        "the automatic run's and each model's pick. machine is the one the runs were measured on."),
        "tool": "bench/fit_nstlist.py",
        "date": now_utc(),
        "commit": commit(),
        "source": {"record": record_path, "commit": record.get("commit"), "date": record.get("date"),
                   "tool": record.get("tool")},
        "machine": record.get("machine", {"unknown": "the fitted record has no machine block"}),
        "fitted": fitted,
        "current": current,
        "choices": picks,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("record", help="a bench/md_bench.py record (suite nstlist, or single)")
    parser.add_argument("--source", default=MODEL_SOURCE, help="the model's source (default %(default)s)")
    parser.add_argument("--json", help="also write the fitted constants and the choices here")
    parser.add_argument("--age-limit", type=int, metavar="L",
                        help="also fit a steady step priced by the list's age, a + N (b + c min(nstlist, L)), and "
                             "show its picks")
    parser.add_argument("--ladder", default="", metavar="N:R,...",
                        help="with --age-limit: candidates (nstlist:rlist) to pick among besides the measured ones")
    a = parser.parse_args(argv)
    try:
        with open(a.record) as f:
            record = json.load(f)
        points = points_of(record)
        if not points:
            raise FitError(f"{a.record}: no one-GPU device-search run with a steady step and a search step "
                           "(a bench/md_bench.py nstlist or single record is expected)")
        current, fitted = read_constants(a.source), fit(points)
    except (OSError, ValueError, FitError) as e:
        print(f"fit_nstlist.py: {e}", file=sys.stderr)
        return 1
    picks = choices(points, current, fitted, read_tie_rule(a.source))
    print(report(points, current, fitted, picks))
    if a.age_limit:
        try:
            print("\n" + age_model(points, a.age_limit, parse_ladder(a.ladder)))
        except FitError as e:
            print(f"fit_nstlist.py: {e}", file=sys.stderr)
            return 1
    if a.json:
        with open(a.json, "w") as f:
            json.dump(fit_record(record, a.record, fitted, current, picks), f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
