#!/usr/bin/env python3
"""Runs GROMACS mdrun on haloex-md's proxy system and records its throughput.

For each atom count N, each requested nstlist and each --cuda-graph setting it
  1. writes the system with  haloex-md --device cpu --atoms N --steps 1 --quiet
     --thermo-every T [--thermostat X] --write-gromacs DIR (conf.gro, topol.top, md.mdp);
  2. edits md.mdp into run.mdp (pair-list policy below; nsteps = S; --mdp-set) and
     runs gmx grompp (-maxwarn 0 unless --maxwarn);
  3. runs  gmx mdrun -nb gpu -update gpu -pin on -ntmpi R -ntomp C -nsteps S
     -resethway -noconfout [-nstlist K] [-dd X Y Z]  (GMX_CUDA_GRAPH=1 with
     --cuda-graph on); R = --ntmpi (1: one GPU; R > 1: R thread-MPI ranks,
     one per GPU, domain decomposition with GROMACS's GPU direct
     communication, on by default for thread-MPI; C = the CPUs / R);
  4. parses md.log and prints (and with --out writes) one JSON record per run:
     {tool: "gromacs", version, atoms, nstlist, rlist, nstlist_auto, steps,
      us_per_step, ns_per_day, drift, command, ...}
     nstlist/rlist: what mdrun used (its "Using a ... pair-list setup" block;
     outer list when it prunes dynamically, then nstlist_prune/rlist_inner);
     steps: the steps the timing covers; us_per_step: wall time / steps (all
     steps after the reset, search and energy steps included);
     us_per_step_without_search_and_dd: the same minus the cycle accounting's
     "Domain decomp." and "Neighbor search" rows (GROMACS searches on the CPU;
     cycle_wall_s holds every row); drift: GROMACS's
     "Conserved energy drift" (kJ/mol/ps per atom, over the whole run);
     gpu_update/gpu_nonbonded/cuda_graph: what the log says mdrun did;
     ntmpi, dd_grid ([X, Y, Z] the log reports) and gpu_direct_comm (the
     log's "GPU direct communication will be used") for several ranks.

Pair-list policy (--rlist-policy):
  gromacs (default)  verlet-buffer-tolerance = haloex's --buffer-tolerance (0.005
                     kJ/mol/ps per atom unless changed), rlist = rc in the mdp:
                     grompp/mdrun size the buffer themselves and, where they can,
                     prune the list dynamically (rolling pruning on the GPU).
                     'auto': md.mdp nstlist = 10 (GROMACS's default) and mdrun
                     raises it (tries 20, 25, 40, 50, 80, 100; on a GPU usually 80
                     or 100).  K: md.mdp nstlist = K and mdrun -nstlist K.
                     NOTE: GROMACS changes nstlist and prunes dynamically only with
                     a thermostat. With haloex's default (--thermostat none, NVE)
                     mdrun keeps md.mdp's nstlist ("Can not increase nstlist because
                     an NVE ensemble is used"; 'auto' then stays at 10) and does not
                     prune: use --thermostat v-rescale (here and in the haloex-md
                     run) for GROMACS's normal GPU setup, or give nstlist values.
  haloex             md.mdp as haloex-md wrote it (verlet-buffer-tolerance = -1 and
                     haloex's rlist for its nstlist): the same pair list as haloex,
                     no tuning, no dynamic pruning.  K is passed to haloex-md
                     (--nstlist K); 'auto' means haloex's own choice.

-resethway: mdrun evaluates steps 0..S and resets its counters at step S/2, so
the Performance line, the wall time and us_per_step cover S + 1 - S/2 steps.

Usage (GPU machine):
  python3 gromacs_bench.py --gmx /root/gmx/bin/gmx \
      --haloex-md /root/hx/build-gpu/bin/haloex-md \
      --atoms 22500 90000 360000 --steps 20000 --nstlist auto 100 \
      --thermostat v-rescale --cuda-graph off on --out gromacs.json
  python3 gromacs_bench.py ... --dry-run      # print the commands only
If the loader finds no libcufft.so.12, the driver adds pip's nvidia-* library
directories or, last, the package's lib/cufft-stub to LD_LIBRARY_PATH (record: cufft).
Tests: tests/bench/test_gromacs_bench.py (ctest bench_gromacs_bench)
"""
import argparse
import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

# --------------------------------------------------------------------------------------
# md.log parsing


_FLOAT = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"


def parse_md_log(text):
    """Parses a GROMACS md.log; returns a dict (missing items are None)."""
    r = {
        "version": None,
        "wall_s": None,
        "core_s": None,
        "ns_per_day": None,
        "hour_per_ns": None,
        "ms_per_step": None,
        "reset_step": None,
        "nsteps": None,
        "dt": None,
        "nstlist": None,
        "rlist": None,
        "nstlist_prune": None,
        "rlist_inner": None,
        "dynamic_pruning": False,
        "nstlist_changed_from": None,
        "rlist_changed_from": None,
        "drift": None,
        "gpu_update": False,
        "gpu_nonbonded": False,
        "cuda_graph": False,
        "dd_grid": None,
        "gpu_direct_comm": False,
        "notes": [],
        "finished": False,
        "cycle_wall_s": {},
    }
    m = re.search(r"^GROMACS version:\s+(\S+)", text, re.M)
    if m:
        r["version"] = m.group(1)
    # The tpr's values, echoed under "Input Parameters:" ("   nsteps    = 1"),
    # then mdrun's override: "Overriding nsteps with value passed on the command line: 100 steps, 0.2 ps"
    m = re.search(r"^\s+nsteps\s+=\s+(-?\d+)", text, re.M)
    if m:
        r["nsteps"] = int(m.group(1))
    m = re.search(r"Overriding nsteps with value passed on the command line: (-?\d+) steps", text)
    if m:
        r["nsteps"] = int(m.group(1))
    m = re.search(r"^\s+dt\s+=\s+(" + _FLOAT + ")", text, re.M)
    if m:
        r["dt"] = float(m.group(1))
    # "Changing nstlist from 10 to 100, rlist from 1 to 1.138"
    for m in re.finditer(
        r"Changing nstlist from (\d+) to (\d+), rlist from (" + _FLOAT + r") to (" + _FLOAT + ")", text
    ):
        r["nstlist_changed_from"] = int(m.group(1))
        r["nstlist"] = int(m.group(2))
        r["rlist_changed_from"] = float(m.group(3))
        r["rlist"] = float(m.group(4))
    # "Changing rlist from 0.935 to 0.97 for non-bonded 8x8 atom kernels"
    for m in re.finditer(r"Changing rlist from (" + _FLOAT + r") to (" + _FLOAT + r") for non-bonded", text):
        if r["rlist_changed_from"] is None:
            r["rlist_changed_from"] = float(m.group(1))
        r["rlist"] = float(m.group(2))
    # The final word: the pair-list setup block printed before the run.
    #   Using a dual 8x4 pair-list setup updated with dynamic, rolling pruning:
    #     outer list: updated every 100 steps, buffer 0.199 nm, rlist 1.099 nm
    #     inner list: updated every  10 steps, buffer 0.002 nm, rlist 0.902 nm
    #   Using a 4x8 pair-list setup:
    #     updated every 50 steps, buffer 0.085 nm, rlist 0.985 nm
    setup = None
    for m in re.finditer(r"^Using a (dual )?\S+ pair-list setup[^\n]*\n((?:  [^\n]*\n)+)", text, re.M):
        setup = m
    if setup:
        every = re.compile(r"(?:(outer|inner) list: )?updated every\s+(\d+) steps, buffer (" + _FLOAT
                           + r") nm, rlist (" + _FLOAT + ") nm")
        for lm in every.finditer(setup.group(2)):
            kind, n, rl = lm.group(1), int(lm.group(2)), float(lm.group(4))
            if kind == "inner":
                r["nstlist_prune"], r["rlist_inner"] = n, rl
            else:
                r["nstlist"], r["rlist"] = n, rl
        r["dynamic_pruning"] = bool(setup.group(1))
    for note in (
        "Can not increase nstlist because an NVE ensemble is used",
        "Can not increase nstlist because verlet-buffer-tolerance is not set or used",
        "Can not increase nstlist because the box is too small",
    ):
        if note in text:
            r["notes"].append(note)
    m = re.search(r"step (\d+): resetting all time and cycle counters", text)
    if m:
        r["reset_step"] = int(m.group(1))
    m = re.search(r"Conserved energy drift:\s+(" + _FLOAT + r") kJ/mol/ps per atom", text)
    if m:
        r["drift"] = float(m.group(1))
    #                Core t (s)   Wall t (s)        (%)
    #        Time:        0.201        0.201      100.0
    #                  (ns/day)    (hour/ns)    (ms/step)  (Matom*steps/s)
    # Performance:       43.838        0.547        3.942            0.761
    m = re.search(r"^\s+Time:\s+(" + _FLOAT + r")\s+(" + _FLOAT + r")\s+" + _FLOAT, text, re.M)
    if m:
        r["core_s"], r["wall_s"] = float(m.group(1)), float(m.group(2))
    m = re.search(r"^\s*\(ns/day\)\s+\(hour/ns\)(.*)\n\s*Performance:\s+(" + _FLOAT + r")\s+(" + _FLOAT
                  + r")\s*(.*)$", text, re.M)
    if m:
        r["ns_per_day"], r["hour_per_ns"] = float(m.group(2)), float(m.group(3))
        units, values = m.group(1).split(), m.group(4).split()
        if "(ms/step)" in units and len(values) > units.index("(ms/step)"):
            r["ms_per_step"] = float(values[units.index("(ms/step)")])
    # reportgpuusage.cpp: "1 GPU selected for this run. / Mapping of GPU IDs to the 1 GPU task in the
    # 1 rank on this node: /   PP:0 / PP tasks will do non-perturbed short-ranged interactions on the GPU /
    # PP task will update and constrain coordinates on the GPU / CUDA Graphs will be used, ..."
    r["gpu_update"] = ("PP task will update and constrain coordinates on the GPU" in text
                       or "Updating coordinates on the GPU." in text
                       or "Updating coordinates and applying constraints on the GPU." in text)
    r["gpu_nonbonded"] = bool(re.search(r"^PP tasks will do .*short-ranged.* interactions on the GPU", text, re.M))
    r["cuda_graph"] = "CUDA Graphs will be used" in text
    # domdec.cpp: "Domain decomposition grid 2 x 1 x 1, separate PME ranks 0"
    m = re.search(r"Domain decomposition grid (\d+) x (\d+) x (\d+)", text)
    if m:
        r["dd_grid"] = [int(m.group(k)) for k in (1, 2, 3)]
    r["gpu_direct_comm"] = "GPU direct communication will be used" in text
    r["finished"] = bool(re.search(r"^Finished mdrun on rank 0", text, re.M))
    r["cycle_wall_s"] = cycle_accounting(text)
    return r


def cycle_accounting(text):
    """{activity: wall time (s)} of md.log's "R E A L   C Y C L E   A N D   T I M E   A C C O U N T I N G" table
    (rank 0's view of the counted steps: after -resethway, the steps the Performance line counts), e.g.
    {"Domain decomp.": 0.123, "Neighbor search": 0.456, ..., "Rest": 0.01, "Total": 3.2}; {} when there is none."""
    start = text.find("R E A L   C Y C L E   A N D   T I M E   A C C O U N T I N G")
    if start < 0:
        return {}
    rows = {}
    #  Neighbor search           1    1          2       0.016          0.040  13.2
    #  Rest                                              0.002          0.004   1.3
    full = re.compile(r"^ (\S.*?)\s+\d+\s+\d+\s+\d+\s+(" + _FLOAT + r")\s+" + _FLOAT + r"\s+" + _FLOAT + r"\s*$")
    short = re.compile(r"^ (Rest|Total)\s+(" + _FLOAT + r")\s+" + _FLOAT + r"\s+" + _FLOAT + r"\s*$")
    for line in text[start:].splitlines()[1:]:
        m = full.match(line) or short.match(line)
        if m:
            rows.setdefault(m.group(1).strip(), float(m.group(2)))
        if line.startswith(" Total"):
            break
    return rows


# What GROMACS's step costs without its search and domain decomposition: the wall time minus md.log's
# "Domain decomp." and "Neighbor search" rows, over the counted steps (issue 34's definition; the search runs on
# the CPU there, on the GPU in haloex).
SEARCH_AND_DD_ROWS = ("Domain decomp.", "Neighbor search")


def us_per_step_without_search_and_dd(parsed, nsteps):
    """Wall-clock microseconds per counted step minus the search and DD rows, or None without the table."""
    n = steps_counted(parsed, nsteps)
    rows = parsed.get("cycle_wall_s") or {}
    if parsed.get("wall_s") is None or n <= 0 or "Total" not in rows:
        return None
    # The table must be of the counted interval: its Total is the Time line's wall time (to md.log's 3 decimals).
    if abs(rows["Total"] - parsed["wall_s"]) > 0.01 * parsed["wall_s"] + 0.002:
        return None
    return (parsed["wall_s"] - sum(rows.get(name, 0.0) for name in SEARCH_AND_DD_ROWS)) * 1e6 / n


def steps_counted(parsed, nsteps):
    """Steps the Performance line covers.

    mdrun evaluates steps 0..nsteps (nsteps + 1 force calls); with -resethway the
    counters are reset at step nsteps/2 and steps nsteps/2..nsteps are counted
    (walltime_accounting: nsteps_done - nsteps_done_at_reset = nsteps + 1 - reset_step).
    """
    if parsed.get("nsteps") is not None:
        nsteps = parsed["nsteps"]
    if parsed.get("reset_step") is not None:
        return nsteps + 1 - parsed["reset_step"]
    return nsteps + 1


def us_per_step(parsed, nsteps):
    """Wall-clock microseconds per step over the counted steps."""
    n = steps_counted(parsed, nsteps)
    if parsed.get("wall_s") is None or n <= 0:
        return None
    return parsed["wall_s"] * 1e6 / n


# --------------------------------------------------------------------------------------
# md.mdp editing


def set_mdp_option(text, key, value):
    """Sets key = value in mdp text (replacing the line, or appending); None removes it."""
    norm = key.replace("_", "-").lower()
    out, done = [], False
    for line in text.splitlines():
        body = line.split(";", 1)[0]
        if "=" in body and body.split("=", 1)[0].strip().replace("_", "-").lower() == norm:
            if value is not None and not done:
                out.append(f"{key:<24} = {value}")
            done = True
            continue
        out.append(line)
    if value is not None and not done:
        out.append(f"{key:<24} = {value}")
    return "\n".join(out) + "\n"


def get_mdp_option(text, key, default=None):
    norm = key.replace("_", "-").lower()
    for line in text.splitlines():
        body = line.split(";", 1)[0]
        if "=" in body and body.split("=", 1)[0].strip().replace("_", "-").lower() == norm:
            return body.split("=", 1)[1].strip()
    return default


def adapt_mdp(text, policy, nstlist, tolerance):
    """Rewrites md.mdp for the rlist policy; nstlist is 'auto' or an int."""
    if policy == "haloex":
        return text
    text = set_mdp_option(text, "verlet-buffer-tolerance", tolerance)
    # grompp sets rlist from the tolerance; rlist = rc only avoids its note about rlist > cut-off
    text = set_mdp_option(text, "rlist", get_mdp_option(text, "rcoulomb"))
    text = set_mdp_option(text, "nstlist", 10 if nstlist == "auto" else int(nstlist))
    return text


# --------------------------------------------------------------------------------------
# running


def find_cufft_dirs(gmx):
    """Directories to add to LD_LIBRARY_PATH when the loader cannot find a library of gmx."""
    try:
        out = subprocess.run(["ldd", gmx], capture_output=True, text=True).stdout
    except OSError:
        return []
    missing = [line.split()[0] for line in out.splitlines() if "not found" in line]
    if not missing:
        return []
    roots = [os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(gmx))), "lib"),
             "/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib"]
    roots += sorted(glob.glob("/usr/local/cuda-*/targets/x86_64-linux/lib"), reverse=True)
    for pattern in ("/opt/*/.venv/lib/python3*/site-packages/nvidia/*/lib",
                    "/usr/local/lib/python3*/dist-packages/nvidia/*/lib",
                    "/usr/lib/python3/dist-packages/nvidia/*/lib",
                    "/root/.local/lib/python3*/site-packages/nvidia/*/lib",
                    "/opt/conda/lib/python3*/site-packages/nvidia/*/lib"):
        roots += sorted(glob.glob(pattern))
    # last resort: the package's stand-in, whose functions fail (fine without PME)
    roots.append(os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(gmx))), "lib", "cufft-stub"))
    dirs = []
    for lib in missing:
        for d in roots:
            if os.path.exists(os.path.join(d, lib)):
                if d not in dirs:
                    dirs.append(d)
                break
    return dirs


def run_env(gmx):
    env = dict(os.environ)
    env.pop("GMX_CUDA_GRAPH", None)  # set per run (--cuda-graph)
    env["GMX_MAXBACKUP"] = "-1"  # no #md.log.1# backups
    env.setdefault("NVSHMEM_DISABLE_NVLS", "1")
    env.setdefault("NCCL_NVLS_ENABLE", "0")
    extra = find_cufft_dirs(gmx)
    if extra:
        env["LD_LIBRARY_PATH"] = ":".join(extra + [p for p in env.get("LD_LIBRARY_PATH", "").split(":") if p])
    return env


def resolved_library(gmx, env, name="libcufft.so.12"):
    """The path the loader picks for a library of gmx under env (None if not found)."""
    try:
        out = subprocess.run(["ldd", gmx], capture_output=True, text=True, env=env).stdout
    except OSError:
        return None
    for line in out.splitlines():
        if line.strip().startswith(name) and "=>" in line:
            path = line.split("=>", 1)[1].split("(")[0].strip()
            return None if path == "not found" else path
    return None


def gmx_version(gmx, env):
    try:
        out = subprocess.run([gmx, "--version"], capture_output=True, text=True, env=env, timeout=120).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"^GROMACS version:\s+(\S+)", out, re.M)
    return m.group(1) if m else None


def export_command(args, atoms, nstlist):
    cmd = [args.haloex_md, "--device", "cpu", "--atoms", str(atoms), "--steps", "1", "--quiet", "--log", "none",
           "--thermo-every", str(args.thermo_every)]
    if args.thermostat:
        cmd += ["--thermostat", args.thermostat]
    if args.rlist_policy == "haloex" and nstlist != "auto":
        cmd += ["--nstlist", str(nstlist)]
    cmd += args.hx_arg
    return cmd


def grompp_command(args, d):
    return [args.gmx, "grompp", "-f", os.path.join(d, "run.mdp"), "-c", os.path.join(d, "conf.gro"),
            "-p", os.path.join(d, "topol.top"), "-o", os.path.join(d, "topol.tpr"),
            "-po", os.path.join(d, "mdout.mdp"), "-maxwarn", str(args.maxwarn)]


def mdrun_command(args, d, nstlist):
    cmd = [args.gmx, "mdrun", "-s", os.path.join(d, "topol.tpr"), "-deffnm", os.path.join(d, "md"),
           "-g", os.path.join(d, "md.log"), "-nb", args.nb, "-update", args.update, "-pin", args.pin,
           "-ntmpi", str(args.ntmpi), "-ntomp", str(args.ntomp), "-nsteps", str(args.steps), "-resethway",
           "-noconfout"]
    if args.rlist_policy == "gromacs" and nstlist != "auto":
        cmd += ["-nstlist", str(nstlist)]
    if args.dd:
        cmd += ["-dd"] + [str(n) for n in args.dd]
    cmd += args.mdrun_arg
    return cmd


def run(cmd, env, timeout, log_path=None):
    t0 = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    if log_path:
        with open(log_path, "w") as f:
            f.write("$ " + shlex.join(cmd) + "\n" + proc.stdout + proc.stderr)
    return proc, time.time() - t0


def bench_one(args, atoms, nstlist, env, version, graph="off"):
    d = os.path.join(args.workdir, f"n{atoms}-nstlist-{nstlist}-{args.rlist_policy}"
                     + ("-graph" if graph == "on" else "") + (f"-ntmpi{args.ntmpi}" if args.ntmpi > 1 else ""))
    exp, gpp, mdr = export_command(args, atoms, nstlist), grompp_command(args, d), mdrun_command(args, d, nstlist)
    exp_full = exp + ["--write-gromacs", d]
    rec = {"tool": "gromacs", "version": version, "atoms": atoms, "nstlist_requested": nstlist,
           "nstlist_auto": args.rlist_policy == "gromacs" and nstlist == "auto",
           "rlist_policy": args.rlist_policy, "nsteps": args.steps, "cuda_graph_requested": graph == "on",
           "ntmpi": args.ntmpi, "ntomp": args.ntomp, "dd_requested": args.dd,
           "command": ("GMX_CUDA_GRAPH=1 " if graph == "on" else "") + shlex.join(mdr)}
    if args.dry_run:
        print(shlex.join(exp_full))
        print(f"# edit {d}/md.mdp -> {d}/run.mdp ({args.rlist_policy} policy, nstlist {nstlist}, "
              f"nsteps {args.steps}" + "".join(", " + kv for kv in args.mdp_set) + ")")
        print(shlex.join(gpp))
        print(rec["command"])
        return None
    if os.path.isdir(d):
        shutil.rmtree(d)
    os.makedirs(d)
    try:
        proc, _ = run(exp_full, env, args.timeout, os.path.join(d, "export.out"))
    except subprocess.TimeoutExpired:
        rec["error"] = f"haloex-md export timed out after {args.timeout} s"
        return rec
    if proc.returncode != 0:
        rec["error"] = f"haloex-md export failed ({proc.returncode}): " + (proc.stderr or proc.stdout)[-1500:]
        return rec
    with open(os.path.join(d, "md.mdp")) as f:
        mdp = f.read()
    tolerance = args.buffer_tolerance
    if tolerance is None:  # haloex's tolerance is in the comment the export writes
        m = re.search(r"drift of (" + _FLOAT + r") kJ/mol/ps per atom", mdp)
        tolerance = float(m.group(1)) if m else 0.005
    run_mdp = adapt_mdp(mdp, args.rlist_policy, nstlist, tolerance)
    # mdrun -nsteps (deprecated in 2026, still honoured) overrides this; the tpr says the same
    run_mdp = set_mdp_option(run_mdp, "nsteps", args.steps)
    for kv in args.mdp_set:
        key, value = kv.split("=", 1)
        run_mdp = set_mdp_option(run_mdp, key.strip(), value.strip() or None)
    with open(os.path.join(d, "run.mdp"), "w") as f:
        f.write(run_mdp)
    rec["dt"] = float(get_mdp_option(run_mdp, "dt", "0.002"))
    rec["verlet_buffer_tolerance"] = float(get_mdp_option(run_mdp, "verlet-buffer-tolerance", "-1"))
    rec["thermostat"] = get_mdp_option(run_mdp, "tcoupl", "no")
    rec["nstcalcenergy"] = int(get_mdp_option(run_mdp, "nstcalcenergy", "100"))
    try:
        proc, _ = run(gpp, env, args.timeout, os.path.join(d, "grompp.out"))
    except subprocess.TimeoutExpired:
        rec["error"] = f"grompp timed out after {args.timeout} s"
        return rec
    if proc.returncode != 0:
        rec["error"] = f"grompp failed ({proc.returncode}): " + (proc.stderr or proc.stdout)[-1500:]
        return rec
    # grompp's NOTEs and (with --maxwarn > 0) WARNINGs, first line of each
    rec["grompp_messages"] = [" ".join(m.split()) for m in re.findall(
        r"^((?:NOTE|WARNING) \d+ \[[^\]]*\]:\n\s+[^\n]*)", proc.stdout + proc.stderr, re.M)]
    mdrun_env = dict(env, GMX_CUDA_GRAPH="1") if graph == "on" else env
    try:
        proc, elapsed = run(mdr, mdrun_env, args.timeout, os.path.join(d, "mdrun.out"))
    except subprocess.TimeoutExpired:
        rec["error"] = f"mdrun timed out after {args.timeout} s"
        return rec
    rec["elapsed_s"] = round(elapsed, 3)
    log = os.path.join(d, "md.log")
    text = open(log, errors="replace").read() if os.path.exists(log) else ""
    p = parse_md_log(text)
    rec.update({
        "version": p["version"] or version,
        "nstlist": p["nstlist"],
        "rlist": p["rlist"],
        "nstlist_prune": p["nstlist_prune"],
        "rlist_inner": p["rlist_inner"],
        "dynamic_pruning": p["dynamic_pruning"],
        "nstlist_changed_from": p["nstlist_changed_from"],
        "steps": steps_counted(p, args.steps) if p["wall_s"] is not None else None,
        "reset_step": p["reset_step"],
        "wall_s": p["wall_s"],
        "us_per_step": us_per_step(p, args.steps),
        "us_per_step_without_search_and_dd": us_per_step_without_search_and_dd(p, args.steps),
        "cycle_wall_s": p["cycle_wall_s"],
        "ms_per_step_gromacs": p["ms_per_step"],
        "ns_per_day": p["ns_per_day"],
        "hour_per_ns": p["hour_per_ns"],
        "drift": p["drift"],
        "gpu_update": p["gpu_update"],
        "gpu_nonbonded": p["gpu_nonbonded"],
        "cuda_graph": p["cuda_graph"],
        "dd_grid": p["dd_grid"],
        "gpu_direct_comm": p["gpu_direct_comm"],
        "notes": p["notes"],
        "cufft": getattr(args, "cufft", None),
        "log": log,
    })
    if proc.returncode != 0 or not p["finished"]:
        rec["error"] = f"mdrun failed ({proc.returncode}): " + (proc.stderr or proc.stdout)[-1500:]
    return rec


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gmx", required=True, help="the gmx binary (bin/gmx of the unpacked package)")
    ap.add_argument("--haloex-md", required=True, help="the haloex-md binary that writes the inputs")
    ap.add_argument("--atoms", type=int, nargs="+", required=True)
    ap.add_argument("--steps", type=int, default=20000, help="mdrun -nsteps (default 20000)")
    ap.add_argument("--nstlist", nargs="+", default=["auto"],
                    help="'auto' and/or integers (default: auto)")
    ap.add_argument("--rlist-policy", choices=["gromacs", "haloex"], default="gromacs")
    ap.add_argument("--buffer-tolerance", type=float, default=None,
                    help="verlet-buffer-tolerance for the gromacs policy (default: haloex's, 0.005)")
    ap.add_argument("--thermostat", choices=["none", "v-rescale"], default=None,
                    help="passed to haloex-md (default: haloex's default, none = NVE)")
    ap.add_argument("--thermo-every", type=int, default=None,
                    help="nstcalcenergy/nstenergy/nstlog (haloex --thermo-every); default steps/10 as haloex-md")
    ap.add_argument("--cuda-graph", nargs="+", choices=["off", "on"], default=["off"],
                    help="run with GMX_CUDA_GRAPH=1 (experimental CUDA graphs; GPU update only): off, on or both")
    ap.add_argument("--ntmpi", type=int, default=1,
                    help="thread-MPI ranks, one per GPU (default 1; > 1: domain decomposition, GPU direct "
                         "communication)")
    ap.add_argument("--dd", type=int, nargs=3, metavar=("X", "Y", "Z"), default=None,
                    help="mdrun -dd X Y Z: the domain grid (default: mdrun's choice); X*Y*Z must equal --ntmpi")
    ap.add_argument("--ntomp", type=int, default=None, help="OpenMP threads per rank (default: the CPUs / --ntmpi)")
    ap.add_argument("--nb", default="gpu")
    ap.add_argument("--update", default="gpu")
    ap.add_argument("--pin", default="on")
    ap.add_argument("--maxwarn", type=int, default=0)
    ap.add_argument("--hx-arg", action="append", default=[],
                    help="extra haloex-md argument (repeat; e.g. --hx-arg=--dt --hx-arg=0.002)")
    ap.add_argument("--mdrun-arg", action="append", default=[], help="extra mdrun argument (repeat)")
    ap.add_argument("--mdp-set", action="append", default=[], metavar="KEY=VALUE",
                    help="set (or with KEY= remove) an md.mdp option after the policy edits (repeat), "
                         "e.g. --mdp-set nstcomm=2000")
    ap.add_argument("--workdir", default=None, help="where the runs go (default: a new temporary directory)")
    ap.add_argument("--out", default=None, help="write the records to this JSON file (a list)")
    ap.add_argument("--timeout", type=float, default=1800.0, help="per command, seconds")
    ap.add_argument("--dry-run", action="store_true", help="print the commands and exit")
    args = ap.parse_args(argv)
    if args.ntmpi < 1:
        ap.error(f"--ntmpi {args.ntmpi}: use 1 or more ranks")
    if args.dd and args.dd[0] * args.dd[1] * args.dd[2] != args.ntmpi:
        ap.error(f"--dd {' '.join(map(str, args.dd))}: {args.dd[0] * args.dd[1] * args.dd[2]} domains for "
                 f"--ntmpi {args.ntmpi} ranks; give as many domains as ranks")
    if args.ntomp is None:
        args.ntomp = max(1, (os.cpu_count() or 1) // args.ntmpi)
    for k in args.nstlist:
        if k != "auto" and not k.isdigit():
            ap.error(f"--nstlist {k}: use 'auto' or a positive integer")
    for kv in args.mdp_set:
        if "=" not in kv:
            ap.error(f"--mdp-set {kv}: use KEY=VALUE")
    if args.thermo_every is None:
        args.thermo_every = max(1, args.steps // 10)
    if args.workdir is None:
        args.workdir = "<workdir>" if args.dry_run else tempfile.mkdtemp(prefix="gromacs-bench-")
    if args.dry_run:
        for atoms in args.atoms:
            for k in args.nstlist:
                for graph in args.cuda_graph:
                    bench_one(args, atoms, k, None, None, graph)
        return 0
    args.gmx = os.path.abspath(args.gmx)
    args.haloex_md = os.path.abspath(args.haloex_md)
    env = run_env(args.gmx)
    args.cufft = resolved_library(args.gmx, env)
    if args.cufft and "cufft-stub" in args.cufft:
        print("warning: no libcufft.so.12 found; using the package's stand-in (runs without PME only)",
              file=sys.stderr)
    version = gmx_version(args.gmx, env)
    if version is None:
        print(f"error: {args.gmx} --version did not run (missing libraries? try: ldd {args.gmx})", file=sys.stderr)
        return 2
    records = []
    for atoms in args.atoms:
        for k in args.nstlist:
            for graph in args.cuda_graph:
                rec = bench_one(args, atoms, k, env, version, graph)
                records.append(rec)
                print(json.dumps(rec), flush=True)
                if args.out:
                    with open(args.out, "w") as f:
                        json.dump(records, f, indent=1)
    return 1 if any("error" in r for r in records) else 0


if __name__ == "__main__":
    sys.exit(main())
