#!/usr/bin/env python3
"""Runs haloex-md side by side and records the results (DESIGN §6 metrics).

Suites (all transports of a suite in one run, results in one JSON file):
  single   1 GPU, sizes 11.25k..720k atoms: us/step without and with search
           steps, CUDA graphs on and off, plus the non-bonded kernel times of
           haloex-bench-nonbonded.
  dd       N ranks (one per GPU): 1-GPU reference, staged, ipc, nccl and every
           nvshmem path (direct, tma, put), sizes 22.5k..720k atoms.
  scaling  strong scaling on 1, 2, 4, 8 GPUs (--rank-counts; default: powers
           of two up to the GPUs visible), every transport and path at each
           rank count, sizes 45k..1440k atoms, rank grid auto; prints the
           paper's points next to ours (45k on 4 GPUs, 180k and 360k on 8).
Writes bench/results/md-<suite>-<gpu>-<date>.json with machine, commit and settings.
--dry-run prints the runs a suite would make and exits.
"""
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def sh(cmd):
    return subprocess.run(cmd, shell=True, capture_output=True, text=True).stdout.strip()


def machine():
    return {
        "host": platform.node(),
        "gpus": sh("nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader").splitlines(),
        "gpu_topology": sh("nvidia-smi topo -m 2>/dev/null | head -5"),
        "cpus": os.cpu_count(),
        "cuda": sh("nvcc --version | tail -1"),
        "mpi": sh("mpirun --version 2>/dev/null | head -1"),
    }


def commit():
    """The git commit; a copy without .git may carry it in .commit."""
    c = sh(f"git -C {ROOT} describe --always --dirty --abbrev=40 2>/dev/null")
    if not c and os.path.exists(os.path.join(ROOT, ".commit")):
        c = open(os.path.join(ROOT, ".commit")).read().strip()
    return c or "unknown"


def md_command(build, ranks, args, json_path):
    cmd = [os.path.join(build, "bin", "haloex-md"), "--quiet", "--json", json_path] + args
    if ranks > 1:
        cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-np", str(ranks)] + cmd
    return cmd


def run_md(build, ranks, args, timeout, dry_run=False):
    if dry_run:
        print(" ".join(md_command(build, ranks, args, "<json>")))
        return {"dry_run": True}
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tmp:
        path = tmp.name
    cmd = md_command(build, ranks, args, path)
    env = dict(os.environ, NVSHMEM_DISABLE_NVLS="1", NCCL_NVLS_ENABLE="0", TORCH_SYMM_MEM_DISABLE_MULTICAST="1")
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


def steps_for(atoms, quick):
    base = 600 if quick else 3000
    return base if atoms <= 180000 else base // 2


def suite_single(a):
    sizes = [11250, 22500, 45000, 90000, 180000, 360000, 720000]
    if a.quick:
        sizes = [22500, 90000, 720000]
    runs = []
    for n in sizes:
        steps = steps_for(n, a.quick)
        for graphs in (1, 0):
            r = run_md(a.build, 1, ["--device", "gpu", "--atoms", str(n), "--steps", str(steps),
                                    "--thermo-every", str(steps), "--cuda-graphs", str(graphs)], a.timeout)
            r["label"] = f"1gpu graphs={graphs}"
            runs.append(r)
            print(f"{n:>8} atoms graphs={graphs}: {r.get('us_per_step', float('nan')):9.1f} us/step "
                  f"({r.get('us_per_step_with_search', float('nan')):9.1f} with search) "
                  f"{r.get('error', '')[:200]}", flush=True)
    kernels = None
    bench = os.path.join(a.build, "bin", "haloex-bench-nonbonded")
    if os.path.exists(bench):
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tmp:
            path = tmp.name
        proc = subprocess.run([bench, "--steps", "100" if a.quick else "300", "--json", path],
                              capture_output=True, text=True, timeout=a.timeout)
        print(proc.stdout[-3000:], flush=True)
        if proc.returncode == 0:
            with open(path) as f:
                kernels = json.load(f)
        os.unlink(path)
    return {"runs": runs, "nonbonded_kernels": kernels}


def parse_variants(text):
    return [tuple((v.split("/") + ["auto"])[:2]) for v in text.split(",") if v]


ALL_VARIANTS = [("staged", "auto"), ("ipc", "auto"), ("nccl", "auto"),
                ("nvshmem", "direct"), ("nvshmem", "tma"), ("nvshmem", "put")]

# The paper's measured points (ns/day, NVSHMEM vs MPI), for the comparison table.
PAPER_POINTS = [(45000, 4, 1649, 1126), (180000, 8, 1249, 973), (360000, 8, 910, 779)]


def visible_gpus():
    return len([line for line in sh("nvidia-smi -L 2>/dev/null").splitlines() if line.startswith("GPU")])


def suite_scaling(a, save=lambda partial: None):
    sizes = [int(n) for n in a.sizes.split(",")] if a.sizes else [45000, 180000, 360000, 720000, 1440000]
    variants = parse_variants(a.variants) if a.variants else ALL_VARIANTS
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
        for ranks in counts:
            for transport, path in variants:
                args = common + ["--transport", transport, "--nvshmem-path", path, "--grid", "auto"] + shared
                r = run_md(a.build, ranks, args, a.timeout, a.dry_run)
                r.update(label=f"{transport}/{path}", ranks=ranks)
                runs.append(r)
                if not a.dry_run:
                    print(f"{n:>8} {ranks} GPUs {transport}/{path:6}: {r.get('ns_per_day', float('nan')):8.0f} "
                          f"ns/day, {r.get('us_per_step', float('nan')):8.1f} us/step {r.get('error', '')[:200]}",
                          flush=True)
        save({"runs": runs, "complete": False})
    if not a.dry_run:
        print_paper_comparison(runs)
    return {"runs": runs, "complete": True, "paper_points": [
        {"atoms": n, "gpus": g, "nvshmem_ns_per_day": nv, "mpi_ns_per_day": mpi} for n, g, nv, mpi in PAPER_POINTS]}


def print_paper_comparison(runs):
    print("\nthe paper's points (GROMACS 2026, NVSHMEM vs MPI) next to ours (best nvshmem path vs best baseline):")
    for n, gpus, nv, mpi in PAPER_POINTS:
        ours = [r for r in runs if r.get("atoms") == n and r.get("ranks") == gpus and "ns_per_day" in r]
        best_nv = max((r["ns_per_day"] for r in ours if r["label"].startswith("nvshmem/")), default=None)
        best_base = max((r["ns_per_day"] for r in ours if not r["label"].startswith("nvshmem/")), default=None)
        mine = "not run" if best_nv is None else f"{best_nv:.0f} vs {best_base or float('nan'):.0f} ns/day"
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
            print(f"{n:>8} 1 GPU: {r.get('us_per_step', float('nan')):9.1f} us/step", flush=True)
        for transport, path in variants:
            args = common + ["--transport", transport, "--nvshmem-path", path, "--grid", a.grid] + shared
            r = run_md(a.build, a.ranks, args, a.timeout, a.dry_run)
            r["label"] = f"{transport}/{path}"
            runs.append(r)
            t = r.get("timing", {})
            if a.dry_run:
                continue
            print(f"{n:>8} {transport}/{path:6}: {r.get('us_per_step', float('nan')):9.1f} us/step, "
                  f"local {t.get('local_us', float('nan')):7.1f} nonlocal {t.get('nonlocal_us', float('nan')):7.1f} "
                  f"non-overlap {t.get('nonoverlap_us', float('nan')):7.1f} {r.get('error', '')[:200]}", flush=True)
        save({"runs": runs, "complete": False})
    return {"runs": runs, "complete": True}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("suite", choices=["single", "dd", "scaling"])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--grid", default="auto")
    p.add_argument("--shared-gpus", action="store_true", help="ranks share GPUs (correctness only, not timings)")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--sizes", help="comma-separated atom counts (dd, scaling), instead of the default series")
    p.add_argument("--variants", help="dd, scaling: comma-separated transport[/path], e.g. nccl,nvshmem/tma")
    p.add_argument("--rank-counts", help="scaling: comma-separated rank counts (one rank per GPU), e.g. 2,4,8")
    p.add_argument("--dry-run", action="store_true", help="print the runs (dd, scaling) instead of making them")
    p.add_argument("--timeout", type=int, default=300)
    p.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    a = p.parse_args()
    record = {"benchmark": f"haloex-md {a.suite}", "date": datetime.datetime.now().isoformat(timespec="seconds"),
              "commit": commit(), "machine": machine(),
              "settings": {"ranks": a.ranks if a.suite == "dd" else 1, "grid": a.grid, "quick": a.quick,
                           "shared_gpus": a.shared_gpus, "rank_counts": a.rank_counts}}
    if a.dry_run:
        if a.suite == "single":
            sys.exit("--dry-run: only the dd and scaling suites")
        (suite_dd if a.suite == "dd" else suite_scaling)(a)
        return 0
    gpu = (record["machine"]["gpus"][0].split(",")[0] if record["machine"]["gpus"] else "cpu").replace(" ", "-")
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, f"md-{a.suite}-{gpu}-{datetime.date.today().isoformat()}.json")

    def save(partial):
        """Rewritten after every size, so a run cut short keeps what it measured."""
        record.update(partial)
        with open(path, "w") as f:
            json.dump(record, f, indent=1)

    suites = {"single": lambda: suite_single(a), "dd": lambda: suite_dd(a, save),
              "scaling": lambda: suite_scaling(a, save)}
    save(suites[a.suite]())
    print(f"wrote {path}")


if __name__ == "__main__":
    sys.exit(main())
