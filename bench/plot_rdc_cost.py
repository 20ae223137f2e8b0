#!/usr/bin/env python3
"""Plots a bench/rdc_cost.py record (matplotlib, PNG): what relocatable device code (-rdc) costs the MD kernels,
as the ratio rdc / whole-program of every measured kernel and step at each system size (1 = no cost), and the
whole-program times beside it.

Usage: python3 bench/plot_rdc_cost.py RECORD.json [--out file.png]
"""
import sys

from bench_common import finish_plot, plot_command_line, pyplot, record_title


def ratios(record):
    """{quantity: [(atoms, whole, rdc, rdc / whole)]} of the record's summary."""
    out = {}
    for row in record.get("summary", []):
        for key, v in row.items():
            if isinstance(v, dict) and "whole" in v and "rdc" in v and v["whole"]:
                out.setdefault(key, []).append((row["atoms"], v["whole"], v["rdc"], v["rdc"] / v["whole"]))
    return out


def main(argv=None):
    a, rec = plot_command_line(__doc__, argv, "plot_rdc_cost.py")
    data = ratios(rec)
    if not data:
        sys.exit(f"{a.record} holds no summary (whole vs rdc per size) to plot")
    plt = pyplot()
    fig, (ax_ratio, ax_time) = plt.subplots(1, 2, figsize=(13, 5))
    for key, pts in sorted(data.items()):
        pts.sort()
        ax_ratio.plot([p[0] for p in pts], [p[3] for p in pts], marker="o", label=key)
        if key.endswith("_us"):
            ax_time.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"{key} (whole program)")
    ax_ratio.axhline(1.0, color="grey", linewidth=1)
    ax_ratio.set(xscale="log", xlabel="atoms", ylabel="rdc / whole program", title="the cost of -rdc (1 = none)")
    ax_time.set(xscale="log", yscale="log", xlabel="atoms", ylabel="µs", title="whole-program times")
    for ax in (ax_ratio, ax_time):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    finish_plot(fig, rec, record_title(rec, rec.get("benchmark", "rdc cost")), a.record, a.out)


if __name__ == "__main__":
    sys.exit(main())
