#!/usr/bin/env python3
"""Plots one haloex-md run (its own --json record, e.g. md-buffer-check-*.json) (matplotlib, PNG):

  panel 1: the energies of its energy steps (energy_series: total, potential, kinetic, conserved) over the step,
           each minus its first value, in kJ/mol, with the fitted conserved-energy drift in the title;
  panel 2 (when the run checked its pair-list buffer, buffer_check): the pairs the list missed and their energy
           at each check, beside the estimate.

Usage: python3 bench/plot_run.py RUN.json [--out file.png]
"""
import sys

from bench_common import fmt, machine_summary, md_figures, plot_command_line, pyplot, save_png

SHOWN = ("total", "potential", "kinetic", "conserved")


def energy_columns(run):
    """{column: [(step, value - first value)]} of the run's energy series; {} without one."""
    es = run.get("energy_series") or {}
    cols, rows = es.get("columns", []), es.get("rows", [])
    if "step" not in cols or not rows:
        return {}
    si = cols.index("step")
    out = {}
    for name in SHOWN:
        if name in cols:
            i = cols.index(name)
            out[name] = [(r[si], r[i] - rows[0][i]) for r in rows]
    return out


def main(argv=None):
    a, run = plot_command_line(__doc__, argv, "plot_run.py")
    series = energy_columns(run)
    check = run.get("buffer_check") or {}
    if not series and not check.get("samples"):
        sys.exit(f"{a.record}: no energy series and no buffer check to plot (a run with --json and energy steps has "
                 f"energy_series)")
    plt = pyplot()
    panels = 2 if check.get("samples") else 1
    fig, axes = plt.subplots(1, panels, figsize=(6.5 * panels, 5), squeeze=False)
    ax = axes[0][0]
    for name, pts in series.items():
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=".", label=name)
    f = md_figures(run)
    drift = run.get("conserved_drift_per_atom")
    ax.set(xlabel="step", ylabel="energy - its first value (kJ/mol)",
           title=f"{run.get('atoms')} atoms, {run.get('transport', '?')}, {run.get('ranks', 1)} rank(s)\n"
                 f"conserved-energy drift {fmt(drift, '.2g')} kJ/mol/ps per atom")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    if panels == 2:
        ax2 = axes[0][1]
        cols, rows = check.get("columns", []), check["samples"]
        step, missed = cols.index("step"), cols.index("missed_pairs")
        ax2.plot([r[step] for r in rows], [r[missed] for r in rows], marker="o", color="tab:red", label="missed pairs")
        ax2.set(xlabel="step", ylabel="pairs within rc missing from the list",
                title=f"pair-list buffer check\nmeasured drift {fmt(check.get('measured_drift'), '.2g')}, "
                      f"estimated {fmt(check.get('estimated_drift'), '.2g')}, tolerance {check.get('tolerance')}")
        ax2.grid(True, alpha=0.3)
        ax2.legend(fontsize=8)
    speed = "" if f is None else f" — {fmt(f.headline()[0])} µs/step ({f.headline()[2]})"
    fig.suptitle(f"haloex-md run — {machine_summary(run)}\ncommit {str(run.get('commit', '?'))[:12]} — schema "
                 f"{run.get('schema_version', 1)}{speed}", fontsize=8)
    fig.tight_layout()
    save_png(fig, a.record, a.out, dpi=110)


if __name__ == "__main__":
    sys.exit(main())
