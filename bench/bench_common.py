"""What the benchmark drivers share.

* Python dependencies: bench/requirements.txt, found in <checkout>/.deps/python
  (the project's environment, as scripts/setup.sh uses for NVSHMEM) before the
  interpreter's site-packages; installed there when missing and a registry (or
  carried wheels in <checkout>/.whl) is reachable.
* The one launcher: `mpirun <MPIRUN_ARGS> -np N` (launcher_prefix) and the
  environment every launched program gets (launcher_environment).
* The one record header (record_header): schema_version, tool, date, commit,
  machine (host, GPUs, driver, CUDA, NCCL, NVSHMEM, MPI) and the settings that
  change the timing (HALOEX_PDL, CUDA graphs, MPS, binding, launcher line, the
  HALOEX_/NCCL_/NVSHMEM_/CUDA_ environment).
* The readers' side: check_record refuses records of a newer schema, and
  md_figures gives a haloex-md run's figures by name, end-to-end first, for
  schema 1 and 2 alike.
* The plot scripts' command line, matplotlib and PNG output (out/plots unless
  --out says otherwise: never over a committed PNG).
"""
import argparse
import datetime
import glob
import json
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(REPO, "bench")
DEPS_PYTHON = os.path.join(REPO, ".deps", "python")
REQUIREMENTS = os.path.join(BENCH, "requirements.txt")
WHEELS = os.path.join(REPO, ".whl")

# Plots go here unless --out names a file: never beside a committed record,
# whose PNG they would overwrite.
PLOT_DIR = os.environ.get("HALOEX_BENCH_OUT") or os.path.join(REPO, "out", "plots")


def use_project_environment(path=None):
    """Puts the project's Python environment (.deps/python) on sys.path BEFORE the interpreter's site and
    dist-packages, after the script's folder, the standard library and PYTHONPATH: what bench/requirements.txt
    installed there must win over a system copy (Debian's python3-numpy is too old for the matplotlib pip installs
    beside it). An entry already on the path is moved."""
    path = DEPS_PYTHON if path is None else path
    if not os.path.isdir(path):
        return False
    if path in sys.path:
        sys.path.remove(path)
    site_dirs = [i for i, p in enumerate(sys.path) if os.path.basename(p.rstrip(os.sep)) in ("site-packages",
                                                                                             "dist-packages")]
    sys.path.insert(site_dirs[0] if site_dirs else len(sys.path), path)
    return True


use_project_environment()

# ---- schema ------------------------------------------------------------------------------------------------------

# Records written by the bench/ drivers (the wrapper: header + runs).
SCHEMA_VERSION = 2
# haloex-md's own JSON (proxies/md/src/report.cpp, kSummarySchemaVersion), one per run.
MD_SCHEMA_VERSION = 2

SCHEMA_NOTES = {
    1: ("schema 1 (written before records carried a schema_version). haloex-md figures: us_per_step and ns_per_day "
        "are the STEADY state (search steps excluded); us_per_step_with_search counts every step but also folds "
        "one-time start-up (NVSHMEM initialisation, first allocations) into the search time, so it is not an "
        "end-to-end figure; search_phases_ms are totals over the run. The settings that change the timing "
        "(HALOEX_PDL, MPS, binding) were not recorded unless the command lines show them."),
    2: ("schema 2. haloex-md figures: us_per_step and ns_per_day count EVERY step (search steps included, one-time "
        "start-up apart in startup_seconds); us_per_step_steady and ns_per_day_steady exclude the search steps; "
        "search_step_ms is the mean wall time of one search step, search_phases_ms its parts (means per search "
        "step). The header (machine, commit, date, settings) comes from bench/bench_common.py."),
}

METRIC_ALL = "all steps"
METRIC_STEADY = "steady state (search steps excluded)"
METRIC_STEADY_SCHEMA1 = "steady state (schema-1 record: search steps excluded, no all-steps figure)"
# Short names for plot axes; the long ones go in the figure's title or note.
METRIC_SHORT = {METRIC_ALL: "all steps", METRIC_STEADY: "steady state", METRIC_STEADY_SCHEMA1: "steady state (schema 1)"}


class SchemaError(Exception):
    """A record this reader must not interpret (newer schema, or no version it knows)."""


def schema_version(record, where="record", newest=SCHEMA_VERSION):
    """The record's schema version (1 when it has none: it predates versions); SchemaError for a version newer
    than `newest` or one that is not a positive integer."""
    v = record.get("schema_version", 1) if isinstance(record, dict) else 1
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise SchemaError(f"{where}: schema_version {v!r} is not a positive integer")
    if v > newest:
        raise SchemaError(f"{where}: schema_version {v} is newer than this reader understands (up to {newest}); "
                          f"update bench/ (a checkout that knows schema {v}) before reading it")
    return v


def check_record(record, where="record"):
    """Refuses a record (or any haloex-md run inside it) of a schema newer than these readers; returns its version."""
    own = isinstance(record, dict) and record.get("program") == "haloex-md"
    v = schema_version(record, where, MD_SCHEMA_VERSION if own else SCHEMA_VERSION)
    for i, run in enumerate(record.get("runs", []) if isinstance(record, dict) else []):
        if isinstance(run, dict):
            schema_version(run, f"{where}, run {i}", MD_SCHEMA_VERSION)
    return v


def load_record(path):
    """A JSON record, checked (SchemaError for a newer schema)."""
    with open(path) as f:
        record = json.load(f)
    check_record(record, path)
    return record


def exit_on_schema_error(fn):
    """Runs fn(); a SchemaError ends the program with its message (exit status 2)."""
    try:
        return fn()
    except SchemaError as e:
        sys.exit(f"error: {e}")


class MdFigures:
    """A haloex-md run's timing figures by name, whatever its schema.

    us_per_step / ns_per_day: every step (end-to-end; start-up apart), None for a schema-1 run (it has no honest
    all-steps figure: its us_per_step_with_search includes start-up). *_steady: the steps without search.
    search_step_ms: mean wall time of a search step (schema 2). headline(): the end-to-end figure where there is
    one, else the steady state, with the metric's name."""

    def __init__(self, schema, us_per_step, ns_per_day, us_per_step_steady, ns_per_day_steady, search_step_ms=None,
                 startup_seconds=None):
        self.schema = schema
        self.us_per_step = us_per_step
        self.ns_per_day = ns_per_day
        self.us_per_step_steady = us_per_step_steady
        self.ns_per_day_steady = ns_per_day_steady
        self.search_step_ms = search_step_ms
        self.startup_seconds = startup_seconds

    @property
    def end_to_end(self):
        return self.us_per_step is not None

    def headline(self):
        """(us/step, ns/day, metric name): all steps where measured, else the steady state (named so)."""
        if self.end_to_end:
            return self.us_per_step, self.ns_per_day, METRIC_ALL
        return self.us_per_step_steady, self.ns_per_day_steady, (
            METRIC_STEADY_SCHEMA1 if self.schema == 1 else METRIC_STEADY)

    def __repr__(self):
        return (f"MdFigures(schema={self.schema}, us_per_step={self.us_per_step}, "
                f"us_per_step_steady={self.us_per_step_steady}, search_step_ms={self.search_step_ms})")


def _number(x):
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def md_figures(run, where="run"):
    """MdFigures of one haloex-md run (its own JSON, or a run inside a bench record); None for a run without
    timings (failed, skipped, dry run). SchemaError for a run newer than MD_SCHEMA_VERSION."""
    if not isinstance(run, dict):
        return None
    v = schema_version(run, where, MD_SCHEMA_VERSION)
    if v == 1:
        if _number(run.get("us_per_step")) is None:
            return None
        return MdFigures(1, None, None, _number(run.get("us_per_step")), _number(run.get("ns_per_day")))
    if _number(run.get("us_per_step")) is None and _number(run.get("us_per_step_steady")) is None:
        return None
    return MdFigures(v, _number(run.get("us_per_step")), _number(run.get("ns_per_day")),
                     _number(run.get("us_per_step_steady")), _number(run.get("ns_per_day_steady")),
                     _number(run.get("search_step_ms")), _number(run.get("startup_seconds")))


def automatic_nstlist(run):
    """Whether a haloex-md run chose its own nstlist: the record's request where it kept one (raw_log_record.py),
    else haloex-md's own reason (a set one reads "set by ...")."""
    settings = run.get("settings", {})
    if "nstlist_requested" in settings:
        return str(settings["nstlist_requested"]) == "auto"
    return not str(settings.get("nstlist_reason", "")).startswith("set by")


def record_runs(record):
    """A record's runs (dicts). A run a record took from a summary line (from_summary_line: its JSON did not come
    back) has no schema_version of its own: it inherits the record's, whose schema_note says what its figures mean."""
    out = []
    for r in record.get("runs", []) if isinstance(record, dict) else []:
        if isinstance(r, dict) and "schema_version" not in r and r.get("from_summary_line"):
            r = dict(r, schema_version=record.get("schema_version", 1))
        if isinstance(r, dict):
            out.append(r)
    return out


def record_headline_metric(runs):
    """The metric a table or plot of these runs leads with: METRIC_ALL when every run with figures has the
    end-to-end figure, else the steady state named for the oldest schema among them. (figures by id(run), name)"""
    figs = {id(r): md_figures(r, f"run {i}") for i, r in enumerate(runs)}
    have = [f for f in figs.values() if f is not None]
    if have and all(f.end_to_end for f in have):
        return figs, METRIC_ALL
    return figs, METRIC_STEADY_SCHEMA1 if any(f.schema == 1 for f in have) else METRIC_STEADY


def fmt(x, spec=".1f", missing="n/a"):
    """A number for a table, or `missing` where there is none."""
    return missing if x is None else format(x, spec)


# ---- the header: machine, commit, date, settings ---------------------------------------------------------------

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def sh(cmd, timeout=20):
    """stdout of a shell command, stripped; '' when it fails or is missing."""
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=timeout).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def commit():
    """The git commit of this checkout; a copy without .git may carry it in .commit (scripts/device/pack.sh)."""
    c = sh(f"git -C {shlex.quote(REPO)} describe --always --dirty --abbrev=40 2>/dev/null")
    if not c and os.path.exists(os.path.join(REPO, ".commit")):
        with open(os.path.join(REPO, ".commit")) as f:
            c = f.read().strip()
    return c or "unknown"


def now_utc():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_gpu_csv(text):
    """nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader lines -> [{name, memory, driver}]."""
    gpus = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 3 and parts[0]:
            gpus.append({"name": parts[0], "memory": parts[1], "driver": parts[2]})
    return gpus


def nccl_version_from_code(code):
    """NCCL_VERSION_CODE (22803) -> '2.28.3' (codes of NCCL >= 2.9: major*10000 + minor*100 + patch)."""
    code = int(code)
    if code >= 10000:
        return f"{code // 10000}.{code // 100 % 100}.{code % 100}"
    return f"{code // 1000}.{code // 100 % 10}.{code % 100}"


def header_version(path, names):
    """'X.Y.Z' from the #defines names (major, minor, patch) of a header, or None."""
    try:
        with open(path, errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    parts = []
    for name in names:
        m = re.search(r"#define\s+" + name + r"\s+(\d+)", text)
        if not m:
            return None
        parts.append(m.group(1))
    return ".".join(parts)


def _package_version(names):
    try:
        from importlib import metadata
    except ImportError:  # pragma: no cover (Python < 3.8)
        return None, None
    for name in names:
        try:
            return metadata.version(name), f"Python package {name}"
        except Exception:  # noqa: BLE001 (PackageNotFoundError, or a broken dist-info)
            continue
    return None, None


def _cmake_cache(build):
    """The CMake cache of `build`, else of this checkout's newest build*/ ({} when there is none)."""
    values = {}
    if not build:
        caches = sorted(glob.glob(os.path.join(REPO, "build*", "CMakeCache.txt")), key=os.path.getmtime)
        build = os.path.dirname(caches[-1]) if caches else None
    path = os.path.join(build, "CMakeCache.txt") if build else None
    if path and os.path.exists(path):
        with open(path, errors="replace") as f:
            for line in f:
                m = re.match(r"([A-Za-z_][A-Za-z0-9_]*):[A-Z]+=(.*)", line.strip())
                if m:
                    values[m.group(1)] = m.group(2)
    return values


def library_versions(build=None):
    """NCCL and NVSHMEM: the headers the build used (its CMakeCache), else the Python packages nvidia.nccl /
    nvidia.nvshmem, else the usual header places. {name: {version, source}} ({version: None} when not found)."""
    cache = _cmake_cache(build)
    out = {}
    libs = {
        "nccl": (["NCCL_MAJOR", "NCCL_MINOR", "NCCL_PATCH"], "nccl.h", "NCCL_INCLUDE_DIR",
                 ["nvidia-nccl-cu13", "nvidia-nccl-cu12", "nvidia-nccl-cu11"],
                 [os.path.join(DEPS_PYTHON, "nvidia", "nccl", "include"), "/usr/local/cuda/include",
                  "/usr/include", "/usr/local/include"]),
        "nvshmem": (["NVSHMEM_VENDOR_MAJOR_VERSION", "NVSHMEM_VENDOR_MINOR_VERSION", "NVSHMEM_VENDOR_PATCH_VERSION"],
                    os.path.join("non_abi", "nvshmem_version.h"), "NVSHMEM_INCLUDE_DIR",
                    ["nvidia-nvshmem-cu13", "nvidia-nvshmem-cu12"],
                    [os.path.join(DEPS_PYTHON, "nvidia", "nvshmem", "include"),
                     os.path.join(os.environ.get("NVSHMEM_HOME", "/nonexistent"), "include"),
                     "/usr/include/nvshmem", "/usr/local/include"]),
    }
    for name, (defines, header, cache_key, packages, dirs) in libs.items():
        found = None
        inc = cache.get(cache_key, "")
        if inc and not inc.endswith("NOTFOUND"):
            v = header_version(os.path.join(inc, header), defines)
            if v:
                found = {"version": v, "source": os.path.join(inc, header) + " (the build's)"}
        if not found:
            v, src = _package_version(packages)
            if v:
                found = {"version": v, "source": src}
        if not found:
            for d in dirs:
                v = header_version(os.path.join(d, header), defines)
                if v:
                    found = {"version": v, "source": os.path.join(d, header)}
                    break
        out[name] = found or {"version": None, "source": "not found"}
    return out


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def machine(build=None):
    """Where the run happened: host, GPUs (model, memory, driver) and their topology, CPUs, CUDA, NCCL, NVSHMEM,
    MPI and Python versions. GPU fields are None (and gpus empty) where nvidia-smi finds none."""
    gpus = parse_gpu_csv(sh("nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader"))
    models = sorted({g["name"] for g in gpus})
    topology = ANSI.sub("", sh("nvidia-smi topo -m 2>/dev/null"))
    topology = topology.split("\nLegend:")[0].strip()
    libs = library_versions(build)
    return {
        "host": platform.node(),
        "gpu_model": (models[0] if len(models) == 1 else "mixed: " + ", ".join(models)) if models else None,
        "gpu_count": len(gpus),
        "gpu_memory": gpus[0]["memory"] if gpus else None,
        "driver": gpus[0]["driver"] if gpus else None,
        "gpus": gpus,
        "gpu_topology": topology or None,
        "cpus": os.cpu_count(),
        "cpu_model": cpu_model(),
        "cuda": sh("nvcc --version 2>/dev/null | tail -1") or None,
        "nccl": libs["nccl"]["version"],
        "nvshmem": libs["nvshmem"]["version"],
        "library_sources": {k: v["source"] for k, v in libs.items()},
        "mpi": sh("mpirun --version 2>/dev/null | head -1") or None,
        "python": platform.python_version(),
        "os": platform.platform(),
    }


def cuda_version(text):
    """'13.0' from nvcc's 'Build cuda_13.0.r13.0/compiler...' or 'release 13.0, V13.0.48'; else the text."""
    m = re.search(r"release (\d+\.\d+)|cuda_(\d+\.\d+)", str(text))
    return (m.group(1) or m.group(2)) if m else str(text)


def machine_summary(record):
    """One line naming the machine of any record (schema 1 or 2: dict, string, or unknown)."""
    m = record.get("machine") if isinstance(record, dict) else None
    if m is None:
        return "machine not recorded"
    if isinstance(m, str):
        return m
    if "unknown" in m and not (m.get("gpu_model") or m.get("gpus")):
        return f"machine unknown ({m['unknown']})"
    count = m.get("gpu_count")
    model = m.get("gpu_model") or m.get("gpu_name") or (m.get("gpu") or {}).get("gpu_name")
    if not model and m.get("gpus"):
        first = m["gpus"][0]
        model = first.get("name") if isinstance(first, dict) else str(first).split(",")[0]
        count = count or len(m["gpus"])
    parts = []
    if model:
        parts.append(f"{count} x {model}" if count else model)
    driver = m.get("driver")
    if not driver and m.get("gpus") and isinstance(m["gpus"][0], str) and m["gpus"][0].count(",") >= 2:
        driver = m["gpus"][0].split(",")[2].strip()
    if driver:
        parts.append(f"driver {driver}")
    for key, name in (("cuda", "CUDA"), ("nccl", "NCCL"), ("nvshmem", "NVSHMEM")):
        if m.get(key):
            parts.append(f"{name} {cuda_version(m[key]) if key == 'cuda' else m[key]}")
    host = m.get("host") or m.get("name")
    if host:
        parts.append(f"host {host}")
    if m.get("unknown"):
        parts.append(f"(derived from the file; {m['unknown']})")
    return ", ".join(parts) or "machine: " + json.dumps(m)[:80]


# ---- the one launcher --------------------------------------------------------------------------------------------

MPIRUN = "mpirun"
# The one mpirun line (scripts/device/*.sh read it from here): no binding, since NVSHMEM's proxy thread needs a core of
# its own; as root in containers; more ranks than cores where ranks share GPUs.
MPIRUN_ARGS = "--allow-run-as-root --oversubscribe --bind-to none"


def launcher_environment():
    """NVLink multicast off whatever the caller's environment says (it can take
    a shared host's GPUs down); OpenMPI refuses to run as root unless told
    twice (containers run as root)."""
    env = dict(os.environ, NVSHMEM_DISABLE_NVLS="1", NCCL_NVLS_ENABLE="0", TORCH_SYMM_MEM_DISABLE_MULTICAST="1")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    return env


def launcher_prefix(ranks, mpirun=MPIRUN, mpirun_args=MPIRUN_ARGS, single_process_without_mpirun=False):
    """The launcher's words before the program: `mpirun <args> -np N`; [] for one process when
    single_process_without_mpirun (haloex-md runs one rank without MPI)."""
    if ranks == 1 and single_process_without_mpirun:
        return []
    return shlex.split(mpirun) + shlex.split(mpirun_args) + ["-np", str(ranks)]


def binding_of(prefix):
    """What the launcher line says about process binding."""
    if not prefix:
        return "no launcher (one process, placed by the OS)"
    words = []
    for i, w in enumerate(prefix):
        for opt in ("--bind-to", "--map-by", "--cpu-set", "--rank-by"):
            if w == opt and i + 1 < len(prefix):
                words.append(f"{opt} {prefix[i + 1]}")
            elif w.startswith(opt + "="):
                words.append(w.replace("=", " ", 1))
    return ", ".join(words) or "the launcher's default (OpenMPI: bind to core for <= 2 ranks, socket above)"


SECRETISH = re.compile(r"TOKEN|SECRET|PASSW|KEY|CREDENTIAL", re.IGNORECASE)
TIMING_ENV_PREFIXES = ("HALOEX_", "NVSHMEM_", "NCCL_", "CUDA_", "OMPI_MCA_", "UCX_", "TORCH_SYMM_MEM_")


def timing_environment(env=None):
    """The environment variables that can change the timing (HALOEX_*, NVSHMEM_*, NCCL_*, CUDA_*, OMPI_MCA_*, ...)."""
    env = os.environ if env is None else env
    return {k: env[k] for k in sorted(env) if k.startswith(TIMING_ENV_PREFIXES) and not SECRETISH.search(k)}


def pdl_setting(env=None):
    """Programmatic dependent launch as haloex decides it (include/haloex/detail/cuda/dependent_launch.cuh)."""
    env = os.environ if env is None else env
    v = env.get("HALOEX_PDL")
    if v == "0":
        return {"HALOEX_PDL": v, "pdl": "off (HALOEX_PDL=0)"}
    if v not in (None, "", "1"):
        return {"HALOEX_PDL": v, "pdl": "refused: haloex stops at its first launch (HALOEX_PDL takes 0 or 1)"}
    return {"HALOEX_PDL": v, "pdl": "on where the GPU has compute capability >= 9 (HALOEX_PDL unset, empty or 1)"}


def _processes_named(names):
    """Names among `names` of running processes this container can see; None when /proc cannot be read."""
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return None
    seen = set()
    for pid in pids:
        name = _process_name(f"/proc/{pid}")
        if name in names:
            seen.add(name)
    return sorted(seen)


# The kernel keeps a process's comm to 15 characters ("nvidia-cuda-mps-control" reads "nvidia-cuda-mps").
COMM_LENGTH = 15


def _process_name(proc_dir):
    """The process's name: its comm, or where that is cut at COMM_LENGTH characters, its command line's first
    word (the control daemon and the server share the cut name). None when unreadable."""
    try:
        with open(os.path.join(proc_dir, "comm")) as f:
            name = f.read().strip()
        if len(name) < COMM_LENGTH:
            return name
        with open(os.path.join(proc_dir, "cmdline"), "rb") as f:
            argv0 = f.read().split(b"\0")[0].decode(errors="replace")
        return os.path.basename(argv0) or name
    except OSError:
        return None


def mps_state(env=None, processes=None):
    """Whether an MPS control daemon is up: its control pipe in CUDA_MPS_PIPE_DIRECTORY (default /tmp/nvidia-mps;
    /tmp/mps, where scripts/device/run.sh puts it, checked too), and the daemon processes where visible.
    running: True (pipe and daemon, or pipe where processes cannot be listed), False (no pipe), None (a pipe but
    no daemon visible: stale, or a daemon outside this container). `processes` stands in for /proc in tests."""
    env = os.environ if env is None else env
    dirs = [env["CUDA_MPS_PIPE_DIRECTORY"]] if env.get("CUDA_MPS_PIPE_DIRECTORY") else ["/tmp/nvidia-mps", "/tmp/mps"]
    pipe = next((os.path.join(d, "control") for d in dirs if os.path.exists(os.path.join(d, "control"))), None)
    procs = _processes_named({"nvidia-cuda-mps-control", "nvidia-cuda-mps-server"}) if processes is None else processes
    running = pipe is not None and (procs is None or bool(procs) or None)
    state = {"running": running, "control_pipe": pipe or f"none in {', '.join(dirs)}",
             "daemon_processes": procs if procs is not None else "cannot list processes"}
    if running is None:
        state["note"] = "control pipe present but no MPS daemon visible: stale pipe, or a daemon outside this container"
    return state


def cpu_affinity():
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None
    ranges, start = [], None
    for i, c in enumerate(cpus):
        if start is None:
            start = c
        if i + 1 == len(cpus) or cpus[i + 1] != c + 1:
            ranges.append(f"{start}-{c}" if c != start else str(start))
            start = None
    return ",".join(ranges)


def timing_settings(launcher=None, cuda_graphs=None, env=None):
    """The settings that change the timing, whatever the driver: PDL, CUDA graphs, MPS, binding and the launcher
    line, the driver's CPU affinity, and the timing-relevant environment the launched programs get."""
    env = launcher_environment() if env is None else env
    prefix = launcher if isinstance(launcher, list) else (shlex.split(launcher) if launcher else [])
    return {
        **pdl_setting(env),
        "cuda_graphs": cuda_graphs if cuda_graphs is not None else "the program's default",
        "mps": mps_state(env),
        "launcher": " ".join(prefix) if prefix else "none",
        "binding": binding_of(prefix),
        "driver_cpu_affinity": cpu_affinity(),
        "environment": timing_environment(env),
        "command_line": " ".join(shlex.quote(a) for a in sys.argv),
    }


def record_header(tool, settings=None, launcher=None, cuda_graphs=None, build=None):
    """The header of every record a bench/ driver writes: schema_version, schema_note, tool, date (UTC), commit,
    machine and settings (timing_settings, then the driver's own)."""
    return {
        "schema_version": SCHEMA_VERSION,
        "schema_note": SCHEMA_NOTES[SCHEMA_VERSION],
        "tool": tool,
        "date": now_utc(),
        "commit": commit(),
        "machine": machine(build),
        "settings": {**timing_settings(launcher, cuda_graphs), **(settings or {})},
    }


def write_record(record, out, stem, machine_name):
    """Writes `record` to `out`, or by default to bench/results/<stem>-<machine_name>-<the header's date>.json;
    says where and returns the path."""
    path = out or os.path.join(REPO, "bench", "results", f"{stem}-{machine_name}-{record['date'][:10]}.json")
    with open(path, "w") as f:
        json.dump(record, f, indent=1)
    print(f"wrote {path}")
    return path


# ---- haloex-bench-nonbonded ---------------------------------------------------------------------------------------

def run_bench_nonbonded(exe, sizes, steps, extra=()):
    """One run of haloex-bench-nonbonded (or its -rdc twin): its JSON, which it prints last after its table."""
    cmd = [exe, *extra, "--sizes", ",".join(str(n) for n in sizes), "--steps", str(steps)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=900).stdout
    return json.loads(out[out.index('{"device"'):])


def paired_medians(runs, first, second, figures):
    """Per size (the atoms of `first`'s runs): for each figure both builds report, the median over the repeats of
    runs[first] and runs[second] (lists of run_bench_nonbonded JSONs) and second / first as `<second>_over_<first>`;
    the values themselves as `<label>_runs`."""
    table = []
    for n in sorted({r["atoms"] for run in runs[first] for r in run["results"]}):
        row = {"atoms": n}
        for figure in figures:
            values = {v: [r[figure] for run in runs[v] for r in run["results"] if r["atoms"] == n and figure in r]
                      for v in (first, second)}
            if not values[first] or not values[second]:
                continue
            med = {v: statistics.median(values[v]) for v in values}
            row[figure] = {first: med[first], second: med[second],
                           f"{second}_over_{first}": med[second] / med[first] if med[first] else None,
                           f"{first}_runs": values[first], f"{second}_runs": values[second]}
        table.append(row)
    return table


def find_executable(name):
    """The newest build*/bin/<name> of this checkout, or None."""
    candidates = sorted(glob.glob(os.path.join(REPO, "build*", "bin", name)), key=os.path.getmtime, reverse=True)
    return candidates[0] if candidates else None


# ---- Python dependencies -----------------------------------------------------------------------------------------

def install_command():
    """The project's way of installing bench/'s Python dependencies (never into the system Python)."""
    cmd = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--upgrade", "--target", DEPS_PYTHON,
           "-r", REQUIREMENTS]
    if os.path.isdir(WHEELS):
        cmd += ["--find-links", WHEELS]
    return cmd


def install_hint(module, tried=None):
    """What to do when `module` cannot be imported. tried: None (nothing was installed: HALOEX_NO_INSTALL=1), or
    (returncode, import error after it) of the install that just ran, so the hint does not repeat it."""
    where = f"neither from {sys.executable}'s packages nor from {DEPS_PYTHON}"
    if tried is None:
        return (f"{module} is needed and is not importable ({where}); HALOEX_NO_INSTALL=1 kept the bench scripts "
                f"from installing it. Install bench/'s dependencies into the project's environment:\n"
                f"    python3 -m pip install --target .deps/python -r bench/requirements.txt\n"
                f"(from the checkout's root; add --find-links .whl --no-index for carried wheels).")
    code, error = tried
    if code != 0:
        return (f"{module} is needed and is not importable ({where}), and installing bench/requirements.txt into "
                f"{DEPS_PYTHON} just failed (pip exit {code}; its messages are above). Without a package registry: "
                f"on a machine with one, `python3 -m pip download -d .whl -r bench/requirements.txt`, copy .whl/ "
                f"into this checkout and run again (the bench scripts then install from .whl).")
    return (f"bench/requirements.txt was installed into {DEPS_PYTHON}, but `import {module}` still fails: {error}. "
            f"Another copy on the path may shadow one of its dependencies (sys.path: "
            f"{', '.join(sys.path[:8])}...); run with PYTHONNOUSERSITE=1, or remove the stale copy.")


def require(module):
    """Imports `module`; when missing, installs bench/requirements.txt into .deps/python (unless
    HALOEX_NO_INSTALL=1) and tries again; else exits saying what failed and what to do."""
    import importlib
    try:
        return importlib.import_module(module)
    except ImportError:
        pass
    if os.environ.get("HALOEX_NO_INSTALL") == "1":
        sys.exit(install_hint(module))
    print(f"[bench] {module} missing: installing bench/requirements.txt into {DEPS_PYTHON}", file=sys.stderr)
    try:
        code = subprocess.run(install_command() + ["--retries", "0", "--timeout", "15", "-q"], timeout=600).returncode
    except (OSError, subprocess.SubprocessError) as e:
        code = f"{type(e).__name__}: {e}"
    error = None
    if code == 0:
        use_project_environment()
        importlib.invalidate_caches()
        for name in [m for m in sys.modules if m == module or m.startswith(module + ".")]:
            del sys.modules[name]
        try:
            return importlib.import_module(module)
        except ImportError as e:
            error = str(e)
    sys.exit(install_hint(module, (code, error)))


# ---- plots -------------------------------------------------------------------------------------------------------

def plot_command_line(description, argv=None, prog=None):
    """The plot scripts' command line (a record, --out): (args, the record's JSON), the record's schema checked."""
    p = argparse.ArgumentParser(prog=prog, description=description,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("record", help="a JSON record written by a bench/ driver")
    p.add_argument("--out", help=f"PNG file (default: {os.path.relpath(PLOT_DIR, REPO)}/<record name>.png, never "
                                 f"beside the record)")
    args = p.parse_args(argv)
    return args, exit_on_schema_error(lambda: load_record(args.record))


def pyplot():
    """matplotlib.pyplot on a file-only backend (installed into .deps/python when missing), or exit saying how."""
    matplotlib = require("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def default_plot_path(record):
    """Where a plot of `record` goes without --out: PLOT_DIR (out/plots, ignored by git, or $HALOEX_BENCH_OUT),
    never beside the record, where a committed PNG may be."""
    return os.path.join(PLOT_DIR, os.path.splitext(os.path.basename(record))[0] + ".png")


def record_title(record, what, separator=" — "):
    """A plot's title: what it shows, the machine, the record's commit and date."""
    return (f"{what}{separator}{machine_summary(record)} — commit {str(record.get('commit', '?'))[:12]} — "
            f"{record.get('date', '')}")


def finish_plot(fig, record, title, record_path, out, fontsize=9, dpi=110):
    """The plot scripts' common end: the title, the layout, the PNG (save_png)."""
    fig.suptitle(title, fontsize=fontsize)
    fig.tight_layout()
    return save_png(fig, record_path, out, dpi=dpi)


def save_png(fig, record, out=None, dpi=120, metadata=None):
    """Writes the figure to `out`, or to default_plot_path(record), and says where."""
    path = out or default_plot_path(record)
    if os.path.dirname(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
    fig.savefig(path, dpi=dpi, metadata=metadata)
    print(f"wrote {path}")
    return path
