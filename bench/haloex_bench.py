#!/usr/bin/env python3
"""bench/ as one tool: one launcher line, one record schema, subcommands.

  md {single,dd,scaling} ...   haloex-md suites              (bench/md_bench.py)
  jacobi ...                   haloex-jacobi, every transport (bench/jacobi_bench.py)
  commbench ...                communication micro-benchmarks (bench/commbench.py)
  exchange-timing LOG... ...   halo-exchange timings record   (bench/exchange_timing.py)
  rdc-cost ...                 the MD kernels with and without -rdc, one build (bench/rdc_cost.py)
  roofline ...                 the non-bonded kernel's roofline per size, with Nsight Compute (bench/roofline.py)
  kernel-ab --a EXE --b EXE    the MD kernels of two builds, alternating, medians and verdict (bench/kernel_ab.py)
  outer-radius --bench EXE     the force kernel against the outer radius, inner list fixed (bench/outer_radius.py)
  entry-length --bench EXE     the force kernel at each entry length (--max-j), medians per size (bench/entry_length.py)
  gromacs-record --haloex ... --gromacs ...   haloex-md beside GROMACS as one record (bench/gromacs_record.py)
  sass-loops OBJECT            SASS instructions per loop of a kernel, from a compiled object (bench/sass_loops.py)
  plot RECORD [--out PNG]      the plot for the record's kind (every kind bench/results holds)
  headline [--out PNG]         the README's figure: haloex vs GROMACS and the CPU-orchestrated transports
  raw-log RAW --out RECORD     a record transcribed from an allocation's raw log (--check RECORD: faithful?)
  summarize RECORD... ...      Markdown tables: haloex-md records (and --gromacs), or an exchange-timing record
  compare-energies REF RUN...  energy series of haloex-md runs against a reference
  migrate [PATH...] [--check]  give old records their schema_version (bench/migrate_records.py)
  model {step,check,predict,params}  the scaling model: predicted vs measured, predictions (bench/model.py)
  header                       print the record header this machine gives (machine, commit, settings), JSON

Every record carries the header of bench/bench_common.py: schema_version
(readers refuse newer ones), tool, date, commit, machine (host, GPU model,
memory, driver, CUDA, NCCL, NVSHMEM, MPI) and the settings that change the
timing (HALOEX_PDL, CUDA graphs, MPS, binding, the launcher line
`mpirun --allow-run-as-root --oversubscribe --bind-to none -np N`).
The old script names (bench/md_bench.py, ...) still work.

Usage: python3 bench/haloex_bench.py SUBCOMMAND [ARGS...]   (or: python3 bench SUBCOMMAND ...)
       python3 bench/haloex_bench.py SUBCOMMAND --help
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_common  # noqa: E402


def _md(argv):
    import md_bench
    return md_bench.main(argv)


def _jacobi(argv):
    import jacobi_bench
    return jacobi_bench.main(argv)


def _commbench(argv):
    import commbench
    return commbench.main(argv)


def _exchange_timing(argv):
    import exchange_timing
    return exchange_timing.main(argv)


def _rdc_cost(argv):
    import rdc_cost
    return rdc_cost.main(argv)


def _roofline(argv):
    import roofline
    return roofline.main(argv)


def _kernel_ab(argv):
    import kernel_ab
    return kernel_ab.main(argv)


def _outer_radius(argv):
    import outer_radius
    return outer_radius.main(argv)


def _entry_length(argv):
    import entry_length
    return entry_length.main(argv)


def _gromacs_record(argv):
    import gromacs_record
    return gromacs_record.main(argv)


def _sass_loops(argv):
    import sass_loops
    return sass_loops.main(argv)


def _summarize(argv):
    """summarize_md for haloex-md and GROMACS records; an exchange-timing record as its table."""
    import exchange_timing
    import summarize_md
    paths = [a for a in argv if not a.startswith("-")]
    if len(paths) == 1 and "--help" not in argv and "-h" not in argv and os.path.exists(paths[0]):
        with open(paths[0]) as f:
            rec = json.load(f)
        if isinstance(rec, dict) and rec.get("driver") == "bench/exchange_timing.py":
            return exchange_timing.main(["--show", paths[0]])
    return summarize_md.main(argv)


def _compare_energies(argv):
    import compare_energies
    return compare_energies.main(argv)


def _migrate(argv):
    import migrate_records
    return migrate_records.main(argv)


PLOT_KINDS = ("md dd -> plot_md.py, md scaling -> plot_scaling.py, other haloex-md suites and haloex vs GROMACS "
              "(single, nstlist, hand-made series) -> plot_runs.py, one haloex-md --json run -> plot_run.py, jacobi -> "
              "plot_jacobi.py, commbench -> plot_commbench.py, exchange timing -> plot_exchange_timing.py, rdc cost -> "
              "plot_rdc_cost.py, nstlist fit -> plot_nstlist_fit.py, roofline -> plot_roofline.py, kernel A/B -> plot_kernel_ab.py, SASS loops -> plot_sass_loops.py")


def plot_kind(record):
    """The plot module for a record, by what it holds; None if none fits."""
    if not isinstance(record, dict):
        return None
    benchmark = str(record.get("benchmark", ""))
    tool, driver = record.get("tool"), record.get("driver")
    if benchmark == "haloex-md scaling":
        return "plot_scaling"
    if benchmark == "haloex-md dd":
        return "plot_md"
    if tool == "bench/roofline.py":
        return "plot_roofline"
    if tool == "bench/kernel_ab.py":
        return "plot_kernel_ab"
    if tool == "bench/sass_loops.py":
        return "plot_sass_loops"
    if tool == "bench/jacobi_bench.py" or "sizes" in record and "runs" not in record:
        return "plot_jacobi"
    if tool in ("haloex-commbench", "bench/commbench.py") or (
            isinstance(driver, dict) and driver.get("tool") == "bench/commbench.py"):
        return "plot_commbench"
    if driver == "bench/exchange_timing.py":
        return "plot_exchange_timing"
    if tool == "bench/rdc_cost.py":
        return "plot_rdc_cost"
    if tool == "bench/fit_nstlist.py":
        return "plot_nstlist_fit"
    if tool == "bench/outer_radius.py" or str(tool).startswith("scripts/device/run.sh outer-radius"):
        return "plot_outer_radius"
    if tool == "bench/entry_length.py" or str(tool).startswith("scripts/device/run.sh stage entry-length"):
        return "plot_entry_length"
    runs = record.get("runs")
    if isinstance(runs, list) and any(isinstance(r, dict) and r.get("atoms") for r in runs) or \
            record.get("gromacs_runs"):
        return "plot_runs"
    if record.get("program") == "haloex-md":
        return "plot_run"
    return None


def _plot(argv):
    import importlib
    paths = [a for a in argv if not a.startswith("-")]
    if not paths or "--help" in argv or "-h" in argv:
        print("usage: haloex_bench.py plot RECORD [--out PNG]\n\nPlots a record with the script for its kind: "
              f"{PLOT_KINDS} (matplotlib; see bench/requirements.txt). Without --out the PNG goes to "
              "out/plots/<record name>.png (HALOEX_BENCH_OUT: another folder), never beside the record, so a "
              "committed figure is only replaced when --out names it.")
        return 0 if paths or "--help" in argv or "-h" in argv else 2
    with open(paths[0]) as f:
        record = json.load(f)
    module = plot_kind(record)
    if module is None:
        sys.exit(f"{paths[0]}: no plot for this kind of record (the kinds: {PLOT_KINDS})")
    return importlib.import_module(module).main(argv)


def _headline(argv):
    import headline
    return headline.main(argv)


def _raw_log(argv):
    import raw_log_record
    return raw_log_record.main(argv)


def _model(argv):
    import model
    return model.main(argv)


def _header(argv):
    if "--help" in argv or "-h" in argv:
        print("usage: haloex_bench.py header\n\nPrints, as JSON, the record header bench/ drivers write on this "
              "machine: schema_version, date, commit, machine, settings.")
        return 0
    print(json.dumps(bench_common.record_header("bench/haloex_bench.py header",
                                                launcher=bench_common.launcher_prefix(2)), indent=1))
    return 0


COMMANDS = {
    "md": (_md, "haloex-md suites single, dd, scaling (md_bench.py)"),
    "jacobi": (_jacobi, "haloex-jacobi over every transport and size (jacobi_bench.py)"),
    "commbench": (_commbench, "communication micro-benchmarks (commbench.py)"),
    "exchange-timing": (_exchange_timing, "record of haloex-halo-stress --time-exchanges logs (exchange_timing.py)"),
    "rdc-cost": (_rdc_cost, "the MD kernels with and without relocatable device code, one build (rdc_cost.py)"),
    "roofline": (_roofline, "the non-bonded kernel's roofline per size: pairs, instructions, FP32, occupancy, bound "
                            "(roofline.py, Nsight Compute)"),
    "kernel-ab": (_kernel_ab, "the MD kernels of two builds on one host, alternating: medians, B / A, verdict "
                              "(kernel_ab.py)"),
    "outer-radius": (_outer_radius, "the force kernel against the outer list's radius with the inner list fixed "
                                    "(outer_radius.py)"),
    "entry-length": (_entry_length, "the force kernel at each entry length, rounds alternating (entry_length.py)"),
    "gromacs-record": (_gromacs_record, "haloex-md and GROMACS runs of one call as one record with this machine's "
                                        "header (gromacs_record.py)"),
    "sass-loops": (_sass_loops, "SASS instructions per loop of a kernel, from a compiled object (sass_loops.py)"),
    "plot": (_plot, "the plot of a record, by its kind"),
    "headline": (_headline, "the README's figure from the newest records, with their checksums (headline.py)"),
    "raw-log": (_raw_log, "a record from an allocation's raw summary log, or --check one (raw_log_record.py)"),
    "summarize": (_summarize, "Markdown tables of records (summarize_md.py; --gromacs for haloex vs GROMACS)"),
    "compare-energies": (_compare_energies, "energy series of haloex-md runs against a reference"),
    "migrate": (_migrate, "schema_version for old records (migrate_records.py)"),
    "model": (_model, "the scaling model: step, check RECORD..., predict, params (model.py)"),
    "header": (_header, "the record header of this machine, as JSON"),
}


def usage():
    lines = [__doc__.strip(), "", "subcommands:"]
    lines += [f"  {name:17} {text}" for name, (_, text) in COMMANDS.items()]
    return "\n".join(lines)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage())
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"haloex_bench.py: unknown subcommand {name!r}\n\n{usage()}", file=sys.stderr)
        return 2
    return COMMANDS[name][0](rest) or 0


if __name__ == "__main__":
    sys.exit(main())
