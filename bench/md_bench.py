#!/usr/bin/env python3
"""Runs haloex-md side by side and records the results (DESIGN §6 metrics).

Suites (all transports of a suite in one run, results in one JSON file):
  single   1 GPU, sizes 11.25k..720k atoms: us/step without and with search
           steps, CUDA graphs on and off, plus the non-bonded kernel times of
           haloex-bench-nonbonded.
  dd       N ranks (one per GPU): 1-GPU reference, staged, ipc, nccl and every
           nvshmem path (direct, tma, put), sizes 22.5k..720k atoms.
Writes bench/results/md-<suite>-<gpu>-<date>.json with machine, commit and settings.
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


def run_md(build, ranks, args, timeout):
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tmp:
        path = tmp.name
    cmd = [os.path.join(build, "bin", "haloex-md"), "--quiet", "--json", path] + args
    if ranks > 1:
        cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-np", str(ranks)] + cmd
    env = dict(os.environ, NVSHMEM_DISABLE_NVLS="1", NCCL_NVLS_ENABLE="0")
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


def suite_dd(a, save=lambda partial: None):
    sizes = [22500, 45000, 90000, 180000, 360000, 720000]
    if a.quick:
        sizes = [22500, 90000]
    if a.sizes:
        sizes = [int(n) for n in a.sizes.split(",")]
    variants = [("staged", "auto"), ("ipc", "auto"), ("nccl", "auto"),
                ("nvshmem", "direct"), ("nvshmem", "tma"), ("nvshmem", "put")]
    if a.variants:
        variants = [tuple((v.split("/") + ["auto"])[:2]) for v in a.variants.split(",")]
    runs = []
    shared = ["--allow-shared-gpus"] if a.shared_gpus else []
    for n in sizes:
        steps = steps_for(n, a.quick)
        common = ["--device", "gpu", "--atoms", str(n), "--steps", str(steps), "--thermo-every", str(steps)]
        r = run_md(a.build, 1, common, a.timeout)
        r["label"] = "1gpu"
        runs.append(r)
        print(f"{n:>8} 1 GPU: {r.get('us_per_step', float('nan')):9.1f} us/step", flush=True)
        for transport, path in variants:
            args = common + ["--transport", transport, "--nvshmem-path", path, "--grid", a.grid] + shared
            r = run_md(a.build, a.ranks, args, a.timeout)
            r["label"] = f"{transport}/{path}"
            runs.append(r)
            t = r.get("timing", {})
            print(f"{n:>8} {transport}/{path:6}: {r.get('us_per_step', float('nan')):9.1f} us/step, "
                  f"local {t.get('local_us', float('nan')):7.1f} nonlocal {t.get('nonlocal_us', float('nan')):7.1f} "
                  f"non-overlap {t.get('nonoverlap_us', float('nan')):7.1f} {r.get('error', '')[:200]}", flush=True)
        save({"runs": runs, "complete": False})
    return {"runs": runs, "complete": True}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("suite", choices=["single", "dd"])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--grid", default="auto")
    p.add_argument("--shared-gpus", action="store_true", help="ranks share GPUs (correctness only, not timings)")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--sizes", help="comma-separated atom counts (dd suite), instead of the default series")
    p.add_argument("--variants", help="dd suite: comma-separated transport[/path], e.g. nccl,nvshmem/tma")
    p.add_argument("--timeout", type=int, default=300)
    p.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    a = p.parse_args()
    record = {"benchmark": f"haloex-md {a.suite}", "date": datetime.datetime.now().isoformat(timespec="seconds"),
              "commit": commit(), "machine": machine(),
              "settings": {"ranks": a.ranks if a.suite == "dd" else 1, "grid": a.grid, "quick": a.quick,
                           "shared_gpus": a.shared_gpus}}
    gpu = (record["machine"]["gpus"][0].split(",")[0] if record["machine"]["gpus"] else "cpu").replace(" ", "-")
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, f"md-{a.suite}-{gpu}-{datetime.date.today().isoformat()}.json")

    def save(partial):
        """Rewritten after every size, so a run cut short keeps what it measured."""
        record.update(partial)
        with open(path, "w") as f:
            json.dump(record, f, indent=1)

    save(suite_single(a) if a.suite == "single" else suite_dd(a, save))
    print(f"wrote {path}")


if __name__ == "__main__":
    sys.exit(main())
