#!/usr/bin/env python3
"""Markdown tables from bench/results/md-*.json (haloex-md runs): what
docs/results.md quotes. Usage: bench/summarize_md.py FILE..."""
import json
import sys

TARGETS_1GPU = {22500: 56, 45000: 75, 90000: 124, 180000: 224, 360000: 412, 720000: 790}


def single(rec):
    print(f"\n### {rec['benchmark']} — {rec['machine']['gpus'][0] if rec['machine']['gpus'] else ''}, commit `{rec['commit'][:12]}`, {rec['date']}\n")
    print("| atoms | us/step (graphs) | us/step (no graphs) | us/step with search | ns/day | goal us/step |")
    print("|---:|---:|---:|---:|---:|---:|")
    by = {}
    for r in rec["runs"]:
        by.setdefault(r.get("atoms"), {})[r["label"]] = r
    for atoms in sorted(k for k in by if k):
        g = by[atoms].get("1gpu graphs=1", {})
        n = by[atoms].get("1gpu graphs=0", {})
        goal = TARGETS_1GPU.get(atoms, "")
        print(f"| {atoms} | {g.get('us_per_step', float('nan')):.1f} | {n.get('us_per_step', float('nan')):.1f} | "
              f"{g.get('us_per_step_with_search', float('nan')):.1f} | {g.get('ns_per_day', float('nan')):.1f} | {goal} |")
    k = rec.get("nonbonded_kernels")
    if k:
        print("\nNon-bonded kernel (haloex-bench-nonbonded, rlist "
              f"{k.get('rlist_nm')} nm, {k.get('repetitions')} repetitions):\n")
        print("| atoms | cluster pairs | atom pairs in list | pairs within rc | local kernel us | with energies us | "
              "update us | step us (graph) |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|")
        for x in k["results"]:
            print(f"| {x['atoms']} | {x['cluster_pairs']} | {x['atom_pairs_in_list']} | {x['pairs_within_rc']} | "
                  f"{x['local_us']:.1f} | {x['local_energies_us']:.1f} | {x['leapfrog_us']:.1f} | "
                  f"{x['graph_step_us']:.1f} |")


def dd(rec):
    print(f"\n### {rec['benchmark']} — {rec['settings']}, commit `{rec['commit'][:12]}`\n")
    print("| atoms | variant | us/step | ns/day | local us | non-local us | non-overlap us | host syncs/step |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|")
    for r in rec["runs"]:
        t = r.get("timing", {})
        print(f"| {r.get('atoms', '')} | {r['label']} | {r.get('us_per_step', float('nan')):.1f} | "
              f"{r.get('ns_per_day', float('nan')):.1f} | {t.get('local_us', float('nan')):.1f} | "
              f"{t.get('nonlocal_us', float('nan')):.1f} | {t.get('nonoverlap_us', float('nan')):.1f} | "
              f"{r.get('host_syncs_per_step', float('nan')):.2f} |")


for path in sys.argv[1:]:
    with open(path) as f:
        rec = json.load(f)
    (single if "single" in rec["benchmark"] else dd)(rec)
