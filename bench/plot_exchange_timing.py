#!/usr/bin/env python3
"""Plots a bench/exchange_timing.py record (matplotlib, PNG): the median time of one halo exchange, forward
(coordinates) and reverse (forces), of every transport, path and timing mode (launched from the host, replayed
from a CUDA graph, the graph with an empty kernel in place of each exchange), with the p10-p90 range as error
bars; one group of bars per system size.

Usage: python3 bench/plot_exchange_timing.py RECORD.json [--out file.png]
"""
import sys

from bench_common import finish_plot, plot_command_line, pyplot, record_title


def variant(row):
    launch = "" if row.get("launch", "fused") == "fused" else f", {row['launch']}"
    return f"{row['transport']}/{row['path']}{launch}\n{row['timing']}"


def bars(record):
    """{atoms: [(variant, direction, median, p10, p90)]} of the record's rows, in their order."""
    out = {}
    for row in record.get("results", []):
        for direction in ("forward", "reverse"):
            t = row.get(f"{direction}_us") or {}
            if "median" in t:
                out.setdefault(row["atoms"], []).append((variant(row), direction, t["median"],
                                                         t.get("p10", t["median"]), t.get("p90", t["median"])))
    return out


def main(argv=None):
    a, rec = plot_command_line(__doc__, argv, "plot_exchange_timing.py")
    groups = bars(rec)
    if not groups:
        sys.exit(f"{a.record} holds no exchange timings (results with forward_us/reverse_us) to plot")
    plt = pyplot()
    fig, axes = plt.subplots(len(groups), 1, figsize=(13, 4.2 * len(groups)), squeeze=False)
    for ax, atoms in zip(axes[:, 0], sorted(groups)):
        rows = groups[atoms]
        names = list(dict.fromkeys(r[0] for r in rows))
        for k, direction in enumerate(("forward", "reverse")):
            pts = [(names.index(r[0]), r) for r in rows if r[1] == direction]
            x = [i + (k - 0.5) * 0.38 for i, _ in pts]
            med = [r[2] for _, r in pts]
            err = [[r[2] - r[3] for _, r in pts], [r[4] - r[2] for _, r in pts]]
            ax.bar(x, med, width=0.38, yerr=err, capsize=2, label=f"{direction} (median, p10-p90)")
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names, fontsize=7)
        ax.set(ylabel="µs per exchange", title=f"{atoms:,} atoms")
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=8)
    finish_plot(fig, rec, record_title(rec, "halo exchange timings (haloex-halo-stress --time-exchanges)"), a.record,
                a.out)


if __name__ == "__main__":
    sys.exit(main())
