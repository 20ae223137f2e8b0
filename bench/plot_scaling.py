#!/usr/bin/env python3
"""Plots a bench/md_bench.py scaling record (matplotlib, PNG):

  out/plots/<record name>.png (or --out FILE) with one pair of panels per system size:
    top:    ns/day over the number of GPUs for every transport and path (the
            1-GPU run as the first point of each), with the paper's points
            (NVSHMEM and MPI, GROMACS 2026) where it has one for that size;
    bottom: parallel efficiency t(1 GPU) / (GPUs x t).

ns/day and t count ALL steps (search steps included, start-up apart), as the
paper's GROMACS figures do; a schema-1 record (haloex-md before it reported
every step) has only the steady state: it is plotted so and the axes say so.

Usage: python3 bench/plot_scaling.py bench/results/md-scaling-<gpu>-<date>.json [--out file.png]
"""
import sys

from bench_common import (METRIC_ALL, METRIC_SHORT, exit_on_schema_error, finish_plot, plot_command_line, pyplot,
                          record_headline_metric, record_title)

STYLE = {"staged/auto": ("tab:blue", "s"), "ipc/auto": ("tab:green", "^"), "nccl/auto": ("tab:purple", "v"),
         "nvshmem/direct": ("tab:red", "o"), "nvshmem/tma": ("tab:orange", "D"), "nvshmem/put": ("tab:brown", "P"),
         # The ablations, where --variants asked for them (a label with one point is not drawn).
         "nccl/auto graphs=1": ("tab:pink", "<"), "nvshmem/direct graphs=0": ("tab:gray", "h"),
         "nvshmem/direct per-pulse": ("tab:olive", "*")}


def collect(record):
    """{atoms: {label: {gpus: us_per_step}}}, {atoms: {label: {gpus: ns_per_day}}} of the runs that succeeded, in
    the record's headline metric (all steps where every run has it), and that metric's name; the 1-GPU run is every
    label's point at 1 GPU."""
    figs, metric = record_headline_metric(record["runs"])
    times, rates = {}, {}
    for r in record["runs"]:
        f = figs.get(id(r))
        if f is None or not r.get("atoms"):
            continue
        us, ns = (f.us_per_step, f.ns_per_day) if metric == METRIC_ALL else (f.us_per_step_steady, f.ns_per_day_steady)
        n, gpus = r["atoms"], r.get("ranks", 1)
        labels = [r["label"]] if r["label"] != "1gpu" else list(STYLE)
        for label in labels:
            times.setdefault(n, {}).setdefault(label, {})[gpus] = us
            rates.setdefault(n, {}).setdefault(label, {})[gpus] = ns
    return times, rates, metric


def main(argv=None):
    a, rec = plot_command_line(__doc__, argv, "plot_scaling.py")
    times, rates, metric = exit_on_schema_error(lambda: collect(rec))
    sizes = sorted(times)
    if not sizes:
        sys.exit(f"{a.record} holds no successful runs to plot")
    plt = pyplot()
    paper = {(p["atoms"], p["gpus"]): p for p in rec.get("paper_points", [])}
    fig, axes = plt.subplots(2, len(sizes), figsize=(4.2 * len(sizes), 8), squeeze=False)
    for col, n in enumerate(sizes):
        ax_rate, ax_eff = axes[0][col], axes[1][col]
        for label, by in sorted(times[n].items()):
            if len(by) < 2:
                continue
            color, marker = STYLE.get(label, (None, "."))
            gpus = sorted(by)
            ax_rate.plot(gpus, [rates[n][label][g] for g in gpus], marker=marker, color=color, label=label)
            if 1 in by:
                ax_eff.plot(gpus, [100 * by[1] / (g * by[g]) for g in gpus], marker=marker, color=color, label=label)
        for (pn, pg), pt in paper.items():
            if pn == n:
                ax_rate.scatter([pg], [pt["nvshmem_ns_per_day"]], marker="*", s=140, color="black", zorder=5,
                                label="paper: NVSHMEM")
                ax_rate.scatter([pg], [pt["mpi_ns_per_day"]], marker="x", s=80, color="black", zorder=5,
                                label="paper: MPI")
        ax_rate.set(xscale="log", yscale="log", xlabel="GPUs", ylabel=f"ns/day, {METRIC_SHORT[metric]}",
                    title=f"{n:,} atoms")
        ax_eff.axhline(90, color="grey", linestyle="--", linewidth=1)
        ax_eff.set(xscale="log", xlabel="GPUs", ylabel=f"parallel efficiency (%), {METRIC_SHORT[metric]}")
        for ax in (ax_rate, ax_eff):
            ax.set_xticks([1, 2, 4, 8])
            ax.set_xticklabels(["1", "2", "4", "8"])
            ax.xaxis.set_minor_formatter(plt.NullFormatter())
            ax.grid(True, which="both", alpha=0.3)
        if col == 0:
            ax_rate.legend(fontsize=7)
    finish_plot(fig, rec,
                f"{record_title(rec, 'haloex-md strong scaling')} — schema {rec.get('schema_version', 1)}\nns/day and "
                f"efficiency (t(1 GPU) / (GPUs x t), t = us/step): {metric}; the paper's points: GROMACS, all steps",
                a.record, a.out)


if __name__ == "__main__":
    sys.exit(main())
