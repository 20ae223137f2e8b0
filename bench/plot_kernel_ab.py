#!/usr/bin/env python3
"""Plots a bench/kernel_ab.py record (matplotlib, PNG): B / A of every kernel figure at each system size (below 1:
B is faster), with each size's verdict on the force kernel, and A's and B's local_us beside it.

Usage: python3 bench/plot_kernel_ab.py RECORD.json [--out file.png]
"""
import sys

from bench_common import finish_plot, plot_command_line, pyplot, record_title


def main(argv=None):
    a, rec = plot_command_line(__doc__, argv, "plot_kernel_ab.py")
    rows = sorted(rec.get("summary", []), key=lambda r: r["atoms"])
    if not rows:
        sys.exit(f"{a.record} holds no summary (A vs B per size) to plot")
    plt = pyplot()
    fig, (ax_ratio, ax_time) = plt.subplots(1, 2, figsize=(13, 5))
    atoms = [r["atoms"] for r in rows]
    figures = sorted({k for r in rows for k, v in r.items() if isinstance(v, dict) and "B_over_A" in v})
    for figure in figures:
        pts = [(r["atoms"], r[figure]["B_over_A"]) for r in rows if figure in r and r[figure]["B_over_A"]]
        ax_ratio.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=figure)
    for r in rows:
        ax_ratio.annotate(r.get("verdict", ""), (r["atoms"], r["local_us"]["B_over_A"]), fontsize=7,
                          textcoords="offset points", xytext=(0, 6), ha="center")
    ax_ratio.axhline(1.0, color="grey", linewidth=1)
    ax_ratio.set(xscale="log", xlabel="atoms", ylabel="B / A", title="B against A (below 1: B faster)")
    for v in ("A", "B"):
        ax_time.plot(atoms, [r["local_us"][v] for r in rows], marker="o", label=f"local_us, {v}")
    ax_time.set(xscale="log", yscale="log", xlabel="atoms", ylabel="µs", title="the force kernel (medians)")
    for ax in (ax_ratio, ax_time):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    finish_plot(fig, rec, record_title(rec, rec.get("benchmark", "MD kernels A/B")), a.record, a.out)


if __name__ == "__main__":
    sys.exit(main())
