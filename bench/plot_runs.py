#!/usr/bin/env python3
"""Plots any record of haloex-md runs over system sizes (matplotlib, PNG): md_bench.py single and nstlist suites,
the hand-made dd records, and haloex-md vs GROMACS records (runs + gromacs_runs).

  panel 1: µs/step over atoms of every series (a run's label without its atom count: "1gpu graphs=1",
           "nstlist=100", "dd2-nvshmem", "hx-auto"), in the record's headline metric (all steps where every run
           has it; solid), the steady state dotted beside it; GROMACS runs (per requested nstlist) dashed;
  panel 2: the search step's mean wall time (ms) over atoms;
  panel 3 (with GROMACS runs): GROMACS / haloex, all steps, for runs of the same size and requested nstlist,
           with the one-GPU goal (1.5x) as a line.

Usage: python3 bench/plot_runs.py RECORD.json [--out file.png]
"""
import re
import sys

from bench_common import (METRIC_ALL, METRIC_SHORT, exit_on_schema_error, finish_plot, plot_command_line, pyplot,
                          record_headline_metric, record_runs, record_title)

GOAL_VS_GROMACS = 1.5  # the one-GPU goal: haloex at least 1.5x GROMACS's throughput, all steps counted


def runs_of(record):
    """The record's haloex-md runs that name their size."""
    return [r for r in record_runs(record) if r.get("atoms")]


def series_name(run):
    """A run's label without its atom count, so that one series spans the sizes."""
    label = str(run.get("label") or run.get("transport") or "run")
    name = re.sub(r"(^|[-_ ])" + str(run["atoms"]) + r"(?=$|[-_ ])", "", label).strip("-_ ")
    return name or label


def nstlist_of(label):
    """The requested nstlist a label names ('auto' when none), to pair haloex and GROMACS runs."""
    m = re.search(r"(?:nstlist=|-)(\d+|auto)$", label)
    return m.group(1) if m else "auto"


def collect(record):
    """{series: {atoms: run}}, {id(run): MdFigures}, the headline metric, and {nstlist: {atoms: us/step}} of the
    GROMACS runs (empty without them)."""
    runs = runs_of(record)
    figs, metric = record_headline_metric(runs)
    series = {}
    for r in runs:
        if figs.get(id(r)) is not None:
            series.setdefault(series_name(r), {})[r["atoms"]] = r
    gromacs = {}
    for g in record.get("gromacs_runs", []):
        us = g.get("us_per_step")
        if isinstance(us, (int, float)) and g.get("atoms"):
            key = str(g.get("nstlist_requested", "auto"))
            if g.get("cuda_graph_requested"):
                key += " graphs"
            gromacs.setdefault(key, {})[g["atoms"]] = us
    return series, figs, metric, gromacs


def headline_us(fig, metric):
    return fig.us_per_step if metric == METRIC_ALL else fig.us_per_step_steady


def ratios(series, figs, gromacs):
    """[(haloex series, nstlist, atoms, GROMACS us / haloex us)] of runs of the same size and requested nstlist, all
    steps counted for both."""
    out = []
    for name, by in series.items():
        g = gromacs.get(nstlist_of(name), {})
        for atoms, run in sorted(by.items()):
            f = figs[id(run)]
            if atoms in g and f.us_per_step:
                out.append((name, nstlist_of(name), atoms, g[atoms] / f.us_per_step))
    return out


def main(argv=None):
    a, rec = plot_command_line(__doc__, argv, "plot_runs.py")
    series, figs, metric, gromacs = exit_on_schema_error(lambda: collect(rec))
    if not series and not gromacs:
        sys.exit(f"{a.record} holds no haloex-md run with figures to plot")
    plt = pyplot()
    panels = 3 if gromacs else 2
    fig, axes = plt.subplots(1, panels, figsize=(6 * panels, 5.2))
    ax_us, ax_search = axes[0], axes[1]
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (name, by) in enumerate(sorted(series.items())):
        color = colors[i % len(colors)]
        atoms = sorted(by)
        ax_us.plot(atoms, [headline_us(figs[id(by[n])], metric) for n in atoms], marker="o", color=color, label=name)
        if metric == METRIC_ALL:
            steady = [figs[id(by[n])].us_per_step_steady for n in atoms]
            ax_us.plot(atoms, steady, color=color, linestyle=":", linewidth=1)
        search = [(n, figs[id(by[n])].search_step_ms) for n in atoms if figs[id(by[n])].search_step_ms is not None]
        if search:
            ax_search.plot([n for n, _ in search], [s for _, s in search], marker="o", color=color, label=name)
    for i, (key, by) in enumerate(sorted(gromacs.items())):
        atoms = sorted(by)
        ax_us.plot(atoms, [by[n] for n in atoms], marker="s", linestyle="--", color="black",
                   alpha=1.0 - 0.25 * (i % 3), label=f"GROMACS nstlist {key}")
    title = "haloex-md, µs per step"
    if metric == METRIC_ALL:
        title += "\nsolid: all steps; dotted: steady state"
    ax_us.set(xscale="log", yscale="log", xlabel="atoms", ylabel=f"µs per step, {METRIC_SHORT[metric]}", title=title)
    ax_search.set(xscale="log", yscale="log", xlabel="atoms", ylabel="search step, ms (mean wall time)",
                  title="the search step")
    if gromacs:
        ax_ratio = axes[2]
        rows = ratios(series, figs, gromacs)
        for i, name in enumerate(sorted({r[0] for r in rows})):
            pts = [(r[2], r[3]) for r in rows if r[0] == name]
            ax_ratio.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", color=colors[i % len(colors)],
                          label=f"{name} (nstlist {nstlist_of(name)})")
        ax_ratio.axhline(GOAL_VS_GROMACS, color="grey", linestyle="--", linewidth=1,
                         label=f"goal {GOAL_VS_GROMACS}x (one GPU)")
        ax_ratio.axhline(1.0, color="grey", linewidth=0.8)
        ax_ratio.set(xscale="log", xlabel="atoms", ylabel="GROMACS µs/step / haloex µs/step, all steps",
                     title="haloex vs GROMACS, same size and requested nstlist\n(above 1: haloex faster)")
        ax_ratio.legend(fontsize=7)
    for ax in axes:
        ax.grid(True, which="both", alpha=0.3)
        ax.xaxis.set_minor_formatter(plt.NullFormatter())
    ax_us.legend(fontsize=7)
    if ax_search.lines:
        ax_search.legend(fontsize=7)
    title = record_title(rec, rec.get("benchmark", "haloex-md runs"), separator="\n")
    finish_plot(fig, rec, f"{title} — schema {rec.get('schema_version', 1)}", a.record, a.out, fontsize=8)


if __name__ == "__main__":
    sys.exit(main())
