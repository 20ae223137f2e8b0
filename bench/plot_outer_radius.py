#!/usr/bin/env python3
"""Plots an outer-radius record (scripts/device/run.sh outer-radius; matplotlib, PNG): the force kernel's time
against the outer list's radius with the rolling prune's inner list held fixed, beside the unpruned kernel, per
system size; and the entries the kernel walks (the evaluated list's, empty ones apart), which is what the
pruned kernel's time follows.

Usage: python3 bench/plot_outer_radius.py RECORD.json [--out file.png]
"""
import sys

from bench_common import finish_plot, plot_command_line, pyplot, record_title

TOOL_PREFIX = "scripts/device/run.sh outer-radius"


def series(record):
    """{(atoms, pruned): [(rlist, local_us, entries, empty entries)]} sorted by rlist."""
    out = {}
    for run in record.get("runs", []):
        pruned = bool(run.get("rlist_inner"))
        for r in run.get("results", []):
            listed = r.get("evaluated_list", {})
            out.setdefault((r["atoms"], pruned), []).append(
                (run["rlist"], r["local_us"], listed.get("entries", r.get("entries", 0)), listed.get("empty_entries", 0)))
    for points in out.values():
        points.sort()
    return out


def main(argv=None):
    a, rec = plot_command_line(__doc__, argv, "plot_outer_radius.py")
    data = series(rec)
    if not data:
        sys.exit(f"{a.record} holds no runs (rlist, results with local_us) to plot")
    plt = pyplot()
    fig, (ax_time, ax_entries) = plt.subplots(1, 2, figsize=(13, 5))
    for (atoms, pruned), pts in sorted(data.items()):
        label = f"{atoms} atoms, {'inner list fixed' if pruned else 'no pruning'}"
        style = "-" if pruned else "--"
        ax_time.plot([p[0] for p in pts], [p[1] for p in pts], style, marker="o", label=label)
        if pruned:
            ax_entries.plot([p[0] for p in pts], [p[2] for p in pts], marker="o", label=f"{atoms} atoms: entries")
            ax_entries.plot([p[0] for p in pts], [p[3] for p in pts], ":", marker="x", label=f"{atoms} atoms: empty")
    ax_time.set(yscale="log", xlabel="outer radius rlist (nm)", ylabel="force kernel (µs)",
                title="the kernel against the outer radius")
    ax_entries.set(yscale="log", xlabel="outer radius rlist (nm)", ylabel="entries of the evaluated list",
                   title="what the pruned kernel walks")
    for ax in (ax_time, ax_entries):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    finish_plot(fig, rec, record_title(rec, rec.get("benchmark", "outer radius")), a.record, a.out)


if __name__ == "__main__":
    sys.exit(main())
