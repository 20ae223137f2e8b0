#!/usr/bin/env python3
"""Plots an entry-length record (bench/entry_length.py; matplotlib, PNG): the force kernel's median time against
the entry length per system size, the build's automatic choice marked.

Usage: python3 bench/plot_entry_length.py RECORD.json [--out file.png]
"""
import sys

from bench_common import finish_plot, plot_command_line, pyplot, record_title


def series(record):
    """{atoms: {"fixed": [(length, median us)] sorted, "auto": (length, median us) of the automatic choice or
    None}}."""
    out = {}
    for row in record.get("summary", []):
        entry = out.setdefault(row["atoms"], {"fixed": [], "auto": None})
        point = (row["max_j_per_entry"], row["local_us_median"])
        if row["max_j_requested"] == 0:
            entry["auto"] = point
        else:
            entry["fixed"].append(point)
    for entry in out.values():
        entry["fixed"].sort()
    return out


def main(argv=None):
    a, rec = plot_command_line(__doc__, argv, "plot_entry_length.py")
    data = series(rec)
    if not data:
        sys.exit(f"{a.record} holds no summary (atoms, max_j_requested, local_us_median) to plot")
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 5))
    for atoms, entry in sorted(data.items()):
        fixed, auto = entry["fixed"], entry["auto"]
        line, = ax.plot([p[0] for p in fixed], [p[1] for p in fixed], marker="o", label=f"{atoms} atoms")
        if auto:
            ax.plot([auto[0]], [auto[1]], marker="*", markersize=14, color=line.get_color(), linestyle="none",
                    label=f"{atoms} atoms: the automatic choice ({auto[0]})")
    ax.set(xscale="log", yscale="log", xlabel="j clusters per entry (--max-j)", ylabel="force kernel (µs)",
           title="the force kernel against the entry length")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    finish_plot(fig, rec, record_title(rec, "the force kernel at each entry length"), a.record, a.out)


if __name__ == "__main__":
    sys.exit(main())
