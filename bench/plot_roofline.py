#!/usr/bin/env python3
"""Plots a bench/roofline.py record (matplotlib, PNG): the non-bonded kernel's use of each unit against its peak
per system size (what bounds it), and the cluster-pair efficiency of the outer and the pruned inner list with the
instructions per evaluated cluster pair beside it.

Usage: python3 bench/plot_roofline.py RECORD.json [--out file.png]
"""
import sys

from bench_common import finish_plot, plot_command_line, pyplot, record_title


def main(argv=None):
    a, rec = plot_command_line(__doc__, argv, "plot_roofline.py")
    sizes = sorted(rec.get("sizes", []), key=lambda r: r["atoms"])
    if not sizes:
        sys.exit(f"{a.record} holds no sizes (bench/roofline.py rows) to plot")
    plt = pyplot()
    fig, (ax_units, ax_lists) = plt.subplots(1, 2, figsize=(13, 5))
    units = [u for u in sizes[0]["pct_of_peak"] if any(r["pct_of_peak"].get(u) is not None for r in sizes)]
    width = 0.8 / max(1, len(units))
    for k, unit in enumerate(units):
        xs = [i + (k - (len(units) - 1) / 2) * width for i in range(len(sizes))]
        ax_units.bar(xs, [r["pct_of_peak"].get(unit) or 0.0 for r in sizes], width, label=unit)
    ax_units.axhline(60, color="grey", linewidth=1, linestyle="--")
    ax_units.set_xticks(range(len(sizes)), [f"{r['atoms']:,}" for r in sizes])
    ax_units.set(xlabel="atoms", ylabel="% of peak", ylim=(0, 100), title="each unit against its peak (ncu, base clocks)")
    ax_units.legend(fontsize=7)
    atoms = [r["atoms"] for r in sizes]
    for key, label in (("outer", "outer list"), ("inner", "pruned inner list"),
                       ("evaluated_per_call", "evaluated per call")):
        ax_lists.plot(atoms, [100.0 * r["cluster_pair_efficiency"][key] for r in sizes], marker="o", label=label)
    ax_lists.set(xscale="log", xlabel="atoms", ylabel="pairs within rc / 64 per cluster pair (%)",
                 title="cluster-pair efficiency")
    ax_inst = ax_lists.twinx()
    ax_inst.plot(atoms, [r["warp_instructions_per_evaluated_cluster_pair"] or 0.0 for r in sizes], color="black",
                 marker="s", linestyle=":", label="warp instructions per evaluated cluster pair")
    ax_inst.set(ylabel="warp instructions per evaluated cluster pair")
    ax_lists.grid(True, which="both", alpha=0.3)
    ax_lists.legend(fontsize=7, loc="lower left")
    ax_inst.legend(fontsize=7, loc="lower right")
    finish_plot(fig, rec, record_title(rec, rec.get("benchmark", "non-bonded kernel roofline")), a.record, a.out)


if __name__ == "__main__":
    sys.exit(main())
