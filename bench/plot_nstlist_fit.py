#!/usr/bin/env python3
"""Plots a bench/fit_nstlist.py record (matplotlib, PNG): for every system size, the measured µs/step (all steps)
over nstlist, with the measured best, the automatic choice and the current and fitted cost models' choices marked.

Usage: python3 bench/plot_nstlist_fit.py RECORD.json [--out file.png]
"""
import sys

from bench_common import finish_plot, plot_command_line, pyplot, record_title

MARKS = (("measured_best", "measured best", "*", "black"), ("auto", "automatic (this build)", "o", "tab:red"),
         ("current_model", "current model", "^", "tab:blue"), ("fitted_model", "fitted model", "v", "tab:green"))


def main(argv=None):
    a, rec = plot_command_line(__doc__, argv, "plot_nstlist_fit.py")
    choices = [c for c in rec.get("choices", []) if c.get("us_of")]
    if not choices:
        sys.exit(f"{a.record} holds no choices (us_of per nstlist) to plot")
    plt = pyplot()
    cols = min(3, len(choices))
    rows = (len(choices) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.8 * rows), squeeze=False)
    for ax, c in zip(axes.flat, choices):
        pts = sorted((int(k), v) for k, v in c["us_of"].items())
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=".", color="grey")
        for j, (key, name, marker, color) in enumerate(MARKS):
            k = c.get(key)
            if str(k) in c["us_of"]:
                ax.scatter([k], [c["us_of"][str(k)]], marker=marker, s=60 + 30 * (len(MARKS) - j), color=color,
                           label=f"{name}: {k}", zorder=3, facecolors="none" if j else color)
        ax.set(xlabel="nstlist", ylabel="µs per step, all steps", title=f"{c['atoms']:,} atoms")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(choices):]:
        ax.axis("off")
    finish_plot(fig, rec, record_title(rec, "nstlist: measured against the cost model"), a.record, a.out)


if __name__ == "__main__":
    sys.exit(main())
