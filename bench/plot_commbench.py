#!/usr/bin/env python3
"""Plots a bench/commbench.py record (matplotlib, PNG):

  out/plots/<record name>.png (or --out FILE) with two panels:
    1. one-direction bandwidth over the message size: NVSHMEM block puts,
       direct stores from the whole grid, peer cudaMemcpyAsync and NCCL
       send/recv (the put and store rows use more blocks for larger
       messages, as their variant names say);
    2. small-message latency at 8 B (half round trip for ping-pongs),
       GPU-initiated next to CPU-orchestrated, with the goals (2.5 us for
       put-with-signal, 1.8 us for the direct-store flag); the bars span the
       samples' 25th-75th percentiles.

Usage: python3 bench/plot_commbench.py bench/results/commbench-<machine>-<date>.json [--out file.png]
"""
import sys

from bench_common import plot_command_line, pyplot, save_png

BANDWIDTH = [("put_bandwidth", "NVSHMEM block puts", "tab:red", "o"),
             ("store_bandwidth", "direct stores (grid)", "tab:orange", "D"),
             ("memcpy_peer_bandwidth", "peer cudaMemcpyAsync", "tab:green", "^"),
             ("nccl_bandwidth", "NCCL send/recv", "tab:purple", "v")]
LATENCY = [("put_latency", "thread", "put + quiet (thread)", None),
           ("put_signal_pingpong", "thread", "put-with-signal (thread)", 2.5),
           ("put_signal_pingpong", "block", "put-with-signal (block)", 2.5),
           ("direct_store_flag", "thread", "stores + flag (thread)", 1.8),
           ("direct_store_flag", "block", "stores + flag (block)", 1.8),
           ("memcpy_peer_event", "cudaMemcpyAsync", "peer copy + event", None),
           ("memcpy_peer_pingpong", "copy+sync+MPI", "peer copy + sync + MPI", None),
           ("nccl_pingpong", "send/recv+sync", "NCCL send/recv + sync", None),
           ("mpi_pingpong", "host buffers", "MPI host ping-pong", None)]
GPU_INITIATED = {"put_latency", "put_signal_pingpong", "direct_store_flag"}


def main(argv=None):
    args, doc = plot_command_line(__doc__, argv, "plot_commbench.py")
    plt = pyplot()
    rows = [r for r in doc["results"] if not r.get("skipped")]
    if not rows:
        sys.exit("%s holds no measurements to plot" % args.record)

    fig, (bw, lat) = plt.subplots(1, 2, figsize=(14, 5))
    for bench, label, color, marker in BANDWIDTH:
        pts = sorted((r["bytes"], r["median"]) for r in rows if r["benchmark"] == bench)
        if pts:
            bw.plot([b for b, _ in pts], [v for _, v in pts], marker=marker, color=color, label=label)
    bw.set_xscale("log", base=2)
    bw.set_yscale("log")
    bw.set_xlabel("message size (bytes)")
    bw.set_ylabel("GB/s, one direction (median)")
    bw.set_title("bandwidth")
    bw.grid(True, which="both", alpha=0.3)
    bw.legend(fontsize=8)

    names, medians, lows, highs, colors, goals = [], [], [], [], [], []
    for bench, variant, label, goal in LATENCY:
        r = next((r for r in rows if r["benchmark"] == bench and r["variant"] == variant and r["bytes"] == 8), None)
        if r is None:
            continue
        names.append(label)
        medians.append(r["median"])
        lows.append(r["median"] - r["p25"])
        highs.append(r["p75"] - r["median"])
        colors.append("tab:red" if bench in GPU_INITIATED else "tab:blue")
        goals.append(goal)
    y = list(range(len(names)))
    lat.barh(y, medians, xerr=[lows, highs], color=colors)
    for i, (m, g) in enumerate(zip(medians, goals)):
        lat.text(m, i, " %.2f" % m, va="center", fontsize=8)
        if g is not None:
            lat.plot([g, g], [i - 0.4, i + 0.4], color="black", linestyle="--")
    lat.set_yticks(y)
    lat.set_yticklabels(names, fontsize=8)
    lat.invert_yaxis()
    lat.set_xscale("log")
    lat.set_xlabel("µs at 8 B (median; dashes: goal)")
    lat.set_title("latency: GPU-initiated (red), CPU-orchestrated (blue)")
    lat.grid(True, axis="x", which="both", alpha=0.3)

    machine = doc.get("machine", {})
    if isinstance(machine, dict):
        where = "%s, %d ranks%s" % (machine.get("gpu_name", "?"), machine.get("ranks", 0),
                                    " SHARING ONE GPU (not NVLink)" if machine.get("shared_gpus") else "")
    else:
        where = str(machine)
    fig.suptitle("haloex-commbench — %s — commit %s — %s" % (where, str(doc.get("commit", "?"))[:12],
                                                            doc.get("date", "")), fontsize=10)
    fig.tight_layout()
    save_png(fig, args.record, args.out, dpi=120)


if __name__ == "__main__":
    main()
