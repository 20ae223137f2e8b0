#!/usr/bin/env python3
"""Plots a bench/jacobi_bench.py record (matplotlib, PNG):

  out/plots/<record name>.png (or --out FILE) with three panels over the per-rank grid size:
    1. time per iteration of every transport (and the one-GPU reference,
       which computes the whole grid alone),
    2. nvshmem's speedup over the best CPU-orchestrated transport (staged,
       ipc, nccl), with the goals (1.3x at <= 1024^2 per GPU, within 3% at
       large sizes),
    3. parallel efficiency (one-GPU time / (ranks x time)).

Usage: python3 bench/plot_jacobi.py bench/results/jacobi-<machine>-<date>.json [--out file.png]
"""
import sys

from bench_common import plot_command_line, pyplot, save_png

CPU_ORCHESTRATED = ("staged", "ipc", "nccl")
STYLE = {"nvshmem": ("tab:red", "o"), "staged": ("tab:blue", "s"), "ipc": ("tab:green", "^"),
         "nccl": ("tab:purple", "D"), "cpu": ("tab:gray", "x")}


def load(doc):
    series = {}      # transport -> [(n, us, min, max, efficiency)]
    reference = []   # (n, us of the one-GPU run of the whole grid)
    ranks = None
    for rec in doc["sizes"]:
        run = rec.get("run")
        if not run:
            continue
        n = rec["per_rank"]
        for r in run["results"]:
            if r["status"] != "passed":
                continue
            ranks = r["ranks"]
            series.setdefault(r["transport"], []).append(
                (n, r["us_per_iter"], r["us_per_iter_min"], r["us_per_iter_max"], r["efficiency"]))
            if r["single_us_per_iter"] > 0 and not any(x[0] == n for x in reference):
                reference.append((n, r["single_us_per_iter"]))
    return series, sorted(reference), ranks


def main(argv=None):
    args, doc = plot_command_line(__doc__, argv, "plot_jacobi.py")
    plt = pyplot()

    series, reference, ranks = load(doc)
    if not series:
        sys.exit("%s holds no passed runs to plot" % args.record)
    gpu = doc.get("machine", {}).get("gpu", {})
    shared = gpu.get("shared_gpus", False)
    title = "haloex-jacobi on %s: %s ranks%s, %s, commit %s" % (
        doc.get("machine", {}).get("name", "?"), ranks, " (shared GPUs)" if shared else "",
        gpu.get("gpu_name", ""), str(doc.get("commit", "?"))[:10])

    fig, axes = plt.subplots(1, 3, figsize=(18, 5.2))
    ax = axes[0]
    for t, pts in sorted(series.items()):
        pts.sort()
        color, marker = STYLE.get(t, ("black", "."))
        xs = [x[0] for x in pts]
        ax.errorbar(xs, [x[1] for x in pts], yerr=[[x[1] - x[2] for x in pts], [x[3] - x[1] for x in pts]],
                    label=t, color=color, marker=marker, capsize=3)
    if reference:
        ax.plot([x[0] for x in reference], [x[1] for x in reference], "k--", label="one device, whole grid")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("cells per rank (n x n), n")
    ax.set_ylabel("us per iteration (median)")
    ax.set_title("time per iteration")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()

    ax = axes[1]
    if "nvshmem" in series:
        nv = {x[0]: x[1] for x in series["nvshmem"]}
        xs, ys, labels = [], [], []
        for n in sorted(nv):
            best = [(pts_n[1], t) for t in CPU_ORCHESTRATED for pts_n in series.get(t, []) if pts_n[0] == n]
            if best:
                b = min(best)
                xs.append(n)
                ys.append(b[0] / nv[n])
                labels.append(b[1])
        ax.plot(xs, ys, color="tab:red", marker="o", label="nvshmem vs best CPU-orchestrated")
        for x, y, l in zip(xs, ys, labels):
            ax.annotate(l, (x, y), textcoords="offset points", xytext=(0, 6), ha="center", fontsize=8)
        ax.axhline(1.3, color="tab:green", ls=":", label="goal at <= 1024^2: 1.3x")
        ax.axhline(0.97, color="tab:orange", ls=":", label="goal at large sizes: >= 0.97x")
        ax.axhline(1.0, color="gray", lw=0.8)
        ax.axvspan(min(xs + [256]) / 1.5, 1024 * 1.2, color="tab:green", alpha=0.06)
        ax.legend(fontsize=8)
    else:
        ax.text(0.5, 0.5, "no nvshmem runs in this record", ha="center", va="center", transform=ax.transAxes)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("cells per rank (n x n), n")
    ax.set_ylabel("speedup (best CPU-orchestrated time / nvshmem time)")
    ax.set_title("GPU-initiated vs CPU-orchestrated")
    ax.grid(True, which="both", alpha=0.3)

    ax = axes[2]
    for t, pts in sorted(series.items()):
        color, marker = STYLE.get(t, ("black", "."))
        ax.plot([x[0] for x in pts], [100 * x[4] for x in pts], label=t, color=color, marker=marker)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("cells per rank (n x n), n")
    ax.set_ylabel("parallel efficiency (%)")
    ax.set_title("strong scaling against one GPU")
    ax.axhline(100, color="gray", lw=0.8)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()

    fig.suptitle(title)
    fig.tight_layout()
    save_png(fig, args.record, args.out, dpi=120)


if __name__ == "__main__":
    main()
