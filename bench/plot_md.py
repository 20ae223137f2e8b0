#!/usr/bin/env python3
"""Plots a bench/md_bench.py dd record (matplotlib, PNG), next to the record:

  <record>.png with three panels over atoms per GPU:
    1. ns/day of every transport and path, and of the 1-GPU run (at its
       total atom count, i.e. the same system),
    2. parallel efficiency against the 1-GPU run: t1 / (ranks x t),
    3. the device timeline of each multi-GPU variant: local, non-local and
       non-overlap (DESIGN §6), µs per step.

Usage: python3 bench/plot_md.py bench/results/md-dd-<gpu>-<date>.json [--out file.png]
"""
import sys

from bench_common import plot_command_line, pyplot, save_png

STYLE = {"1gpu": ("black", "x"), "staged/auto": ("tab:blue", "s"), "ipc/auto": ("tab:green", "^"),
         "nccl/auto": ("tab:purple", "v"), "nvshmem/direct": ("tab:red", "o"), "nvshmem/tma": ("tab:orange", "D"),
         "nvshmem/put": ("tab:brown", "P")}


def series(record):
    """{label: {atoms: run}} for runs that succeeded."""
    out = {}
    for r in record["runs"]:
        if "us_per_step" in r and r.get("atoms"):
            out.setdefault(r["label"], {})[r["atoms"]] = r
    return out


def main():
    a, rec = plot_command_line(__doc__)
    plt = pyplot()
    ranks = rec["settings"]["ranks"]
    runs = series(rec)
    one = runs.get("1gpu", {})
    fig, axes = plt.subplots(1, 3, figsize=(17, 5.2))
    ax_rate, ax_eff, ax_time = axes
    for label, by in runs.items():
        color, marker = STYLE.get(label, (None, "."))
        atoms = sorted(by)
        per_gpu = [n / (1 if label == "1gpu" else ranks) for n in atoms]
        ax_rate.plot(per_gpu, [by[n]["ns_per_day"] for n in atoms], marker=marker, color=color,
                     label="1 GPU (whole system)" if label == "1gpu" else label)
        if label == "1gpu":
            continue
        eff = [(n / ranks, one[n]["us_per_step"] / (ranks * by[n]["us_per_step"])) for n in atoms if n in one]
        if eff:
            ax_eff.plot([e[0] for e in eff], [100 * e[1] for e in eff], marker=marker, color=color, label=label)
        t = [(n / ranks, by[n].get("timing", {})) for n in atoms]
        ax_time.plot([x for x, _ in t], [v.get("nonoverlap_us", float("nan")) for _, v in t], marker=marker,
                     color=color, label=f"{label} non-overlap")
        if label.startswith("nvshmem/tma") or label.startswith("nccl"):
            ax_time.plot([x for x, _ in t], [v.get("nonlocal_us", float("nan")) for _, v in t], marker=marker,
                         color=color, linestyle=":", label=f"{label} non-local")
    ax_rate.set(xscale="log", yscale="log", xlabel="atoms per GPU", ylabel="ns/day",
                title=f"haloex-md, {ranks} ranks (1D) vs 1 GPU")
    ax_eff.axhline(90, color="grey", linestyle="--", linewidth=1)
    ax_eff.set(xscale="log", xlabel="atoms per GPU", ylabel="parallel efficiency (%)",
               title="t(1 GPU) / (ranks x t)")
    ax_time.set(xscale="log", yscale="log", xlabel="atoms per GPU", ylabel="µs per step",
                title="device timeline (DESIGN §6)")
    for ax in axes:
        ax.grid(True, which="both", alpha=0.3)
    ax_rate.legend(fontsize=8)
    ax_eff.legend(fontsize=8)
    ax_time.legend(fontsize=7)
    machine = rec["machine"]["gpus"][0] if rec["machine"].get("gpus") else ""
    fig.suptitle(f"{machine} x {ranks} — commit {rec['commit'][:12]} — {rec['date']}", fontsize=9)
    fig.tight_layout()
    save_png(fig, a.record, a.out, dpi=110)


if __name__ == "__main__":
    sys.exit(main())
