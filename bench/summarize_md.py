#!/usr/bin/env python3
"""Markdown tables from haloex-md records: what docs/results.md quotes.

Reads bench/md_bench.py records (suites single, dd, scaling) and single
haloex-md --json records, of schema 1 and 2 (bench/bench_common.py,
md_figures). The end-to-end figure comes first, the metric named in every
column: "us/step all steps" (search steps included, start-up apart),
"us/step steady" (steps without search), "search step ms" (mean wall time of
one search step), "ns/day all steps", "ns/day steady". Schema-1 records (no schema_version)
have no honest all-steps figure: those cells read n/a and the table says so.

With --gromacs FILE (a record of the GROMACS driver: tool "gromacs", version,
atoms, nstlist, rlist, nstlist_auto, steps, us_per_step, ns_per_day, drift,
command; one record, a list of them, a record with "runs", or a haloex vs
GROMACS record's "gromacs_runs"), a "haloex vs GROMACS" table follows (a haloex
vs GROMACS record given as RECORD gets it from its own gromacs_runs): the ratio of the all-steps us/step of runs of the
same size, both codes' nstlist, rlist and conserved-energy drift.

Usage: bench/summarize_md.py RECORD.json... [--gromacs GROMACS.json] [--label 1gpu]
"""
import argparse
import json
import sys

from bench_common import SchemaError, check_record, fmt, machine_summary, md_figures, record_runs, schema_version

# The project's first one-GPU goals (us/step of the steady state, CUDA graphs on).
TARGETS_1GPU = {22500: 56, 45000: 75, 90000: 124, 180000: 224, 360000: 412, 720000: 790}

SCHEMA1_NOTE = ("n/a: schema-1 record (written before haloex-md reported every step): its us_per_step is the steady "
                "state; its with-search figure folds in one-time start-up, so no all-steps figure is given.")


def title(rec, what):
    commit = str(rec.get("commit", "?"))[:12]
    date = rec.get("date") or "date not recorded"
    return (f"\n### {what} — {machine_summary(rec)}, commit `{commit}`, {date}, "
            f"schema {schema_version(rec)}\n")


def figures_cells(run):
    """The leading cells of a run: us/step all steps, us/step steady, search step ms, ns/day all steps, ns/day
    steady; and whether the run is schema 1 (no all-steps figure)."""
    f = md_figures(run)
    if f is None:
        return ["—"] * 5, False
    return [fmt(f.us_per_step), fmt(f.us_per_step_steady), fmt(f.search_step_ms, ".2f"),
            fmt(f.ns_per_day, ".1f"), fmt(f.ns_per_day_steady, ".1f")], not f.end_to_end


def single_table(rec):
    """md_bench.py single: one row per size, CUDA graphs on (and the steady state without graphs beside it)."""
    out = [title(rec, rec.get("benchmark", "haloex-md single")),
           "| atoms | us/step all steps | us/step steady | search step ms | ns/day all steps | ns/day steady | "
           "us/step steady, no graphs | goal (us/step steady) |",
           "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    by = {}
    for r in rec["runs"]:
        by.setdefault(r.get("atoms"), {})[r.get("label")] = r
    schema1 = False
    for atoms in sorted(k for k in by if k):
        cells, old = figures_cells(by[atoms].get("1gpu graphs=1", {}))
        schema1 |= old
        nog = md_figures(by[atoms].get("1gpu graphs=0", {}))
        out.append(f"| {atoms} | " + " | ".join(cells) +
                   f" | {fmt(nog.us_per_step_steady if nog else None)} | {TARGETS_1GPU.get(atoms, '')} |")
    if schema1:
        out.append("\n" + SCHEMA1_NOTE)
    k = rec.get("nonbonded_kernels")
    if k:
        out.append("\nNon-bonded kernel (haloex-bench-nonbonded, rlist "
                   f"{k.get('rlist_nm')} nm, {k.get('repetitions')} repetitions):\n")
        out.append("| atoms | cluster pairs | atom pairs in list | pairs within rc | local kernel us | "
                   "with energies us | update us | step us (graph) |")
        out.append("|---:|---:|---:|---:|---:|---:|---:|---:|")
        for x in k["results"]:
            out.append(f"| {x['atoms']} | {x['cluster_pairs']} | {x['atom_pairs_in_list']} | {x['pairs_within_rc']} | "
                       f"{x['local_us']:.1f} | {x['local_energies_us']:.1f} | {x['leapfrog_us']:.1f} | "
                       f"{x['graph_step_us']:.1f} |")
    return "\n".join(out)


def startup_of(run):
    """A run's one-time start-up in seconds (process, library and transport start-up: NVSHMEM's or NCCL's
    initialisation, first allocations), kept apart from every per-step figure; None where it was not recorded."""
    f = md_figures(run)
    return f.startup_seconds if f else None


def runs_rows(runs, default_ranks=None):
    rows, schema1 = [], False
    for r in runs:
        cells, old = figures_cells(r)
        schema1 |= old
        t = r.get("timing", {})
        syncs = r.get("host_syncs_per_step")
        note = "" if md_figures(r) else (" " + r.get("error", "no result")[:60].replace("\n", " ").replace("|", "/"))
        label = r.get("label") or r.get("transport", "")
        rows.append(f"| {r.get('atoms', '')} | {r.get('ranks', default_ranks or '')} | {label}{note} | " +
                    " | ".join(cells) +
                    f" | {fmt(t.get('local_us'))} | {fmt(t.get('nonlocal_us'))} | {fmt(t.get('nonoverlap_us'))} | "
                    f"{fmt(syncs, '.2f')} | {fmt(startup_of(r), '.2f')} |")
    return rows, schema1


RUNS_HEADER = ["| atoms | ranks | variant | us/step all steps | us/step steady | search step ms | ns/day all steps | "
               "ns/day steady | local us (steady) | non-local us (steady) | non-overlap us (steady) | host syncs/step | "
               "start-up s |",
               "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]


def runs_table(rec):
    """md_bench.py dd and scaling: one row per run."""
    settings = rec.get("settings", {})
    rows, schema1 = runs_rows(record_runs(rec), settings.get("ranks"))
    what = rec.get("benchmark", "haloex-md")
    extra = {k: settings.get(k) for k in ("ranks", "grid", "quick", "shared_gpus", "pdl", "launcher") if k in settings}
    out = [title(rec, what), f"settings: {extra}\n"] + RUNS_HEADER + rows
    if schema1:
        out.append("\n" + SCHEMA1_NOTE)
    return "\n".join(out)


def run_table(rec, where="record"):
    """One haloex-md --json record."""
    rows, schema1 = runs_rows([rec])
    s = rec.get("settings", {})
    out = [title(rec, f"haloex-md {rec.get('transport', '')}, {rec.get('atoms')} atoms, grid {rec.get('grid')}"),
           f"settings: nstlist {s.get('nstlist')}, rlist {s.get('rlist')}, search on the {rec.get('search', 'host')}, "
           f"CUDA graphs {rec.get('cuda_graphs')}\n"] + RUNS_HEADER + rows
    if schema1:
        out.append("\n" + SCHEMA1_NOTE)
    return "\n".join(out)


# ---- GROMACS ------------------------------------------------------------------------------------------------------

def is_gromacs(rec):
    return isinstance(rec, dict) and str(rec.get("tool", "")).lower() == "gromacs"


def gromacs_records(doc, where="GROMACS record"):
    """The GROMACS runs of a file: one record, a list of records, a record with "runs", or a haloex vs GROMACS record
    (its "gromacs_runs", as scripts/device/run.sh's stage gromacs writes them beside the haloex runs); ValueError
    if none."""
    if isinstance(doc, dict):
        schema_version(doc, where)
    if isinstance(doc, dict) and isinstance(doc.get("gromacs_runs"), list):
        found = [dict(r, tool=r.get("tool", "gromacs")) for r in doc["gromacs_runs"] if isinstance(r, dict)]
    elif is_gromacs(doc) and "runs" not in doc:
        found = [doc]
    elif isinstance(doc, dict) and isinstance(doc.get("runs"), list):
        found = [dict(r, tool="gromacs") if is_gromacs(doc) and "tool" not in r else r for r in doc["runs"]]
        found = [r for r in found if is_gromacs(r)]
    elif isinstance(doc, list):
        found = [r for r in doc if is_gromacs(r)]
    else:
        found = []
    if not found:
        raise ValueError(f'{where}: no GROMACS record (tool "gromacs") in it')
    return found


def md_runs(rec):
    """(label, run) of a haloex-md record: its runs, or itself for a single haloex-md --json record."""
    if isinstance(rec.get("runs"), list):
        return [(r.get("label", r.get("transport", "?")), r) for r in record_runs(rec)]
    s = rec.get("settings", {})
    launch = " per-pulse" if s.get("nvshmem_launch") == "per-pulse" else ""
    return [(f"{rec.get('transport', '?')}/{s.get('nvshmem_path', 'auto')}{launch}", rec)]


def haloex_nstlist(run):
    s = run.get("settings", {})
    reason = s.get("nstlist_reason")
    if s.get("nstlist") is None:
        return "?"
    if reason is None:
        return str(s["nstlist"])
    return f"{s['nstlist']} ({'set' if reason.startswith(('set by', 'from the checkpoint')) else 'auto'})"


def same_size(run, g):
    if run.get("atoms") != g.get("atoms"):
        return False
    g_ranks = g.get("ranks", g.get("gpus"))
    return g_ranks is None or run.get("ranks") is None or int(g_ranks) == int(run["ranks"])


def gromacs_table(md_rec, grom, label=None):
    """haloex vs GROMACS, runs of the same size (and rank count where both say): the ratio of the all-steps us/step
    (haloex / GROMACS: below 1, haloex is faster), both codes' nstlist, rlist and drift."""
    out = [title(md_rec, "haloex vs GROMACS"),
           "| atoms | haloex run | haloex us/step all steps | GROMACS us/step all steps | haloex / GROMACS | "
           "nstlist haloex | nstlist GROMACS | rlist haloex (nm) | rlist GROMACS (nm) | drift haloex | drift GROMACS | "
           "GROMACS |",
           "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    matched, schema1 = 0, False
    for g in grom:
        for name, run in md_runs(md_rec):
            if (label and name != label) or not same_size(run, g):
                continue
            f = md_figures(run)
            if f is None:
                continue
            matched += 1
            g_us = g.get("us_per_step")
            if f.end_to_end and isinstance(g_us, (int, float)) and g_us > 0:
                ratio = f"{f.us_per_step / g_us:.2f}"
            else:
                ratio = "n/a"
                schema1 |= not f.end_to_end
            g_nst = "?" if g.get("nstlist") is None else f"{g['nstlist']}" + (
                " (auto)" if g.get("nstlist_auto") else " (set)" if g.get("nstlist_auto") is False else "")
            drift = run.get("conserved_drift_per_atom")
            out.append(f"| {g['atoms']} | {name} | {fmt(f.us_per_step)} | {fmt(g_us)} | {ratio} | "
                       f"{haloex_nstlist(run)} | {g_nst} | {run.get('settings', {}).get('rlist', '?')} | "
                       f"{g.get('rlist', '?')} | {fmt(drift, '.2g')} | {fmt(g.get('drift'), '.2g')} | "
                       f"{g.get('version', '?')} |")
    if not matched:
        out.append("| (no haloex run of the GROMACS records' sizes) |||||||||||")
    out.append("\nus/step over all steps for both (GROMACS's Performance line counts every step); drift: "
               "conserved energy, kJ/mol/ps per atom.")
    if schema1:
        out.append(SCHEMA1_NOTE)
    return "\n".join(out)


# ---- command line -------------------------------------------------------------------------------------------------

def summarize(rec, where="record"):
    """The table(s) of one record, by kind."""
    check_record(rec, where)
    if is_gromacs(rec) or (isinstance(rec.get("runs"), list) and rec["runs"] and is_gromacs(rec["runs"][0])):
        lines = ["\n### GROMACS runs\n",
                 "| atoms | nstlist | rlist | steps | us/step all steps | ns/day all steps | drift | version |",
                 "|---:|---:|---:|---:|---:|---:|---:|---|"]
        for g in gromacs_records(rec, where):
            lines.append(f"| {g.get('atoms')} | {g.get('nstlist')}{' (auto)' if g.get('nstlist_auto') else ''} | "
                         f"{g.get('rlist')} | {g.get('steps')} | {fmt(g.get('us_per_step'))} | "
                         f"{fmt(g.get('ns_per_day'))} | {fmt(g.get('drift'), '.2g')} | {g.get('version')} |")
        return "\n".join(lines)
    if "runs" in rec:
        if "single" in str(rec.get("benchmark", "")):
            return single_table(rec)
        return runs_table(rec)
    if rec.get("program") == "haloex-md":
        return run_table(rec, where)
    raise ValueError(f"{where}: not a haloex-md record (no runs, no program haloex-md)")


def main(argv=None):
    p = argparse.ArgumentParser(prog="summarize_md.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("records", nargs="+", metavar="RECORD", help="md_bench.py records or haloex-md --json records")
    p.add_argument("--gromacs", action="append", default=[], metavar="FILE",
                   help="GROMACS driver record(s): adds a haloex vs GROMACS table (repeatable)")
    p.add_argument("--label", help="with --gromacs: only the haloex runs of this label (e.g. 1gpu, nvshmem/tma)")
    a = p.parse_args(argv)
    try:
        grom = []
        for path in a.gromacs:
            with open(path) as f:
                grom += gromacs_records(json.load(f), path)
        for path in a.records:
            with open(path) as f:
                rec = json.load(f)
            print(summarize(rec, path))
            # A haloex vs GROMACS record compares with its own GROMACS runs unless --gromacs names others.
            own = gromacs_records(rec, path) if not grom and isinstance(rec.get("gromacs_runs"), list) else []
            if (grom or own) and not is_gromacs(rec):
                print(gromacs_table(rec, grom or own, a.label))
    except (SchemaError, ValueError, OSError, json.JSONDecodeError) as e:
        sys.exit(f"error: {e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
