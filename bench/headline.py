#!/usr/bin/env python3
"""The README's figure: is haloex faster? (matplotlib, PNG)

One column per GPU count (1, 2, 4 H200s), each from the newest record for it (SOURCES):
  row 1  µs per step, EVERY step counted (search steps included, start-up apart), over the system's total atoms:
         haloex (nvshmem where there are several GPUs; one GPU has no exchange), the best CPU-orchestrated transport
         measured beside it (staged, ipc, nccl), and GROMACS 2026 from the same allocation; the spread (min-max)
         where a record has >= 3 repeats of a point, else the panel says "one run per point";
  row 2  the ratios, with the goals as lines: GROMACS / haloex (one GPU >= 1.5x, two GPUs >= 1.75x) and best
         CPU-orchestrated / nvshmem (>= 1.5x up to 22 500 atoms per GPU);
  row 3  where a step goes, at two sizes (shares of the all-steps µs/step, written above each bar): the device timeline's local compute and exposed (not overlapped)
         exchange, the rest of the steady step, and the search step amortised over all steps (all - steady).
A series, panel or row without a measurement says "not measured" and names the newest record it looked in.

The PNG carries the sha256 of every record it was drawn from (text chunk "haloex-records", JSON {path: sha256}),
and prints their dates, commits and short checksums under the plot. ctest bench_headline compares them with the
records in the tree: change a record, redraw the figure.

Usage: python3 bench/headline.py [--out PNG]    (default out/plots/headline.png; the README's is FIGURE)
       python3 bench/headline.py --check [PNG]  exit 1 unless PNG (default FIGURE) was drawn from the records as
                                                they are in the tree
"""
import argparse
import hashlib
import json
import os
import struct
import sys
import zlib

from bench_common import PLOT_DIR, REPO, automatic_nstlist, md_figures, pyplot, record_runs, save_png

FIGURE = "docs/figures/headline.png"
METADATA_KEY = "haloex-records"
# The newest record per GPU count (paths from the checkout's root). The one-GPU record is one allocation with both
# codes; the two-GPU one has no GROMACS run; the four-GPU one predates the all-steps figure (schema 1).
SOURCES = {
    1: "bench/results/md-vs-gromacs-1xH200-2026-12-05.json",
    2: "bench/results/md-dd-2xH200-2026-12-01.json",
    4: "bench/results/md-scaling-4xH200-2026-11-29.json",
}
GOAL_VS_GROMACS = {1: 1.5, 2: 1.75}
GOAL_VS_CPU = 1.5
GOAL_VS_CPU_MAX_ATOMS_PER_GPU = 22500
CPU_ORCHESTRATED = ("staged", "ipc", "nccl")
BAR_SIZES = (22500, 720000)
REPEATS_FOR_SPREAD = 3


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def load(rel):
    with open(os.path.join(REPO, rel)) as f:
        return json.load(f)


def _points(values):
    """{atoms: [us...]} -> {atoms: (median, min, max, n)}."""
    out = {}
    for atoms, us in values.items():
        us = sorted(us)
        out[atoms] = (us[len(us) // 2] if len(us) % 2 else (us[len(us) // 2 - 1] + us[len(us) // 2]) / 2,
                      us[0], us[-1], len(us))
    return out


def transport_of(run):
    t = str(run.get("transport") or "")
    return t if t else ("none" if run.get("ranks", 1) == 1 else "?")


def panel(record, gpus):
    """What one column shows, from its record: {"haloex", "cpu", "gromacs": {atoms: (median, min, max, n)},
    "cpu_names": {atoms: transport}, "bars": [(label, {part: us})], "ratios": {"gromacs", "cpu": {atoms: ratio}}}.
    Only all-steps figures count; GROMACS at its automatic nstlist without CUDA graphs, as haloex."""
    series, cpu_all, bars = {}, {}, []
    timed = {}
    for r in record_runs(record):
        f = md_figures(r)
        if f is None or not f.end_to_end or int(r.get("ranks", 1)) != gpus or not r.get("atoms"):
            continue
        if gpus == 1 and not automatic_nstlist(r):
            continue  # the sweep's hand-set nstlist: the series compares automatic settings
        t = transport_of(r)
        if gpus == 1 or t == "nvshmem":
            series.setdefault(r["atoms"], []).append(f.us_per_step)
            timed.setdefault(r["atoms"], (r, f))
        elif t in CPU_ORCHESTRATED:
            cpu_all.setdefault(r["atoms"], {}).setdefault(t, []).append(f.us_per_step)
            timed.setdefault((t, r["atoms"]), (r, f))
    haloex = _points(series)
    cpu, cpu_names = {}, {}
    for atoms, by in cpu_all.items():
        best = min(by, key=lambda t: _points({0: by[t]})[0][0])
        cpu[atoms] = _points({0: by[best]})[0]
        cpu_names[atoms] = best
    gromacs = _points({g["atoms"]: [g["us_per_step"]] for g in record.get("gromacs_runs", [])
                       if str(g.get("nstlist_requested", "auto")) == "auto" and not g.get("cuda_graph_requested")
                       and isinstance(g.get("us_per_step"), (int, float))})
    for atoms in BAR_SIZES:
        for key, name in ((atoms, "haloex" if gpus == 1 else "nvshmem"),) + tuple(
                ((t, atoms), t) for t in CPU_ORCHESTRATED):
            if key not in timed:
                continue
            r, f = timed[key]
            timing = r.get("timing") or {}
            steady, search = f.us_per_step_steady, f.us_per_step - f.us_per_step_steady
            if gpus > 1 and "local_us" in timing and "nonoverlap_us" in timing:
                local, exposed = timing["local_us"], timing["nonoverlap_us"]
                parts = {"local compute": local, "exposed exchange": exposed,
                         "rest of the steady step": max(steady - local - exposed, 0.0), "search, per step": search}
            else:
                parts = {"steady step (one GPU: no exchange)" if gpus == 1 else "steady step": steady,
                         "search, per step": search}
            bars.append((f"{name}\n{atoms:,}", parts))
    ratios = {
        "gromacs": {a: gromacs[a][0] / haloex[a][0] for a in haloex if a in gromacs},
        "cpu": {a: cpu[a][0] / haloex[a][0] for a in haloex if a in cpu},
    }
    return {"haloex": haloex, "cpu": cpu, "cpu_names": cpu_names, "gromacs": gromacs, "bars": bars,
            "ratios": ratios}


def describe(record, rel):
    return f"{os.path.basename(rel)} ({str(record.get('date', '?'))[:10]}, commit {str(record.get('commit', '?'))[:7]})"


def sources_metadata(sources=None):
    """{path: sha256} of the records a figure is drawn from."""
    return {rel: sha256(os.path.join(REPO, rel)) for rel in (sources or SOURCES).values()}


# ---- reading the checksums back (no matplotlib) ---------------------------------------------------------------------

def png_text(path):
    """The text chunks (tEXt, zTXt, iTXt) of a PNG, {key: text}."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path}: not a PNG")
    out, i = {}, 8
    while i + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[i:i + 8])
        body = data[i + 8:i + 8 + length]
        i += 12 + length
        if kind == b"tEXt":
            key, _, text = body.partition(b"\0")
            out[key.decode("latin-1")] = text.decode("latin-1")
        elif kind == b"zTXt":
            key, _, rest = body.partition(b"\0")
            out[key.decode("latin-1")] = zlib.decompress(rest[1:]).decode("latin-1")
        elif kind == b"iTXt":
            key, _, rest = body.partition(b"\0")
            compressed, rest = rest[0], rest[2:]
            _, _, rest = rest.partition(b"\0")  # language tag
            _, _, text = rest.partition(b"\0")  # translated keyword
            out[key.decode("utf-8")] = (zlib.decompress(text) if compressed else text).decode("utf-8")
        elif kind == b"IEND":
            break
    return out


def check(png, root=REPO):
    """Problems (strings) where the figure's recorded checksums differ from the records in the tree under root, or
    from SOURCES."""
    try:
        recorded = json.loads(png_text(png)[METADATA_KEY])
    except (OSError, ValueError, KeyError) as e:
        return [f"{png}: no record checksums ({type(e).__name__}: {e})"]
    redraw = f"redraw it: python3 bench headline --out {os.path.relpath(png, root)}"
    problems = []
    if set(recorded) != set(SOURCES.values()):
        problems.append(f"{png} was drawn from {sorted(recorded)}, bench/headline.py now uses "
                        f"{sorted(SOURCES.values())}: {redraw}")
    for rel, digest in recorded.items():
        path = os.path.join(root, rel)
        if not os.path.exists(path):
            problems.append(f"{png}: its record {rel} is not in the tree: {redraw}")
        elif sha256(path) != digest:
            problems.append(f"{png}: {rel} changed since the figure was drawn (sha256 {digest[:12]} in the figure, "
                            f"{sha256(path)[:12]} now): {redraw}")
    return problems


# ---- drawing ---------------------------------------------------------------------------------------------------------

def _series(ax, pts, **style):
    atoms = sorted(pts)
    ax.plot(atoms, [pts[a][0] for a in atoms], **style)
    spread = [a for a in atoms if pts[a][3] >= REPEATS_FOR_SPREAD]
    if spread:
        ax.errorbar(spread, [pts[a][0] for a in spread], yerr=[[pts[a][0] - pts[a][1] for a in spread],
                                                                [pts[a][2] - pts[a][0] for a in spread]],
                    fmt="none", color=style.get("color"), capsize=3)


def _note(ax, text):
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", fontsize=8, wrap=True,
            bbox={"boxstyle": "round", "facecolor": "whitesmoke", "edgecolor": "grey"})
    ax.set_xticks([])
    ax.set_yticks([])


def draw(out=None):
    records = {g: load(rel) for g, rel in SOURCES.items()}
    panels = {g: panel(records[g], g) for g in SOURCES}
    plt = pyplot()
    cols = len(SOURCES)
    fig, axes = plt.subplots(3, cols, figsize=(5.4 * cols, 12.5), gridspec_kw={"height_ratios": [3, 2, 2.4]})
    for col, (gpus, p) in enumerate(panels.items()):
        rec, rel = records[gpus], SOURCES[gpus]
        ax_us, ax_ratio, ax_bar = axes[0][col], axes[1][col], axes[2][col]
        where = describe(rec, rel)
        title = f"{gpus} H200{'s' if gpus > 1 else ''}\n{where}"
        if not p["haloex"]:
            _note(ax_us, f"not measured: no all-steps figure\non {gpus} GPUs. The newest record,\n"
                         f"{os.path.basename(rel)},\nis schema {rec.get('schema_version', 1)}: steady state only")
            ax_us.set_title(title, fontsize=9)
            for ax in (ax_ratio, ax_bar):
                _note(ax, "not measured")
            continue
        repeats = max(v[3] for v in p["haloex"].values())
        haloex_label = "haloex (one GPU, no exchange)" if gpus == 1 else "haloex nvshmem"
        _series(ax_us, p["haloex"], marker="o", color="tab:red", label=haloex_label)
        if p["cpu"]:
            names = sorted(set(p["cpu_names"].values()))
            _series(ax_us, p["cpu"], marker="s", color="tab:blue",
                    label=f"best CPU-orchestrated measured ({', '.join(names)})")
        if p["gromacs"]:
            _series(ax_us, p["gromacs"], marker="^", color="black", linestyle="--",
                    label="GROMACS 2026.3, same allocation")
        missing = []
        if gpus > 1 and not p["cpu"]:
            missing.append("CPU-orchestrated transports: not measured")
        elif gpus > 1:
            missing.append(f"CPU-orchestrated: only {', '.join(sorted(set(p['cpu_names'].values())))}, at "
                           f"{', '.join(f'{a:,}' for a in sorted(p['cpu']))} atoms")
        if not p["gromacs"]:
            missing.append("GROMACS: not measured in this allocation")
        missing.append("one run per point" if repeats < REPEATS_FOR_SPREAD else f"spread: min-max of {repeats} runs")
        ax_us.text(0.02, 0.98, "\n".join(missing), transform=ax_us.transAxes, va="top", fontsize=7, color="dimgrey")
        ax_us.set(xscale="log", yscale="log", xlabel="atoms (total)", ylabel="µs per step, every step counted")
        ax_us.set_title(title, fontsize=9)
        ax_us.legend(fontsize=7, loc="lower right")
        # Ratios and goals.
        drawn = False
        if p["ratios"]["gromacs"]:
            r = p["ratios"]["gromacs"]
            ax_ratio.plot(sorted(r), [r[a] for a in sorted(r)], marker="^", color="black", label="GROMACS / haloex")
            ax_ratio.axhline(GOAL_VS_GROMACS[gpus], color="black", linestyle=":", linewidth=1,
                             label=f"goal vs GROMACS: {GOAL_VS_GROMACS[gpus]}x")
            drawn = True
        if p["ratios"]["cpu"]:
            r = p["ratios"]["cpu"]
            ax_ratio.plot(sorted(r), [r[a] for a in sorted(r)], marker="s", color="tab:blue",
                          label="best CPU-orchestrated / nvshmem")
            ax_ratio.axhline(GOAL_VS_CPU, color="tab:blue", linestyle=":", linewidth=1,
                             label=f"goal: {GOAL_VS_CPU}x up to {GOAL_VS_CPU_MAX_ATOMS_PER_GPU:,} atoms per GPU")
            drawn = True
        if drawn:
            ax_ratio.axhline(1.0, color="grey", linewidth=0.8)
            ax_ratio.set(xscale="log", xlim=ax_us.get_xlim(), xlabel="atoms (total)",
                         ylabel="ratio of µs/step (above 1: haloex faster)")
            ax_ratio.legend(fontsize=7, loc="upper right")
            if gpus > 1 and not p["ratios"]["gromacs"]:
                ax_ratio.text(0.02, 0.03, f"vs GROMACS on {gpus} GPUs: not measured", transform=ax_ratio.transAxes,
                              va="bottom", fontsize=7, color="dimgrey")
        else:
            _note(ax_ratio, "no ratio: nothing measured beside haloex")
        # Where a step goes.
        if p["bars"]:
            parts = list(dict.fromkeys(k for _, b in p["bars"] for k in b))
            colors = {"local compute": "tab:green", "exposed exchange": "tab:red",
                      "rest of the steady step": "silver", "search, per step": "tab:orange",
                      "steady step (one GPU: no exchange)": "tab:green", "steady step": "tab:green"}
            totals = [sum(b.values()) for _, b in p["bars"]]
            bottom = [0.0] * len(p["bars"])
            for part in parts:
                vals = [100.0 * b.get(part, 0.0) / t for (_, b), t in zip(p["bars"], totals)]
                ax_bar.bar(range(len(vals)), vals, bottom=bottom, color=colors.get(part), label=part)
                bottom = [x + v for x, v in zip(bottom, vals)]
            for i, t in enumerate(totals):
                ax_bar.text(i, 101, f"{t:.1f} µs", ha="center", va="bottom", fontsize=7)
            ax_bar.set_xticks(range(len(p["bars"])))
            ax_bar.set_xticklabels([name for name, _ in p["bars"]], fontsize=7)
            ax_bar.set(ylim=(0, 135), ylabel="share of a step, all steps counted (%)")
            ax_bar.legend(fontsize=6.5, loc="upper center", ncol=2)
        else:
            _note(ax_bar, "no step breakdown in this record")
        for ax in (ax_us, ax_ratio):
            ax.grid(True, which="both", alpha=0.3)
            ax.xaxis.set_minor_formatter(plt.NullFormatter())
    digests = sources_metadata()
    fig.suptitle("haloex-md: µs per step, every step counted (search steps included, start-up apart), against the "
                 "system's total atoms\nrow 2: ratios against the goals; row 3: where a step goes", fontsize=10)
    fig.text(0.01, 0.005, "records (sha256): " + "; ".join(
        f"{describe(records[g], rel)} {digests[rel][:12]}" for g, rel in SOURCES.items()), fontsize=6.5,
        color="dimgrey")
    fig.tight_layout(rect=(0, 0.015, 1, 0.97))
    return save_png(fig, os.path.join(PLOT_DIR, "headline.json"), out, dpi=100,
                    metadata={METADATA_KEY: json.dumps(digests, sort_keys=True)})


def main(argv=None):
    p = argparse.ArgumentParser(prog="headline.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", help=f"PNG file (default {os.path.relpath(PLOT_DIR, REPO)}/headline.png; the README's "
                                 f"figure is {FIGURE})")
    p.add_argument("--check", nargs="?", const=os.path.join(REPO, FIGURE), metavar="PNG",
                   help=f"check PNG's record checksums against the tree (default {FIGURE})")
    a = p.parse_args(argv)
    if a.check:
        problems = check(a.check)
        print("\n".join(problems) or f"{a.check}: drawn from the records as they are in the tree")
        return 1 if problems else 0
    draw(a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
