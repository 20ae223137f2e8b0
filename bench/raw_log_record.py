#!/usr/bin/env python3
"""A record from an allocation's raw summary log (the lines a device session prints when its JSON cannot come back),
in the records' schema: the log's lines kept verbatim in raw_log, and every figure parsed from them.

The lines it reads (one H200 allocation's log, e.g. 2026-12-04; each run keeps its line number in raw_line):
  gromacs n=N ns/day=X us/step=X us/step-xDDNS=X nstlist=K                  GROMACS at its automatic settings
  haloex  n=N ns/day=X us/step(all)=X steady=X nstlist=K rlist=R search_ms=X drift=X
  gromacs n=N nstlist=K all steps X us/step; Changing nstlist from A to B, rlist from R0 to R1
  haloex  n=N nstlist=K all steps X us/step; steady X
  gromacs+graphs n=N nstlist=K all steps X us/step; ...                    GROMACS with GMX_CUDA_GRAPH=1
  1 rank N atoms, P% SMs all X steady X search_ms X nstlist K               ranks under MPS (section header says how)
  2 ranks T N atoms, P% SMs each all X steady X search_ms X nstlist K
  Device timeline (us, S steps; mean / median / p90): local a / b / c, non-local ..., non-overlap ...
  mps 2PE T all X steady X search_ms X                                      (atoms and steps from the section header)
  N atoms (nstlist K, rlist R): whole run X; fitted from T ps (...) Y       NVE drift
'#' lines and '## ' section headers are kept in raw_log only (the sections name each run's section).

Usage: python3 bench/raw_log_record.py RAW.txt --out RECORD.json [--header HEADER.json]
         the header (schema_version, benchmark, date, commit, machine, settings, source...) from HEADER.json, or
         from RECORD.json when it exists; the parsed fields and raw_log replace what RECORD.json had
       python3 bench/raw_log_record.py --check RECORD.json
         exit 1 unless the record's figures are exactly those its raw_log gives (the transcription is faithful)
"""
import argparse
import json
import os
import re
import sys

PARSED = ("runs", "gromacs_runs", "mps_runs", "nve_drift")
NUM = r"(-?[0-9.]+(?:e-?[0-9]+)?)"


def _f(x):
    return float(x)


def _timeline(line):
    """{local: {mean, median, p90}, ...} and the step count of a 'Device timeline' line, or None."""
    m = re.match(r"Device timeline \(us, (\d+) steps; mean / median / p90\): (.*)$", line)
    if not m:
        return None
    out = {"samples": int(m.group(1))}
    for part in m.group(2).split(", "):
        name, values = part.rsplit(" ", 5)[0], part.split()[-5:]
        mean, median, p90 = _f(values[0]), _f(values[2]), _f(values[4])
        key = name.strip().replace("-", "")
        out[key] = {"mean": mean, "median": median, "p90": p90}
        out[f"{key}_us"] = mean
    return out


def parse(lines):
    """{runs, gromacs_runs, mps_runs, nve_drift} from the log's lines (raw_line: 1-based)."""
    out = {k: [] for k in PARSED}
    section = ""
    for n, raw in enumerate(lines, 1):
        line = raw.strip()
        if line.startswith("## "):
            section = line[3:]
            continue
        if not line or line.startswith("#"):
            continue
        src = {"section": section, "raw_line": n}
        m = re.match(rf"gromacs n=(\d+) ns/day={NUM} us/step={NUM} us/step-xDDNS={NUM} nstlist=(\d+)$", line)
        if m:
            out["gromacs_runs"].append({
                "tool": "gromacs", "version": "2026.3", "atoms": int(m.group(1)), "nstlist_requested": "auto",
                "nstlist_mdp": int(m.group(5)), "cuda_graph_requested": False, "steps": 10000,
                "ns_per_day": _f(m.group(2)), "us_per_step": _f(m.group(3)),
                "us_per_step_without_dd_and_search": _f(m.group(4)), **src})
            continue
        m = re.match(rf"haloex +n=(\d+) ns/day={NUM} us/step\(all\)={NUM} steady={NUM} nstlist=(\d+) rlist={NUM} "
                     rf"search_ms={NUM} drift={NUM}$", line)
        if m:
            atoms = int(m.group(1))
            out["runs"].append({
                "label": f"hx-{atoms}-auto", "program": "haloex-md", "schema_version": 2, "atoms": atoms, "ranks": 1,
                "steps": 10000, "ns_per_day": _f(m.group(2)), "us_per_step": _f(m.group(3)),
                "us_per_step_steady": _f(m.group(4)), "search_step_ms": _f(m.group(7)),
                "conserved_drift_per_atom": _f(m.group(8)),
                "settings": {"nstlist": int(m.group(5)), "nstlist_requested": "auto", "rlist": _f(m.group(6)),
                             "thermostat": "v-rescale"}, **src})
            continue
        m = re.match(rf"(gromacs|gromacs\+graphs) n=(\d+) nstlist=(\d+|auto) all steps {NUM} us/step; (.*)$", line)
        if m:
            g = {"tool": "gromacs", "version": "2026.3", "atoms": int(m.group(2)), "nstlist_requested": m.group(3),
                 "cuda_graph_requested": m.group(1) == "gromacs+graphs", "steps": 10000, "us_per_step": _f(m.group(4))}
            c = re.match(rf"Changing nstlist from (\d+) to (\d+), rlist from {NUM} to {NUM}$", m.group(5))
            if c:
                g.update({"nstlist_changed_from": int(c.group(1)), "nstlist": int(c.group(2)),
                          "rlist": _f(c.group(4))})
            out["gromacs_runs"].append(dict(g, **src))
            continue
        m = re.match(rf"haloex +n=(\d+) nstlist=(\d+) all steps {NUM} us/step; steady {NUM}$", line)
        if m:
            atoms, nstlist = int(m.group(1)), int(m.group(2))
            out["runs"].append({
                "label": f"hx-{atoms}-{nstlist}", "program": "haloex-md", "schema_version": 2, "atoms": atoms,
                "ranks": 1, "steps": 10000, "us_per_step": _f(m.group(3)), "us_per_step_steady": _f(m.group(4)),
                "settings": {"nstlist": nstlist, "nstlist_requested": str(nstlist), "thermostat": "v-rescale"}, **src})
            continue
        m = re.match(rf"(\d+) ranks? (?:(\w+) )?(\d+) atoms, (\d+)% SMs(?: each)? all {NUM} steady {NUM} "
                     rf"search_ms {NUM} nstlist (\d+)$", line)
        if m:
            out["mps_runs"].append({
                "ranks": int(m.group(1)), "transport": m.group(2) or "none (one rank)", "atoms": int(m.group(3)),
                "sm_percent": int(m.group(4)), "us_per_step": _f(m.group(5)), "us_per_step_steady": _f(m.group(6)),
                "search_step_ms": _f(m.group(7)), "nstlist": int(m.group(8)), "steps": 6000,
                "thermostat": "v-rescale", **src})
            continue
        t = _timeline(line)
        if t is not None:
            if not out["mps_runs"]:
                raise ValueError(f"line {n}: a device timeline before any run")
            out["mps_runs"][-1]["timing"] = dict(t, raw_line=n)
            continue
        m = re.match(rf"mps 2PE (\w+) all {NUM} steady {NUM} search_ms {NUM}$", line)
        if m:
            out["mps_runs"].append({
                "ranks": 2, "transport": m.group(1), "atoms": 45000, "sm_percent": 100, "us_per_step": _f(m.group(2)),
                "us_per_step_steady": _f(m.group(3)), "search_step_ms": _f(m.group(4)), "steps": 3000,
                "thermostat": "none (NVE)", **src})
            continue
        m = re.match(rf"(\d+) atoms \(nstlist (\d+), rlist {NUM}\): whole run {NUM}; fitted from (\d+) ps"
                     rf"(?: \([^)]*\))? {NUM}$",
                     line)
        if m:
            out["nve_drift"].append({
                "atoms": int(m.group(1)), "nstlist": int(m.group(2)), "rlist": _f(m.group(3)),
                "drift_whole_run": _f(m.group(4)), "drift_from_ps": int(m.group(5)), "drift_fitted": _f(m.group(6)),
                "steps": 20000, **src})
            continue
        raise ValueError(f"line {n}: not a line this transcription knows: {line!r}")
    return out


def check(record, where="record"):
    """Problems (list of strings) where the record's figures differ from what its raw_log gives."""
    lines = record.get("raw_log")
    if not isinstance(lines, list):
        return [f"{where}: no raw_log (a list of the log's lines)"]
    try:
        parsed = parse(lines)
    except ValueError as e:
        return [f"{where}: raw_log: {e}"]
    return [f"{where}: {k} differ from what raw_log gives (re-run bench/raw_log_record.py)"
            for k in PARSED if record.get(k) != parsed[k]]


def main(argv=None):
    p = argparse.ArgumentParser(prog="raw_log_record.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("raw", nargs="?", help="the raw log (text)")
    p.add_argument("--out", help="the record to write (JSON)")
    p.add_argument("--header", help="JSON whose fields head the record (default: RECORD's own, when it exists)")
    p.add_argument("--check", metavar="RECORD", help="check a record's figures against its raw_log")
    a = p.parse_args(argv)
    if a.check:
        with open(a.check) as f:
            problems = check(json.load(f), a.check)
        print("\n".join(problems) or f"{a.check}: every figure is the one its raw_log gives")
        return 1 if problems else 0
    if not a.raw or not a.out:
        p.error("give RAW and --out (or --check RECORD)")
    header_path = a.header or (a.out if os.path.exists(a.out) else None)
    header = {}
    if header_path:
        with open(header_path) as f:
            header = {k: v for k, v in json.load(f).items() if k not in PARSED + ("raw_log",)}
    with open(a.raw) as f:
        lines = f.read().splitlines()
    try:
        record = dict(header, **parse(lines), raw_log=lines)
    except ValueError as e:
        sys.exit(f"{a.raw}: {e}")
    with open(a.out, "w") as f:
        json.dump(record, f, indent=1)
        f.write("\n")
    print(f"wrote {a.out}: {sum(len(record[k]) for k in PARSED)} entries from {len(lines)} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
