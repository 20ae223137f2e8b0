#!/usr/bin/env python3
"""Migrates the JSON records under bench/results (or the given files and
folders) to carry their schema: records without a schema_version get

  "schema_version": 1 and a "schema_note" saying what their figures meant
  (for haloex-md: us_per_step is the STEADY state; us_per_step_with_search
  includes one-time start-up, so no end-to-end figure), and

  "machine" where it is missing: what the file itself or its path says
  truthfully (the GPU model from haloex-md's "backend", the NCCL version from
  its transport notes, the GPU count from a folder like 2xH200-adhoc, one GPU
  shared by ranks from a name like md-2ranks-1gpu-...), each field with its
  source in "derived_from", the rest in "unknown"; or
  {"unknown": "not recorded at the time"} when nothing can be derived.

No measured number changes: the keys are inserted as text after the opening
brace, the rest of the file is left byte for byte, and the result is checked
(parsed, every old key equal to before). Idempotent: records that carry a
schema_version are left alone. Files of a kind it does not know are reported
and left alone.

Usage: bench/migrate_records.py [PATH...] [--check]
  --check: change nothing; list what would change; exit status 1 if anything
           would (or cannot be migrated).
"""
import argparse
import json
import os
import re
import sys

from bench_common import REPO, SCHEMA_NOTES, nccl_version_from_code

MIGRATED = " Migrated by bench/migrate_records.py: schema_version, schema_note and (where missing) machine added; " \
           "no measured number changed."

SCHEMA1_NOTES = {
    "md-suite": SCHEMA_NOTES[1],
    "md-run": SCHEMA_NOTES[1],
    "jacobi": ("schema 1 (written before records carried a schema_version): a bench/jacobi_bench.py record. It has "
               "no us_per_step: us_per_iter is each transport's median wall time per Jacobi iteration over the timed "
               "runs, speedup and efficiency against the one-GPU run of the whole grid, as haloex-jacobi measured "
               "them. machine is haloex-jacobi's view (GPU, CUDA driver and runtime, the ranks' GPUs); NCCL, "
               "NVSHMEM, MPI versions, HALOEX_PDL and MPS were not recorded (settings.mpirun_args shows the "
               "binding)."),
    "commbench": ("schema 1 (written before records carried a schema_version): a haloex-commbench record written "
                  "through bench/commbench.py. It has no us_per_step: each result row is a latency in us (half a "
                  "round trip for ping-pongs) or a bandwidth in GB/s, median and percentiles over the samples, as "
                  "haloex-commbench measured them. machine is what the ranks saw (GPU, bus ids); driver, CUDA, "
                  "NCCL, NVSHMEM versions, HALOEX_PDL and MPS were not recorded (driver.command shows the launcher "
                  "line)."),
    "exchange-timing": ("schema 1 (written before records carried a schema_version): a bench/exchange_timing.py "
                        "record. It has no us_per_step: forward_us and reverse_us are medians (p10, p90) over the "
                        "exchanges of the slowest rank, per timing mode (stream, graph, graph with an empty kernel in "
                        "place of each exchange). machine is the free text given on the command line; HALOEX_PDL, "
                        "MPS and binding were not recorded."),
}


def kind(rec):
    """The kind of a record, or None for one this script does not know."""
    if not isinstance(rec, dict):
        return None
    if str(rec.get("benchmark", "")).startswith("haloex-md") and isinstance(rec.get("runs"), list):
        return "md-suite"
    if rec.get("program") == "haloex-md":
        return "md-run"
    if rec.get("tool") == "bench/jacobi_bench.py":
        return "jacobi"
    driver = rec.get("driver")
    if rec.get("tool") == "haloex-commbench" or (isinstance(driver, dict) and driver.get("tool") == "bench/commbench.py"):
        return "commbench"
    if driver == "bench/exchange_timing.py":
        return "exchange-timing"
    return None


def derive_machine(rec, relpath):
    """What a record without a machine block says about its machine, truthfully: {fields..., derived_from,
    unknown}, or {"unknown": "not recorded at the time"}."""
    m, source = {}, {}
    backend = rec.get("backend")
    hit = re.match(r"GPU \d+: (.+)", str(backend or ""))
    if hit:
        m["gpu_model"] = hit.group(1).strip()
        source["gpu_model"] = f"the record's backend field ({backend!r}: rank 0's GPU)"
    else:
        hit = re.search(r"(NVIDIA-[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*?)-\d{4}-\d{2}-\d{2}", os.path.basename(relpath))
        if hit:
            m["gpu_model"] = hit.group(1).replace("-", " ")
            source["gpu_model"] = f"the file name {os.path.basename(relpath)}"
    parts = relpath.replace("\\", "/").split("/")
    for part in parts[:-1]:
        hit = re.match(r"(\d+)x([A-Za-z]+\d+)(?:-|$)", part)
        if hit:
            m["gpu_count"] = int(hit.group(1))
            source["gpu_count"] = f"the folder name {part} ({hit.group(1)} x {hit.group(2)})"
            if "gpu_model" not in m:
                m["gpu_model"] = hit.group(2)
                source["gpu_model"] = f"the folder name {part}"
    name = os.path.basename(relpath)
    ranks, gpus = re.search(r"(\d+)ranks?", name), re.search(r"(\d+)gpus?(?![a-z])", name, re.IGNORECASE)
    if gpus:
        m["gpus_used"] = int(gpus.group(1))
        source["gpus_used"] = f"the file name {name}"
        if ranks and int(ranks.group(1)) > int(gpus.group(1)):
            m["shared_gpus"] = True
            source["shared_gpus"] = f"the file name {name} ({ranks.group(1)} ranks on {gpus.group(1)} GPU(s))"
    for note in rec.get("transport_notes", []) or []:
        hit = re.search(r"NCCL (\d{4,})", str(note))
        if hit:
            m["nccl"] = nccl_version_from_code(hit.group(1))
            source["nccl"] = f"the record's transport_notes (NCCL {hit.group(1)})"
            break
    if not m:
        return {"unknown": "not recorded at the time"}
    missing = [f for f in ("host", "driver", "CUDA", "NCCL", "NVSHMEM", "MPI") if f.lower() not in m]
    return {**m, "derived_from": source,
            "unknown": f"{', '.join(missing)}: not recorded at the time"}


def additions(rec, relpath):
    """The keys to add to a record (in order), {} when it needs none; ValueError for a record of unknown kind."""
    if not isinstance(rec, dict):
        raise ValueError("not a JSON object")
    if "schema_version" in rec:
        return {}
    k = kind(rec)
    if k is None:
        raise ValueError("unknown kind of record (not md_bench, haloex-md, jacobi, commbench or exchange timing)")
    add = {"schema_version": 1, "schema_note": SCHEMA1_NOTES[k] + MIGRATED}
    if "machine" not in rec:
        add["machine"] = derive_machine(rec, relpath)
    return add


def insert_keys(text, add):
    """The JSON text with the keys of `add` inserted first in its top-level object, the rest byte for byte."""
    brace = text.index("{")
    if not add:
        return text
    after = text[brace + 1:]
    hit = re.match(r"(\r?\n)([ \t]*)", after)
    if hit and hit.group(2):
        newline, indent = hit.group(1), hit.group(2)
        body = "".join(f"{newline}{indent}{json.dumps(k)}: {json.dumps(v)}," for k, v in add.items())
    else:
        body = "".join(f"{json.dumps(k)}: {json.dumps(v)}, " for k, v in add.items())
    empty = re.match(r"\s*}", after) is not None
    if empty:
        body = body.rstrip(", ")
    return text[:brace + 1] + body + after


def migrate_text(text, relpath):
    """(new text, the keys added) for one record's text; the result is checked: every old key keeps its value."""
    old = json.loads(text)
    add = additions(old, relpath)
    new_text = insert_keys(text, add)
    new = json.loads(new_text)
    if set(new) != set(old) | set(add) or any(new[k] != old[k] for k in old) or any(new[k] != v for k, v in add.items()):
        raise AssertionError(f"{relpath}: the migrated record differs from the original beyond the added keys")
    return new_text, list(add)


def record_files(paths):
    for path in paths:
        if os.path.isdir(path):
            for d, _, files in sorted(os.walk(path)):
                for f in sorted(files):
                    if f.endswith(".json"):
                        yield os.path.join(d, f)
        else:
            yield path


def main(argv=None):
    p = argparse.ArgumentParser(prog="migrate_records.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="*", default=[os.path.join(REPO, "bench", "results")],
                   help="record files or folders (default: bench/results)")
    p.add_argument("--check", action="store_true", help="change nothing; exit 1 if anything would change")
    a = p.parse_args(argv)
    changed, problems, total = 0, 0, 0
    for path in record_files(a.paths):
        total += 1
        rel = os.path.relpath(path, os.path.join(REPO, "bench", "results"))
        if rel.startswith(".."):
            rel = path
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
            new_text, added = migrate_text(text, rel)
        except (ValueError, AssertionError) as e:
            problems += 1
            print(f"{path}: left alone: {e}", file=sys.stderr)
            continue
        if not added:
            continue
        changed += 1
        print(f"{path}: {'would add' if a.check else 'added'} {', '.join(added)}")
        if not a.check:
            tmp = path + ".migrating"
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(new_text)
            os.replace(tmp, path)
    print(f"{total} record(s): {changed} {'to migrate' if a.check else 'migrated'}, {problems} left alone "
          f"(unknown kind or unreadable), {total - changed - problems} already carry a schema_version")
    if a.check and (changed or problems):
        return 1
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
