#!/usr/bin/env python3
"""Runs haloex-md side by side and records the results (docs/architecture.md#what-the-timings-mean metrics).

Every figure is end-to-end first: us/step and ns/day over ALL steps (search
steps included, one-time start-up apart), the steady state (steps without
search) beside it, named so, and the mean wall time of a search step.

Suites (all transports of a suite in one run, results in one JSON file):
  single   1 GPU, sizes 5.6k..720k atoms, CUDA graphs on and off, plus the
           non-bonded kernel times of haloex-bench-nonbonded.
  dd       N ranks (one per GPU): 1-GPU reference, staged, ipc, nccl and every
           nvshmem path (direct, tma, put), sizes 22.5k..720k atoms; and the
           ablations that measure CUDA graphs and fusion apart: nccl captured
           in a graph ("nccl/auto graphs=1"), nvshmem direct without graphs
           ("nvshmem/direct graphs=0") and nvshmem direct launched once per
           pulse ("nvshmem/direct per-pulse", with graphs); and nccl-device,
           the same fused kernels over NCCL 2.28's windows.
  nstlist  1 GPU, each size at several fixed nstlist (--nstlists, default
           40,50,80,100,150) and at the automatic choice, at least 20
           searches per run: the data bench/fit_nstlist.py fits the nstlist
           cost model to and checks the automatic choice against.
  scaling  strong scaling on 1, 2, 4, 8 GPUs (--rank-counts; default: powers
           of two up to the GPUs visible), every transport and path at each
           rank count, sizes 45k..1440k atoms, rank grid auto; prints the
           paper's points next to ours (45k on 4 GPUs, 180k and 360k on 8).
  estimate the one-GPU estimate of the multi-rank step (issue 33), never a
           multi-GPU result: ranks sharing one GPU under MPS, each capped to
           --sm-percent of the SMs (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE), at
           11.25k and 22.5k atoms per rank: one rank with N atoms against
           --ranks ranks with ranks x N (nvshmem direct, ipc; --variants),
           --repeats times in alternating order; with --timeline-parts the
           device timeline's parts (forward x, non-local F, reverse f,
           update), whose events sit on the step's critical path. Needs
           the MPS daemon (the device script's stage md-estimate starts it).
Writes bench/results/md-<suite>-<gpu>-<date>.json: the record header of
bench/bench_common.py (schema_version, machine, commit, date, the settings
that change the timing: HALOEX_PDL, CUDA graphs, MPS, binding, the launcher
line) and every run's haloex-md JSON.
Labels: transport/path, then every setting that differs from the series'
convention -- the baselines (staged, ipc, nccl) without CUDA graphs, nvshmem
fused with graphs -- as "graphs=0|1" and "per-pulse"; each run also records
the settings it asked for ("cuda_graphs_requested", "nvshmem_launch"). Ranks > 1 run under the one launcher
line (--mpirun, --mpirun-args). --dry-run prints the runs a suite would make.
Tables: bench/summarize_md.py; plots: bench/plot_md.py, bench/plot_scaling.py.
"""
import argparse
import collections
import datetime
import json
import os
import subprocess
import sys
import tempfile

from bench_common import (MPIRUN, MPIRUN_ARGS, REPO, exit_on_schema_error, fmt, launcher_environment,
                          launcher_prefix, md_figures, record_header, sh)

ROOT = REPO


# The launcher (bench_common's one line; main() takes --mpirun and --mpirun-args into it).
LAUNCHER = {"mpirun": MPIRUN, "mpirun_args": MPIRUN_ARGS}


def md_command(build, ranks, args, json_path):
    """haloex-md under the one launcher line (none for one rank: haloex-md runs one rank without MPI)."""
    prefix = launcher_prefix(ranks, LAUNCHER["mpirun"], LAUNCHER["mpirun_args"], single_process_without_mpirun=True)
    # Each run's log beside its record (a shared md.log would pile up backups).
    log = os.path.splitext(json_path)[0] + ".log" if json_path.endswith(".json") else "none"
    return prefix + [os.path.join(build, "bin", "haloex-md"), "--quiet", "--json", json_path, "--log", log] + args


def run_md(build, ranks, args, timeout, dry_run=False, env=None):
    if dry_run:
        print(" ".join(md_command(build, ranks, args, "<json>")))
        return {"dry_run": True}
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tmp:
        path = tmp.name
    cmd = md_command(build, ranks, args, path)
    env = dict(os.environ, **(env or {}), NVSHMEM_DISABLE_NVLS="1", NCCL_NVLS_ENABLE="0",
               TORCH_SYMM_MEM_DISABLE_MULTICAST="1")
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout} s", "command": " ".join(cmd)}
    result = {"command": " ".join(cmd), "returncode": proc.returncode}
    if proc.returncode == 0 and os.path.exists(path) and os.path.getsize(path) > 0:
        with open(path) as f:
            result.update(json.load(f))
    else:
        result["error"] = (proc.stderr or proc.stdout)[-2000:]
    os.unlink(path)
    return result


def describe(r):
    """A run's figures, end-to-end first: 'X us/step all steps (Y steady, search step Z ms)'; the steady state
    named as such where the run has no all-steps figure (haloex-md before schema 2)."""
    f = md_figures(r)
    if f is None:
        return "no result " + r.get("error", "")[:200].replace("\n", " ")
    if f.end_to_end:
        return (f"{f.us_per_step:9.1f} us/step all steps ({fmt(f.us_per_step_steady)} steady, search step "
                f"{fmt(f.search_step_ms, '.2f')} ms), {fmt(f.ns_per_day, '.0f')} ns/day all steps, start-up "
                f"{fmt(f.startup_seconds, '.2f')} s apart")
    return f"{f.us_per_step_steady:9.1f} us/step steady (this haloex-md writes no all-steps figure)"


def steps_for(atoms, quick):
    base = 600 if quick else 3000
    return base if atoms <= 180000 else base // 2


# One GPU, side by side: the defaults (search on the device, nstlist chosen by
# the cost model, CUDA graphs), the same without graphs, at nstlist 50 (the
# previous default), and at nstlist 50 with the search on the host (the path
# every search step took before the search moved to the device).
SINGLE_VARIANTS = [
    ("1gpu graphs=1", ["--cuda-graphs", "1"]),
    ("1gpu graphs=0", ["--cuda-graphs", "0"]),
    ("1gpu nstlist=50", ["--nstlist", "50"]),
    ("1gpu nstlist=50 search=host", ["--nstlist", "50", "--search", "host"]),
]


def suite_single(a):
    sizes = [5626, 11250, 22500, 45000, 90000, 180000, 360000, 720000]
    if a.quick:
        sizes = [22500, 90000, 720000]
    if a.sizes:
        sizes = [int(n) for n in a.sizes.split(",")]
    runs = []
    for n in sizes:
        steps = steps_for(n, a.quick)
        for label, extra in SINGLE_VARIANTS:
            r = run_md(a.build, 1, ["--device", "gpu", "--atoms", str(n), "--steps", str(steps),
                                    "--thermo-every", str(steps)] + extra, a.timeout)
            r["label"] = label
            runs.append(r)
            print(f"{n:>8} atoms {label}: {describe(r)}", flush=True)
    kernels = None
    bench = os.path.join(a.build, "bin", "haloex-bench-nonbonded")
    if os.path.exists(bench):
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tmp:
            path = tmp.name
        proc = subprocess.run([bench, "--steps", "100" if a.quick else "300", "--json", path],
                              capture_output=True, text=True, timeout=a.timeout, env=launcher_environment())
        print(proc.stdout[-3000:], flush=True)
        if proc.returncode == 0:
            with open(path) as f:
                kernels = json.load(f)
        os.unlink(path)
    return {"runs": runs, "nonbonded_kernels": kernels}


def nstlist_steps(atoms, nstlist, quick):
    """Enough steps for 20 searches (so their mean is not one outlier's), at least the suite's usual count."""
    return max(steps_for(atoms, quick), 20 * nstlist)


def suite_nstlist(a):
    sizes = [22500, 45000, 90000, 180000, 360000, 720000]
    if a.sizes:
        sizes = [int(n) for n in a.sizes.split(",")]
    nstlists = [int(k) for k in (a.nstlists or "40,50,80,100,150").split(",")]
    runs = []
    for n in sizes:
        # The automatic choice (0) beside the fixed ones.
        for k in [0] + nstlists:
            steps = nstlist_steps(n, max(nstlists) if k == 0 else k, a.quick)
            r = run_md(a.build, 1, ["--device", "gpu", "--atoms", str(n), "--steps", str(steps), "--thermo-every",
                                    str(steps), "--nstlist", str(k)], a.timeout)
            r["label"] = "nstlist=auto" if k == 0 else f"nstlist={k}"
            runs.append(r)
            print(f"{n:>8} atoms {r['label']:13}: {describe(r)}", flush=True)
    return {"runs": runs}


class Variant(collections.namedtuple("Variant", "transport path graphs launch sort_atoms fuse_update nstlist")):
    """One multi-rank series: transport, nvshmem path, CUDA graphs (None: the convention, on for nvshmem, off for
    the baselines), the nvshmem launch (fused or per-pulse), whether the home atoms are put in cell order
    (True: --sort-atoms 1, False: --sort-atoms 0, None: haloex-md's auto), whether the home atoms' update is
    fused (--fuse-update, likewise) and the pair list's lifetime (None: haloex-md's automatic choice; N: --nstlist
    N, rlist still from the buffer estimate)."""

    def __new__(cls, transport, path="auto", graphs=None, launch="fused", sort_atoms=None, fuse_update=None,
                nstlist=None):
        return super().__new__(cls, transport, path, graphs, launch, sort_atoms, fuse_update, nstlist)

    @property
    def default_graphs(self):
        return self.transport == "nvshmem"

    @property
    def use_graphs(self):
        return self.default_graphs if self.graphs is None else self.graphs

    @property
    def label(self):
        out = f"{self.transport}/{self.path}"
        if self.use_graphs != self.default_graphs:
            out += f" graphs={int(self.use_graphs)}"
        if self.launch != "fused":
            out += f" {self.launch}"
        if self.sort_atoms is not None:
            out += " sorted" if self.sort_atoms else " unsorted"
        if self.fuse_update is not None:
            out += " fused-update" if self.fuse_update else " unfused-update"
        if self.nstlist is not None:
            out += f" nstlist={self.nstlist}"
        return out

    def args(self):
        out = ["--transport", self.transport, "--nvshmem-path", self.path, "--cuda-graphs", str(int(self.use_graphs))]
        if self.launch != "fused":
            out += ["--nvshmem-launch", self.launch]
        if self.sort_atoms is not None:
            out += ["--sort-atoms", str(int(self.sort_atoms))]
        if self.fuse_update is not None:
            out += ["--fuse-update", str(int(self.fuse_update))]
        if self.nstlist is not None:
            out += ["--nstlist", str(self.nstlist)]
        return out

    def settings(self):
        """What the run record says it asked for."""
        return {"cuda_graphs_requested": self.use_graphs, "nvshmem_launch": self.launch,
                "sort_atoms": self.sort_atoms, "fuse_update": self.fuse_update, "nstlist_requested": self.nstlist}


def parse_variant(text):
    """'transport[/path][+graphs=0|1][+per-pulse][+sorted|unsorted][+fused-update|unfused-update][+nstlist=N]'
    (or the label's spaces instead of '+'), e.g. nccl+graphs=1; sorted: the home atoms in cell order (--sort-atoms
    1; unsorted: 0); fused-update: the home atoms' force sums, leapfrog and next gather in one kernel (--fuse-update
    1; unfused-update: 0); neither word: haloex-md's auto; nstlist=N: --nstlist N."""
    words = text.replace("+", " ").split()
    transport, _, path = words[0].partition("/")
    graphs, launch, sort_atoms, fuse_update, nstlist = None, "fused", None, None, None
    for w in words[1:]:
        if w in ("graphs=0", "graphs=1"):
            graphs = w.endswith("1")
        elif w in ("per-pulse", "fused"):
            launch = w
        elif w in ("sorted", "unsorted"):
            sort_atoms = w == "sorted"
        elif w in ("fused-update", "unfused-update"):
            fuse_update = w == "fused-update"
        elif w.startswith("nstlist=") and w[len("nstlist="):].isdigit() and int(w[len("nstlist="):]) > 0:
            nstlist = int(w[len("nstlist="):])
        else:
            sys.exit(f"--variants: '{w}' in '{text}': use graphs=0, graphs=1, per-pulse, sorted, unsorted, "
                     "fused-update, unfused-update or nstlist=N (N > 0) after transport/path")
    if launch != "fused" and transport != "nvshmem":
        sys.exit(f"--variants '{text}': per-pulse launches exist for nvshmem only")
    return Variant(transport, path or "auto", graphs, launch, sort_atoms, fuse_update, nstlist)


def parse_variants(text):
    return [parse_variant(v) for v in text.split(",") if v.strip()]


# The baselines and every nvshmem path, as they have always been measured.
BASE_VARIANTS = [Variant("staged"), Variant("ipc"), Variant("nccl"),
                 Variant("nvshmem", "direct"), Variant("nvshmem", "tma"), Variant("nvshmem", "put")]
# Graphs and fusion measured apart: the baseline with graphs, nvshmem without
# them, and nvshmem with one kernel launch per pulse (the paper's intermediate
# design) instead of one per exchange.
ABLATION_VARIANTS = [Variant("nccl", graphs=True), Variant("nvshmem", "direct", graphs=False),
                     Variant("nvshmem", "direct", launch="per-pulse")]
# The second GPU-initiated transport: the same fused kernels over NCCL 2.28's
# windows (one process per GPU; it fails with NCCL's reason on shared GPUs).
NCCL_DEVICE_VARIANTS = [Variant("nccl-device")]
# dd's default; scaling runs BASE_VARIANTS unless --variants
ALL_VARIANTS = BASE_VARIANTS + ABLATION_VARIANTS + NCCL_DEVICE_VARIANTS

# The paper's measured points (ns/day as GROMACS reports it: every step), NVSHMEM vs MPI.
PAPER_POINTS = [(45000, 4, 1649, 1126), (180000, 8, 1249, 973), (360000, 8, 910, 779)]


def visible_gpus():
    return len([line for line in sh("nvidia-smi -L 2>/dev/null").splitlines() if line.startswith("GPU")])


def suite_scaling(a, save=lambda partial: None):
    sizes = [int(n) for n in a.sizes.split(",")] if a.sizes else [45000, 180000, 360000, 720000, 1440000]
    variants = parse_variants(a.variants) if a.variants else BASE_VARIANTS
    if a.rank_counts:
        counts = [int(r) for r in a.rank_counts.split(",")]
    else:
        gpus = visible_gpus()
        counts = [r for r in (2, 4, 8) if r <= gpus]
    if not counts:
        sys.exit("scaling: no rank count to run (fewer than 2 GPUs visible; pass --rank-counts)")
    shared = ["--allow-shared-gpus"] if a.shared_gpus else []
    runs = []
    for n in sizes:
        steps = steps_for(n, a.quick)
        common = ["--device", "gpu", "--atoms", str(n), "--steps", str(steps), "--thermo-every", str(steps)]
        r = run_md(a.build, 1, common, a.timeout, a.dry_run)
        r.update(label="1gpu", ranks=1)
        runs.append(r)
        if not a.dry_run:
            print(f"{n:>8} 1 GPU:             {describe(r)}", flush=True)
        for ranks in counts:
            for v in variants:
                args = common + v.args() + ["--grid", "auto"] + shared
                r = run_md(a.build, ranks, args, a.timeout, a.dry_run)
                r.update(label=v.label, ranks=ranks, **v.settings())
                runs.append(r)
                if not a.dry_run:
                    print(f"{n:>8} {ranks} GPUs {v.label:14}: {describe(r)}", flush=True)
        save({"runs": runs, "complete": False})
    if not a.dry_run:
        print_paper_comparison(runs)
    return {"runs": runs, "complete": True, "paper_points": [
        {"atoms": n, "gpus": g, "nvshmem_ns_per_day": nv, "mpi_ns_per_day": mpi, "metric": "all steps (GROMACS)"}
        for n, g, nv, mpi in PAPER_POINTS]}


def best_ns_per_day(runs, nvshmem):
    """The best ns/day of the nvshmem runs (or of the others) and its metric: all steps where every run has it."""
    figs = [(r, md_figures(r)) for r in runs if r["label"].startswith("nvshmem/") == nvshmem]
    figs = [(r, f) for r, f in figs if f is not None]
    if not figs:
        return None, None
    if all(f.end_to_end for _, f in figs):
        return max(f.ns_per_day for _, f in figs), "all steps"
    return max(f.ns_per_day_steady for _, f in figs), "steady state"


def print_paper_comparison(runs):
    print("\nthe paper's points (GROMACS 2026, NVSHMEM vs MPI, ns/day over all steps) next to ours "
          "(best nvshmem path vs best baseline):")
    for n, gpus, nv, mpi in PAPER_POINTS:
        ours = [r for r in runs if r.get("atoms") == n and r.get("ranks") == gpus]
        best_nv, metric = best_ns_per_day(ours, True)
        best_base, metric_base = best_ns_per_day(ours, False)
        if best_nv is None:
            mine = "not run"
        else:
            mine = f"{best_nv:.0f} vs {fmt(best_base, '.0f')} ns/day, {metric}"
            if metric_base and metric_base != metric:
                mine += f" (baseline: {metric_base})"
        print(f"  {n:>7} atoms on {gpus} GPUs: paper {nv} vs {mpi} ns/day ({nv / mpi:.2f}x); here {mine}")


def suite_dd(a, save=lambda partial: None):
    sizes = [22500, 45000, 90000, 180000, 360000, 720000]
    if a.quick:
        sizes = [22500, 90000]
    if a.sizes:
        sizes = [int(n) for n in a.sizes.split(",")]
    variants = parse_variants(a.variants) if a.variants else ALL_VARIANTS
    runs = []
    shared = ["--allow-shared-gpus"] if a.shared_gpus else []
    for n in sizes:
        steps = steps_for(n, a.quick)
        common = ["--device", "gpu", "--atoms", str(n), "--steps", str(steps), "--thermo-every", str(steps)]
        r = run_md(a.build, 1, common, a.timeout, a.dry_run)
        r["label"] = "1gpu"
        runs.append(r)
        if not a.dry_run:
            print(f"{n:>8} 1 GPU:          {describe(r)}", flush=True)
        for v in variants:
            args = common + v.args() + ["--grid", a.grid] + shared + (["--timeline-parts"] if a.timeline_parts else [])
            r = run_md(a.build, a.ranks, args, a.timeout, a.dry_run)
            r.update(label=v.label, **v.settings())
            runs.append(r)
            t = r.get("timing", {})
            if a.dry_run:
                continue
            timeline = (f"; steady timeline: local {fmt(t.get('local_us'))} non-local {fmt(t.get('nonlocal_us'))} "
                        f"non-overlap {fmt(t.get('nonoverlap_us'))} us") if "local_us" in t else ""
            print(f"{n:>8} {v.label:14}: {describe(r)}{timeline}{exchange_kernels(t)}", flush=True)
        save({"runs": runs, "complete": False})
    return {"runs": runs, "complete": True}


def exchange_kernels(timing):
    """'; inside the kernels: forward kernel 6.1, ...' (medians, us) from a run's timing.exchange_kernels, or ''."""
    parts = timing.get("exchange_kernels") or {}
    shown = [(name, parts[name].get("median")) for name in
             ("forward kernel", "forward p0 stores", "forward p0 until received", "reverse kernel",
              "reverse p0 until received", "reverse p0 accumulate") if name in parts]
    return "; inside the kernels: " + ", ".join(f"{name} {fmt(v)}" for name, v in shown) if shown else ""


def suite_estimate(a, save=lambda partial: None):
    """One rank with N atoms against a.ranks ranks with a.ranks * N, all under MPS with the same SM cap."""
    per_rank = [int(n) for n in a.sizes.split(",")] if a.sizes else [11250, 22500]
    variants = parse_variants(a.variants) if a.variants else parse_variants("nvshmem/direct,ipc")
    cap = {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": str(a.sm_percent)}
    steps = 600 if a.quick else 3000
    runs = []
    for n in per_rank:
        for repeat in range(a.repeats):
            one = ("1rank", 1, ["--device", "gpu", "--atoms", str(n)])
            many = [(v.label, a.ranks, ["--device", "gpu", "--atoms", str(n * a.ranks), "--grid", a.grid,
                                        "--allow-shared-gpus"] + v.args()) for v in variants]
            order = [one] + many if repeat % 2 == 0 else many + [one]
            for label, ranks, args in order:
                parts = ["--timeline-parts"] if a.timeline_parts else []
                r = run_md(a.build, ranks, args + ["--steps", str(steps), "--thermo-every", str(steps)] + parts,
                           a.timeout, env=cap)
                r.update(label=label, atoms_per_rank=n, repeat=repeat, sm_percent=a.sm_percent)
                runs.append(r)
                t = r.get("timing", {})
                timeline = ""
                if "local" in t:
                    med = {k: t.get(k, {}).get("median") for k in
                           ("local", "nonlocal", "nonoverlap", "forward", "nonlocal_force", "reverse", "update",
                            "step")}
                    timeline = "; timeline medians " + ", ".join(f"{k} {fmt(v)}" for k, v in med.items() if v is not None)
                print(f"{n:>7}/rank {label:16} (repeat {repeat}): {describe(r)}{timeline}{exchange_kernels(t)}",
                      flush=True)
            save({"runs": runs, "complete": False})
    return {"runs": runs, "complete": True}


def parser():
    p = argparse.ArgumentParser(prog="md_bench.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("suite", choices=["single", "nstlist", "dd", "scaling", "estimate"])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--grid", default="auto")
    p.add_argument("--shared-gpus", action="store_true", help="ranks share GPUs (correctness only, not timings)")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--sizes", help="comma-separated atom counts, instead of the default series")
    p.add_argument("--variants", help="dd, scaling, estimate: comma-separated "
                                      "transport[/path][+graphs=0|1][+per-pulse][+sorted|unsorted][+fused-update|unfused-update][+nstlist=N] "
                                      "(neither sorted word: haloex-md's auto, likewise for the update), e.g. "
                                      "nccl,nccl+graphs=1,nvshmem/tma,nvshmem/direct+per-pulse,nvshmem/direct+sorted,"
                                      "nvshmem/direct+sorted+fused-update "
                                      "(default dd: every path and the ablations; scaling: every path; estimate: "
                                      "nvshmem/direct,ipc)")
    p.add_argument("--nstlists", help="nstlist: comma-separated fixed nstlist values (default 40,50,80,100,150)")
    p.add_argument("--rank-counts", help="scaling: comma-separated rank counts (one rank per GPU), e.g. 2,4,8")
    p.add_argument("--dry-run", action="store_true", help="print the runs (dd, scaling) instead of making them")
    p.add_argument("--timeout", type=int, default=300)
    p.add_argument("--sm-percent", type=int, default=50, help="estimate: each rank's share of the SMs under MPS")
    p.add_argument("--repeats", type=int, default=3, help="estimate: repeats, in alternating order")
    p.add_argument("--timeline-parts", action="store_true",
                   help="dd, estimate: haloex-md --timeline-parts on the multi-rank runs (the non-local path's parts "
                        "and, with nvshmem or nccl-device, the exchange kernels' own; their events sit on the step's "
                        "critical path and may lengthen it: take the totals from a run without)")
    p.add_argument("--mpirun", default=MPIRUN, help="launcher command (default %(default)s)")
    p.add_argument("--mpirun-args", default=MPIRUN_ARGS, help="launcher arguments before -np (default '%(default)s')")
    p.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    return p


def suite_settings(a):
    """The driver's settings in the record (beside bench_common's timing settings)."""
    return {"suite": a.suite, "ranks": a.ranks if a.suite in ("dd", "estimate") else 1, "grid": a.grid,
            "quick": a.quick, "sm_percent": a.sm_percent if a.suite == "estimate" else None,
            "repeats": a.repeats if a.suite == "estimate" else None,
            "timeline_parts": a.timeline_parts if a.suite in ("dd", "estimate") else None,
            "shared_gpus": a.shared_gpus, "rank_counts": a.rank_counts, "sizes": a.sizes, "variants": a.variants,
            "nstlists": a.nstlists,
            "timeout_s": a.timeout, "build": a.build,
            "steps": "3000 (600 with --quick) up to 180 000 atoms, half that above"
                     + ("; nstlist: at least 20 x nstlist" if a.suite == "nstlist" else "")}


def main(argv=None):
    a = parser().parse_args(argv)
    LAUNCHER.update(mpirun=a.mpirun, mpirun_args=a.mpirun_args)
    if a.dry_run:
        if a.suite in ("single", "nstlist"):
            sys.exit("--dry-run: only the dd and scaling suites")
        (suite_dd if a.suite == "dd" else suite_scaling)(a)
        return 0
    one_gpu = a.suite in ("single", "nstlist")
    prefix = [] if one_gpu else launcher_prefix(2, a.mpirun, a.mpirun_args)
    if a.suite in ("dd", "estimate"):
        prefix[-1] = str(a.ranks)
    elif a.suite == "scaling":
        prefix[-1] = "<ranks>"
    graphs = ("on and off (the runs' labels)" if a.suite == "single"
              else "on (the default)" if a.suite == "nstlist"
              else "per run (cuda_graphs_requested): off for the baselines, on for nvshmem, unless the label says "
                   "graphs=0|1; cuda_graphs is what the run used")
    record = {"benchmark": f"haloex-md {a.suite}",
              **record_header(f"bench/md_bench.py {a.suite}", suite_settings(a), prefix, graphs, a.build)}
    if prefix:
        record["settings"]["launcher"] += " (the runs of one rank: no launcher)"
    gpu = (record["machine"]["gpu_model"] or "cpu").replace(" ", "-")
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, f"md-{a.suite}-{gpu}-{datetime.date.today().isoformat()}.json")

    def save(partial):
        """Rewritten after every size, so a run cut short keeps what it measured."""
        record.update(partial)
        with open(path, "w") as f:
            json.dump(record, f, indent=1)

    suites = {"single": lambda: suite_single(a), "nstlist": lambda: suite_nstlist(a), "dd": lambda: suite_dd(a, save),
              "scaling": lambda: suite_scaling(a, save), "estimate": lambda: suite_estimate(a, save)}
    save(exit_on_schema_error(suites[a.suite]))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
