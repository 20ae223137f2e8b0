#!/usr/bin/env python3
"""Compares the energy series of haloex-md --json records: every run against
the first (the reference), step by step, for the first --steps energy steps.
Exit status 1 when any relative difference of the total energy exceeds --rtol.
Records of schema 1 and 2 alike (the energy series did not change); a newer
schema is refused."""
import argparse
import sys

from bench_common import exit_on_schema_error, load_record


def series(path):
    rec = exit_on_schema_error(lambda: load_record(path))
    cols = rec["energy_series"]["columns"]
    rows = rec["energy_series"]["rows"]
    i_step, i_total = cols.index("step"), cols.index("total")
    return rec, {int(r[i_step]): r[i_total] for r in rows}


def main(argv=None):
    p = argparse.ArgumentParser(prog="compare_energies.py", description=__doc__)
    p.add_argument("reference")
    p.add_argument("others", nargs="+")
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--rtol", type=float, default=1e-5)
    a = p.parse_args(argv)
    ref_rec, ref = series(a.reference)
    worst_all = 0.0
    for path in a.others:
        rec, other = series(path)
        common = sorted(set(ref) & set(other))[: a.steps]
        if not common:
            print(f"{path}: no common energy steps with {a.reference}")
            return 1
        worst = max(abs(other[s] - ref[s]) / max(abs(ref[s]), 1e-300) for s in common)
        worst_all = max(worst_all, worst)
        print(f"{rec['transport']:>8} {rec['settings'].get('nvshmem_path', ''):>6} vs {ref_rec['transport']}: "
              f"{len(common)} steps, max relative difference of the total energy {worst:.2e} "
              f"({'ok' if worst <= a.rtol else 'EXCEEDS'} {a.rtol:g})")
    return 0 if worst_all <= a.rtol else 1


if __name__ == "__main__":
    sys.exit(main())
