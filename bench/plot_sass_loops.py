#!/usr/bin/env python3
"""Plots a bench/sass_loops.py record (matplotlib, PNG): per kernel, the instructions of its innermost loop (the
non-bonded kernel's j loop: one cluster pair) and of the whole kernel, one bar per object side by side.

Usage: python3 bench/plot_sass_loops.py RECORD.json [--out file.png]
"""
import os
import sys

from bench_common import finish_plot, plot_command_line, pyplot, record_title


def main(argv=None):
    a, rec = plot_command_line(__doc__, argv, "plot_sass_loops.py")
    objects = rec.get("objects") or {}
    if not objects:
        sys.exit(f"{a.record} holds no objects to plot")
    kernels = sorted({k for kernels in objects.values() for k in kernels})
    plt = pyplot()
    fig, (ax_loop, ax_total) = plt.subplots(1, 2, figsize=(13, 5))
    width = 0.8 / len(objects)
    for i, (obj, counts) in enumerate(objects.items()):
        xs = [k + i * width for k in range(len(kernels))]
        label = os.path.basename(obj)
        inner = [counts[k]["loops"][0]["instructions"] if k in counts and counts[k]["loops"] else 0 for k in kernels]
        total = [counts[k]["instructions"] if k in counts else 0 for k in kernels]
        for ax, values in ((ax_loop, inner), (ax_total, total)):
            bars = ax.bar(xs, values, width, label=label)
            ax.bar_label(bars, fontsize=7)
    for ax, title in ((ax_loop, "innermost loop (instructions)"), (ax_total, "whole kernel (instructions)")):
        ax.set_xticks([k + 0.4 - width / 2 for k in range(len(kernels))], kernels, rotation=20, fontsize=7)
        ax.set(title=title)
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=7)
    finish_plot(fig, rec, record_title(rec, rec.get("benchmark", "SASS instructions per loop")), a.record, a.out)


if __name__ == "__main__":
    sys.exit(main())
