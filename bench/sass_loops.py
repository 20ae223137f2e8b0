#!/usr/bin/env python3
"""The SASS instructions of each loop of a kernel, counted in a compiled object (issue 34: a kernel issue-bound on
instructions gets faster by issuing fewer; this counts them without a GPU).

Disassembles each OBJECT (a .o, .cubin or executable with sm_XX code) with cuobjdump -sass and, for every kernel
whose mangled name contains --kernel (default nonbondedKernel), lists its backward branches -- each from its
target to the branch, with the instructions between, shortest first: the innermost loop (the non-bonded kernel's
j loop) comes first; the warp-divergence fallbacks of shuffles also branch back. Predicated-off instructions
count: they still take an issue slot. With --json the counts go to a record beside the usual header.

cuobjdump comes with the full CUDA toolkit; where the toolkit lacks it (a minimal install), PyPI's
nvidia-cuda-cuobjdump wheel holds it: pip download --no-deps nvidia-cuda-cuobjdump, unzip, --cuobjdump PATH.

Examples:
    python3 bench sass-loops build/proxies/md/cuda/CMakeFiles/haloex_md_kernels.dir/nonbonded.cu.o
    python3 bench sass-loops OBJ --kernel nonbondedKernel --cuobjdump /opt/cuobjdump/bin/cuobjdump --json out.json
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

from bench_common import record_header

FUNCTION = re.compile(r"^\s*Function : (\S+)", re.M)
INSTRUCTION = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
BACKWARD_BRANCH = re.compile(r"\bBRA\b[^;]*?0x([0-9a-f]+)")


def kernels_of(sass):
    """{mangled name: [(address, instruction text)]} of a cuobjdump -sass listing."""
    parts = FUNCTION.split(sass)
    out = {}
    for name, body in zip(parts[1::2], parts[2::2]):
        out[name] = [(int(a, 16), text) for a, text in INSTRUCTION.findall(body)]
    return out


def loops_of(instructions):
    """Each backward branch's loop: {"begin", "end" (hex addresses), "instructions"}, innermost first."""
    loops = []
    for address, text in instructions:
        m = BACKWARD_BRANCH.search(text)
        if m and int(m.group(1), 16) < address:
            target = int(m.group(1), 16)
            count = sum(1 for a, _ in instructions if target <= a <= address)
            loops.append({"begin": hex(target), "end": hex(address), "instructions": count})
    return sorted(loops, key=lambda loop: loop["instructions"])


def short_name(mangled, kernel):
    """The kernel's name with its template arguments as mangled (nonbondedKernelILb0ELb1E): readable enough to
    tell the instantiations apart."""
    m = re.search(re.escape(kernel) + r"(I.*?E)E", mangled)
    return kernel + m.group(1) if m else mangled


def find_cuobjdump(given):
    for candidate in (given, shutil.which("cuobjdump"), "/usr/local/cuda/bin/cuobjdump"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def main(argv=None):
    p = argparse.ArgumentParser(prog="sass_loops.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("objects", nargs="+", metavar="OBJECT",
                   help="compiled objects, cubins or executables with SASS (several: side by side, e.g. A and B "
                        "of a kernel change)")
    p.add_argument("--kernel", default="nonbondedKernel", help="substring of the kernels' mangled names")
    p.add_argument("--cuobjdump", default=None, help="cuobjdump to use (default: PATH, then /usr/local/cuda/bin)")
    p.add_argument("--json", default=None, help="write the counts as a record to this file")
    args = p.parse_args(argv)
    tool = find_cuobjdump(args.cuobjdump)
    if tool is None:
        sys.exit("cuobjdump not found: install the full CUDA toolkit, or pip download --no-deps "
                 "nvidia-cuda-cuobjdump, unzip it and pass --cuobjdump PATH/bin/cuobjdump")
    results = {}
    for obj in args.objects:
        if not os.path.isfile(obj):
            sys.exit(f"{obj}: no such file (build it first, e.g. cmake --build build)")
        run = subprocess.run([tool, "-sass", obj], capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"{tool} -sass {obj} failed: {run.stderr.strip()[:300]}")
        kernels = {name: body for name, body in kernels_of(run.stdout).items() if args.kernel in name}
        if not kernels:
            sys.exit(f"no kernel whose name contains {args.kernel!r} in {obj}")
        results[obj] = {short_name(name, args.kernel): {"mangled": name, "instructions": len(body),
                                                         "loops": loops_of(body)}
                        for name, body in kernels.items()}
        print(obj)
        for name, r in results[obj].items():
            loops = ", ".join(str(loop["instructions"]) for loop in r["loops"]) or "none"
            print(f"  {name}: {r['instructions']} instructions; backward branches' spans (innermost first): {loops}")
    if args.json:
        record = {**record_header("bench/sass_loops.py", {"kernel": args.kernel, "objects": args.objects}),
                  "benchmark": "SASS instructions per loop", "objects": results}
        with open(args.json, "w") as f:
            json.dump(record, f, indent=1)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
