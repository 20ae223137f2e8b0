#!/usr/bin/env python3
"""Plots a bench/md_bench.py dd record (matplotlib, PNG):

  out/plots/<record name>.png (or --out FILE) with three panels over atoms per GPU:
    1. ns/day of every transport and path, and of the 1-GPU run (at its
       total atom count, i.e. the same system): ALL steps (search steps
       included) as solid lines, the steady state dotted beside them;
    2. parallel efficiency against the 1-GPU run, t1 / (ranks x t), of the
       all-steps time;
    3. the device timeline of each multi-GPU variant: local, non-local and
       non-overlap (docs/architecture.md#what-the-timings-mean), µs per step of the steady state.

Every axis names its metric. A schema-1 record (haloex-md before it reported
every step) has no honest all-steps figure: it is plotted as the steady state
and the labels say so.

Usage: python3 bench/plot_md.py bench/results/md-dd-<gpu>-<date>.json [--out file.png]
"""
import sys

from bench_common import (METRIC_ALL, METRIC_SHORT, exit_on_schema_error, machine_summary, plot_command_line, pyplot,
                          record_headline_metric, save_png)

STYLE = {"1gpu": ("black", "x"), "staged/auto": ("tab:blue", "s"), "ipc/auto": ("tab:green", "^"),
         "nccl/auto": ("tab:purple", "v"), "nvshmem/direct": ("tab:red", "o"), "nvshmem/tma": ("tab:orange", "D"),
         "nvshmem/put": ("tab:brown", "P"),
         # The ablations (md_bench.py ABLATION_VARIANTS): graphs and fusion measured apart.
         "nccl/auto graphs=1": ("tab:pink", "<"), "nvshmem/direct graphs=0": ("tab:gray", "h"),
         "nvshmem/direct per-pulse": ("tab:olive", "*")}


def series(record):
    """({label: {atoms: run}} of the runs with figures, {id(run): MdFigures}, the headline metric's name)."""
    figs, metric = record_headline_metric(record["runs"])
    out = {}
    for r in record["runs"]:
        if figs.get(id(r)) is not None and r.get("atoms"):
            out.setdefault(r["label"], {})[r["atoms"]] = r
    return out, figs, metric


def headline(fig, metric):
    """(us/step, ns/day) of a run in the record's headline metric."""
    if metric == METRIC_ALL:
        return fig.us_per_step, fig.ns_per_day
    return fig.us_per_step_steady, fig.ns_per_day_steady


def main(argv=None):
    a, rec = plot_command_line(__doc__, argv, "plot_md.py")
    runs, figs, metric = exit_on_schema_error(lambda: series(rec))
    if not runs:
        sys.exit(f"{a.record} holds no successful runs to plot")
    plt = pyplot()
    ranks = rec["settings"]["ranks"]
    one = runs.get("1gpu", {})
    fig, axes = plt.subplots(1, 3, figsize=(17, 5.2))
    ax_rate, ax_eff, ax_time = axes
    for label, by in runs.items():
        color, marker = STYLE.get(label, (None, "."))
        atoms = sorted(by)
        per_gpu = [n / (1 if label == "1gpu" else ranks) for n in atoms]
        ax_rate.plot(per_gpu, [headline(figs[id(by[n])], metric)[1] for n in atoms], marker=marker, color=color,
                     label="1 GPU (whole system)" if label == "1gpu" else label)
        if metric == METRIC_ALL:
            ax_rate.plot(per_gpu, [figs[id(by[n])].ns_per_day_steady for n in atoms], color=color, linestyle=":",
                         linewidth=1)
        if label == "1gpu":
            continue
        eff = [(n / ranks, headline(figs[id(one[n])], metric)[0] / (ranks * headline(figs[id(by[n])], metric)[0]))
               for n in atoms if n in one]
        if eff:
            ax_eff.plot([e[0] for e in eff], [100 * e[1] for e in eff], marker=marker, color=color, label=label)
        t = [(n / ranks, by[n].get("timing", {})) for n in atoms]
        ax_time.plot([x for x, _ in t], [v.get("nonoverlap_us", float("nan")) for _, v in t], marker=marker,
                     color=color, label=f"{label} non-overlap")
        if label.startswith("nvshmem/tma") or label.startswith("nccl"):
            ax_time.plot([x for x, _ in t], [v.get("nonlocal_us", float("nan")) for _, v in t], marker=marker,
                         color=color, linestyle=":", label=f"{label} non-local")
    short = METRIC_SHORT[metric]
    rate_title = f"haloex-md, {ranks} ranks vs 1 GPU"
    if metric == METRIC_ALL:
        rate_title += "\nsolid: all steps; dotted: steady state"
    ax_rate.set(xscale="log", yscale="log", xlabel="atoms per GPU", ylabel=f"ns/day, {short}", title=rate_title)
    ax_eff.axhline(90, color="grey", linestyle="--", linewidth=1)
    ax_eff.set(xscale="log", xlabel="atoms per GPU", ylabel=f"parallel efficiency (%), {short}",
               title=f"t(1 GPU) / (ranks x t), t = us/step, {short}")
    ax_time.set(xscale="log", yscale="log", xlabel="atoms per GPU", ylabel="µs per step (steady-state steps)",
                title="device timeline (local, non-local, non-overlap)")
    for ax in axes:
        ax.grid(True, which="both", alpha=0.3)
    ax_rate.legend(fontsize=8)
    ax_eff.legend(fontsize=8)
    ax_time.legend(fontsize=7)
    fig.suptitle(f"{machine_summary(rec)} — {ranks} ranks — commit {str(rec.get('commit', '?'))[:12]} — "
                 f"{rec.get('date', '')} — schema {rec.get('schema_version', 1)}"
                 + ("" if metric == METRIC_ALL else f"\nns/day and efficiency: {metric}"), fontsize=9)
    fig.tight_layout()
    save_png(fig, a.record, a.out, dpi=110)


if __name__ == "__main__":
    sys.exit(main())
