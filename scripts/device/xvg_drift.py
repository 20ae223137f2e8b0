#!/usr/bin/env python3
"""Least-squares drift of the conserved energy in a haloex-md --energy .xvg,
per atom (kJ/mol/ps per atom), over the rows from a given time on: the NVE
check measures it after the lattice start has relaxed."""
import argparse
import re
import sys


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("xvg")
    parser.add_argument("--from-ps", type=float, default=0.0, help="first time (ps) in the fit")
    args = parser.parse_args()
    atoms, column, rows = None, None, []
    with open(args.xvg) as f:
        for line in f:
            if line.startswith("#"):
                m = re.search(r"energies: (\d+) atoms", line)
                atoms = int(m.group(1)) if m else atoms
            elif line.startswith("@"):
                m = re.match(r'@ s(\d+) legend "Conserved', line)
                column = int(m.group(1)) + 1 if m else column
            elif line.strip():
                values = [float(v) for v in line.split()]
                if values[0] >= args.from_ps:
                    rows.append((values[0], values[column]))
    if atoms is None or column is None or len(rows) < 3:
        print(f"{args.xvg}: no atom count, no conserved-energy column or fewer than 3 rows", file=sys.stderr)
        return 1
    n = len(rows)
    st = sum(t for t, _ in rows)
    se = sum(e for _, e in rows)
    stt = sum(t * t for t, _ in rows)
    ste = sum(t * e for t, e in rows)
    slope = (n * ste - st * se) / (n * stt - st * st)
    print(f"{slope / atoms:.3g} kJ/mol/ps per atom over {n} rows from {rows[0][0]:g} ps")
    return 0


if __name__ == "__main__":
    sys.exit(main())
