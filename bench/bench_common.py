"""What the benchmark drivers share: finding a built executable and the
environment for launching it under mpirun; the plot scripts' command line,
matplotlib and PNG output."""
import argparse
import glob
import json
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def launcher_environment():
    """NVLink multicast off whatever the caller's environment says (it can take
    a shared host's GPUs down); OpenMPI refuses to run as root unless told
    twice (containers run as root)."""
    env = dict(os.environ, NVSHMEM_DISABLE_NVLS="1", NCCL_NVLS_ENABLE="0", TORCH_SYMM_MEM_DISABLE_MULTICAST="1")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    return env


def find_executable(name):
    """The newest build*/bin/<name> of this checkout, or None."""
    candidates = sorted(glob.glob(os.path.join(REPO, "build*", "bin", name)), key=os.path.getmtime, reverse=True)
    return candidates[0] if candidates else None


def plot_command_line(description):
    """The plot scripts' command line (a record, --out): (args, the record's JSON)."""
    p = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("record", help="a JSON record written by a bench/ driver")
    p.add_argument("--out", help="PNG file (default: the record's name with .png)")
    args = p.parse_args()
    with open(args.record) as f:
        return args, json.load(f)


def pyplot():
    """matplotlib.pyplot on a file-only backend, or exit saying how to get it."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("matplotlib is needed: pip install matplotlib")
    return plt


def save_png(fig, record, out=None, dpi=120):
    """Writes the figure to `out`, or beside the record (same name, .png), and says where."""
    path = out or os.path.splitext(record)[0] + ".png"
    fig.savefig(path, dpi=dpi)
    print(f"wrote {path}")
    return path
