#!/usr/bin/env python3
"""The scaling model: haloex-md's step on a rank grid, from parts measured on one GPU and by commbench.

  model.py step --atoms N (--ranks P | --grid NXxNYxNZ) [--transport T] [--interconnect nvlink4|ib-ndr] ...
  model.py check RECORD...     predicted beside measured for every multi-GPU run of haloex-md records
  model.py predict             the paper's configurations (NVLink, InfiniBand) and where GPU-initiated stops paying
  model.py params              the calibration and interconnect parameters in use, with their sources

docs/scaling-model.md explains the model. In short: a rank's step is

  steady = tail(n) + launch + max(local(n), exchange_x + nonlocal(W) + exchange_f)

local(n) and tail(n) interpolate the one-GPU runs' local chain and the rest of their step at n home atoms
(every pair is computed by exactly one rank, so a rank's pair work is a one-GPU system of n atoms);
nonlocal(W) is the non-local chain's latency plus the marginal per-atom cost of W = 3/8 of the halo atoms;
the exchanges follow the planner's pulses (haloex-plan) with each transport's latency and bandwidth from
commbench; launch is the host's launches for transports that cannot be captured in a CUDA graph. The end-to-end
step adds a search every nstlist steps, priced from the one-GPU runs.
"""
import argparse
import functools
import json
import math
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_common  # noqa: E402

RESULTS = os.path.join(bench_common.REPO, "bench", "results")
DEFAULT_MD = os.path.join(RESULTS, "md-scaling-4xH200-2026-11-29.json")
DEFAULT_SEARCH = os.path.join(RESULTS, "md-single-NVIDIA-H200-2026-12-01.json")
DEFAULT_COMMBENCH = os.path.join(RESULTS, "commbench-2xH200-2026-11-29.json")
EXCHANGE_TIMING = [os.path.join(RESULTS, "2xH200-adhoc",
                                "exchange-timing-all-transports-4-atoms-per-thread-2026-11-29.json"),
                   os.path.join(RESULTS, "exchange-timing-2xH200-2026-11-29.json")]

BYTES_PER_ATOM = 12      # float3 coordinates forward, float3 forces back
NONLOCAL_PAIR_SHARE = 3.0 / 8.0   # pair work of a halo atom with the home atoms, in home-atom units (docs)
FUSED_THREADS = 256
SMS = 132                # H200

# InfiniBand NDR: stated, not measured here (no NIC on these machines); see docs/scaling-model.md for sources.
# UNVALIDATED: its pulses are priced from commbench primitives plus an assumed latency, while NVLink's first
# pulse (with --exchange-timing) is a measured whole exchange -- not the same basis, so an InfiniBand step can come
# out faster than the NVLink one. The only check is the paper's measured multi-node gain over InfiniBand.
PAPER_IB_MEASURED_GAIN = 1.3
INTERCONNECTS = {
    "nvlink4": {"note": "NVLink 4 (NV18) inside one node: every latency and bandwidth from the commbench record"},
    "ib-ndr": {"note": "InfiniBand NDR between nodes, NVLink 4 inside a node (4 GPUs per node); UNVALIDATED: "
                       "stated inputs on commbench primitives, not measured exchanges; check: the paper's measured "
                       f"{PAPER_IB_MEASURED_GAIN}x",
               "bandwidth_gbs": 50.0, "latency_us": 2.0, "proxy_us": 2.0, "mpi_software_us": 1.0,
               "gpus_per_node": 4},
}
TRANSPORTS = ("staged", "ipc", "nccl", "nvshmem")
PATHS = ("direct", "tma", "put")
PCIE_GBS = 50.0          # pinned host copies of the staged transport (PCIe 5.0 x16, ~64 GB/s raw): stated


class ModelError(Exception):
    pass


# ---- the planner -----------------------------------------------------------------------------------------------

def planner_executable():
    exe = os.environ.get("HALOEX_PLAN") or bench_common.find_executable("haloex-plan")
    if not exe or not os.path.exists(exe):
        raise ModelError("haloex-plan not found (build it: cmake --build build --target haloex-plan, or set "
                         "HALOEX_PLAN=/path/to/haloex-plan)")
    return exe


@functools.lru_cache(maxsize=None)
def plan_of(atoms, grid=None, ranks=None, rlist=0.985, rc=0.9):
    """The planner's plan (JSON of haloex-plan --per-rank) for the lattice start of `atoms` atoms."""
    cmd = [planner_executable(), "--atoms", str(atoms), "--rlist", repr(rlist), "--rc", repr(rc), "--per-rank"]
    cmd += ["--grid", grid] if grid and grid != "auto" else ["--ranks", str(ranks)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise ModelError(f"{' '.join(cmd)}: {done.stderr.strip() or 'exit ' + str(done.returncode)}")
    return json.loads(done.stdout)


# ---- calibration: one-GPU runs and commbench ---------------------------------------------------------------------

def _interp(points, x):
    """Piecewise-linear interpolation through sorted (x, y) points, extrapolated along the end segments."""
    if len(points) == 1:
        return points[0][1] * x / points[0][0]
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        if x <= x1:
            break
    return y0 + (y1 - y0) * (x - x0) / (x1 - x0)


def _one_gpu_runs(record):
    """The one-GPU haloex-md runs of a record (CUDA graphs on, the record's common nstlist first)."""
    runs = [r for r in record.get("runs", []) if isinstance(r, dict) and r.get("ranks") == 1
            and r.get("returncode", 0) == 0 and bench_common.md_figures(r) is not None]
    graphs = [r for r in runs if r.get("cuda_graphs", True) and "graphs=0" not in str(r.get("label", ""))]
    return graphs, [r for r in runs if r not in graphs]


class Calibration:
    """What the model takes from measurements: the one-GPU step, its local chain and search step by size, the
    step without a CUDA graph, and commbench's latencies and bandwidths."""

    def __init__(self, md_records, commbench_record, nstlist=None, rlist=None, exchange_timing=None,
                 search_records=None):
        self.sources = []
        self.exchange = ExchangeTiming(exchange_timing) if exchange_timing else None
        runs, nograph = [], []
        for path, rec in md_records:
            g, n = _one_gpu_runs(rec)
            g = [r for r in g if (nstlist is None or r.get("settings", {}).get("nstlist") == nstlist)
                 and (rlist is None or abs(r.get("settings", {}).get("rlist", 0) - rlist) < 1e-6)
                 and "search=host" not in str(r.get("label", ""))]
            if g:
                self.sources.append(os.path.relpath(path, bench_common.REPO))
            runs += g
            nograph += n
        if len(runs) < 2:
            raise ModelError("the calibration needs one-GPU haloex-md runs at two sizes at least (label 1gpu, ranks 1)"
                             f"{' at nstlist ' + str(nstlist) if nstlist else ''}; none or one in "
                             f"{[os.path.relpath(p, bench_common.REPO) for p, _ in md_records]}")
        by_atoms = {}
        for r in runs:
            by_atoms.setdefault(r["atoms"], []).append(r)
        self.local, self.tail, self.search_ms, self.sizes = [], [], [], []
        for n in sorted(by_atoms):
            rs = by_atoms[n]
            steady = _mean(bench_common.md_figures(r).us_per_step_steady for r in rs)
            local = _mean(r.get("timing", {}).get("local_us") or steady for r in rs)
            self.sizes.append(n)
            self.local.append((n, local))
            self.tail.append((n, steady - local))
            s = _mean(_search_ms(r) for r in rs)
            if s is not None:
                self.search_ms.append((n, s))
        if search_records:   # the search step from other one-GPU runs (e.g. schema 2: on the device, start-up apart)
            self.search_ms = _search_points(search_records, nstlist, rlist)
            self.sources += [os.path.relpath(p, bench_common.REPO) + " (search step)" for p, _ in search_records]
        (n0, l0), (n1, l1) = self.local[0], self.local[1]
        # The local chain (gather, forces, scatter) when the GPU is not full: the intercept of the smallest sizes.
        self.chain_us = max(0.0, min(l0, l0 - (l1 - l0) / (n1 - n0) * n0))
        (na, la), (nb, lb) = self.local[-2], self.local[-1]
        self.us_per_atom = (lb - la) / (nb - na)   # marginal cost: the GPU full
        self.node_us = self.chain_us / 3.0         # one kernel of that chain
        pairs = [(g, n) for g in runs for n in nograph if g["atoms"] == n["atoms"]]
        self.nograph_us = (_mean(bench_common.md_figures(n).us_per_step_steady
                                 - bench_common.md_figures(g).us_per_step_steady for g, n in pairs)
                           if pairs else 2.5)
        self.nograph_source = "one-GPU runs with and without graphs" if pairs else "stated default (2.5 us)"
        self.comm = CommParams(commbench_record[1])
        self.sources.append(os.path.relpath(commbench_record[0], bench_common.REPO))

    def local_us(self, n):
        return max(self.chain_us, _interp(self.local, n))

    def tail_us(self, n):
        return max(0.0, _interp(self.tail, n))

    def search_us(self, n):
        return _interp(self.search_ms, n) * 1000.0 if len(self.search_ms) >= 2 else None

    def describe(self):
        lines = [f"calibration: {', '.join(self.sources)}",
                 "  one-GPU steady step = local chain + tail, by atoms: " + ", ".join(
                     f"{n}: {l:.1f} + {t:.1f}" for (n, l), (_, t) in zip(self.local, self.tail)),
                 f"  local chain latency {self.chain_us:.1f} us (one kernel {self.node_us:.1f} us); marginal "
                 f"{self.us_per_atom * 1000:.3f} us per 1000 atoms",
                 f"  step without a CUDA graph: +{self.nograph_us:.1f} us ({self.nograph_source})"]
        if self.search_ms:
            lines.append("  search step, ms: " + ", ".join(f"{n}: {s:.2f}" for n, s in self.search_ms))
        lines += ["  " + line for line in self.comm.describe()]
        if self.exchange:
            lines += ["  " + line for line in self.exchange.describe()]
        return lines


def _mean(values):
    vs = [v for v in values if v is not None]
    return sum(vs) / len(vs) if vs else None


def _search_points(records, nstlist, rlist):
    pts = {}
    for path, rec in records:
        g, _ = _one_gpu_runs(rec)
        for r in g:
            st = r.get("settings", {})
            if "search=host" in str(r.get("label", "")) or (nstlist and st.get("nstlist") != nstlist) \
                    or (rlist and abs(st.get("rlist", 0) - rlist) > 1e-6):
                continue
            v = _search_ms(r)
            if v is not None:
                pts.setdefault(r["atoms"], []).append(v)
    if len(pts) < 2:
        raise ModelError(f"no one-GPU search steps at two sizes (nstlist {nstlist}) in "
                         f"{[os.path.relpath(p, bench_common.REPO) for p, _ in records]}")
    return [(n, _mean(v)) for n, v in sorted(pts.items())]


def _search_ms(run):
    """One search step's cost, ms, transport set-up apart (schema 2: search_step_ms; schema 1: the search phases'
    totals over the run, start-up included, per search)."""
    figs = bench_common.md_figures(run)
    if figs.schema >= 2:
        return figs.search_step_ms
    phases = run.get("search_phases_ms") or {}
    if not phases or not run.get("search_steps"):
        return None
    return (sum(phases.values()) - phases.get("transport set-up", 0.0)) / run["search_steps"]


class CommParams:
    """Latencies (us) and bandwidths (GB/s) of NVLink 4 from a haloex-commbench record (medians)."""

    def __init__(self, record):
        rows = record.get("results", [])

        def rows_of(bench, variant=None):
            return sorted((r["bytes"], r["median"]) for r in rows if r.get("benchmark") == bench
                          and not r.get("skipped") and (variant is None or r.get("variant") == variant))

        def one(bench, variant, size):
            for b, v in rows_of(bench, variant):
                if b == size:
                    return v
            raise ModelError(f"the commbench record has no {bench} {variant or ''} at {size} B")

        self.direct_lat = one("direct_store_flag", "block", 8)
        self.tma_lat = one("tma_store_flag", "block", 1024)
        self.put_lat = one("put_signal_pingpong", "block", 8)
        self.copy_sync = one("memcpy_peer_event", None, 8)        # a device operation the host waits for
        self.ipc_handoff = one("memcpy_peer_pingpong", None, 8)   # copy, stream sync, MPI notification
        self.mpi = rows_of("mpi_pingpong")
        self.nccl = rows_of("nccl_pingpong")
        stores = rows_of("store_bandwidth")
        puts = rows_of("put_bandwidth")
        self.store_block_bw = _at(stores, 65536)   # one block's stores
        self.put_block_bw = _at(puts, 65536)       # one block's putmem_nbi_block
        self.nvlink_bw = max(v for _, v in stores)
        self.memcpy_bw = rows_of("memcpy_peer_bandwidth")

    def describe(self):
        return [f"NVLink (commbench): flag after direct stores {self.direct_lat:.2f} us, TMA {self.tma_lat:.2f}, "
                f"put-with-signal {self.put_lat:.2f}; copy + host wait {self.copy_sync:.2f}; ipc hand-off "
                f"{self.ipc_handoff:.2f}; NCCL send/recv {self.nccl[0][1]:.2f} (8 B); MPI host {self.mpi[0][1]:.2f}",
                f"NVLink bandwidth: one block's stores {self.store_block_bw:.0f} GB/s, puts "
                f"{self.put_block_bw:.0f}, peak {self.nvlink_bw:.0f}"]

    def bulk_us(self, nbytes, bw_curve):
        """A copy-engine or NCCL transfer: bytes over the measured bandwidth at that size (its latency apart)."""
        return nbytes / 1e3 / max(_loglog(bw_curve, max(nbytes, 8)), 1e-6) if nbytes else 0.0


class ExchangeTiming:
    """Whole exchanges measured by haloex-halo-stress --time-exchanges (bench/exchange_timing.py records): per
    transport and path, forward and reverse time of a one-pulse exchange at two halo sizes, as a + bytes * c.
    Optional (--exchange-timing): an exchange micro-benchmark on two GPUs, not an MD run; it holds what commbench's
    primitives leave out (the fused kernels' pack, fences, block counters and force pull; the host's launches and
    waits of the CPU-orchestrated transports)."""

    def __init__(self, records):
        self.sources = [os.path.relpath(path, bench_common.REPO) for path, _ in records]
        self.fits = {}
        for path, record in records:   # a later record's transports replace an earlier one's
            self.fits.update(self._fits(path, record))
        if not self.fits:
            raise ModelError(f"{', '.join(self.sources)}: no one-pulse exchange timings at two sizes")

    @staticmethod
    def _fits(path, record):
        by_key = {}
        for r in record.get("results", []):
            if r.get("pulses") != 1 or "empty kernel" in str(r.get("timing")):
                continue
            t = r.get("transport")
            key = (t, r.get("path") if t == "nvshmem" else "")
            # nvshmem as the MD step runs it: replayed from a graph; the others are host-launched
            if t == "nvshmem" and r.get("timing") != "graph":
                continue
            by_key.setdefault(key, []).append((r["coordinate_bytes_per_rank"], r["forward_us"]["median"],
                                               r["reverse_us"]["median"]))
        fits = {}
        for key, pts in by_key.items():
            pts.sort()
            if len(pts) < 2:
                continue
            (b0, f0, r0), (b1, f1, r1) = pts[0], pts[-1]
            slopes = [max(0.0, (y1 - y0) / (b1 - b0)) for y0, y1 in ((f0, f1), (r0, r1))]
            fits[key] = ((f0 - slopes[0] * b0, slopes[0]), (r0 - slopes[1] * b0, slopes[1]))
        return fits

    def us(self, transport, path, direction, nbytes):
        fit = self.fits.get((transport, path if transport == "nvshmem" else ""))
        if fit is None:
            return None
        a, c = fit[0 if direction == "x" else 1]
        return a + c * nbytes

    def describe(self):
        return [f"exchange timing ({', '.join(self.sources)}): " + "; ".join(
            f"{t}{'/' + p if p else ''} x {fx[0]:.1f} + {fx[1] * 1e3:.3f}/kB, f {ff[0]:.1f} + {ff[1] * 1e3:.3f}/kB"
            for (t, p), (fx, ff) in sorted(self.fits.items()))]


def _at(curve, size):
    for b, v in curve:
        if b == size:
            return v
    return _loglog(curve, size)


def _loglog(curve, x):
    pts = [(math.log(b), math.log(v)) for b, v in curve if b > 0 and v > 0]
    return math.exp(_interp(pts, math.log(x)))


# ---- the step ----------------------------------------------------------------------------------------------------

def exchange_us(cal, transport, path, nbytes, atoms, pulses, remote, link):
    """One direction of one pulse: what it adds to the non-local chain (its kernel or host launch apart)."""
    c = cal.comm
    if transport == "nvshmem":
        blocks = max(1, min(math.ceil(atoms / FUSED_THREADS), SMS // (4 * max(1, pulses))))
        if remote:   # put-with-signal over InfiniBand (the path auto takes where nvshmem_ptr is null)
            lat = link["latency_us"] + (0.0 if link.get("ibgda", True) else link["proxy_us"])
            return lat + nbytes / 1e3 / link["bandwidth_gbs"]
        if path == "put":   # one block puts the packed slot
            return c.put_lat + nbytes / 1e3 / c.put_block_bw
        lat = c.tma_lat if path == "tma" else c.direct_lat
        return lat + nbytes / 1e3 / min(c.nvlink_bw, blocks * c.store_block_bw)
    if transport == "nccl":
        if remote:
            return _loglog(c.nccl, 8) - c.direct_lat + link["latency_us"] + nbytes / 1e3 / link["bandwidth_gbs"]
        return _loglog(c.nccl, max(nbytes, 8))
    if transport == "ipc":
        if remote:
            raise ModelError("ipc (CUDA IPC) cannot reach another node; use staged, nccl or nvshmem")
        # pack kernel + host wait, then copy + stream sync + MPI notification
        return c.copy_sync + c.ipc_handoff + c.bulk_us(nbytes, c.memcpy_bw)
    if transport == "staged":
        # pack + copy to the host + host wait, MPI_Sendrecv of host buffers, copy back + wait
        mpi = _loglog(c.mpi, max(nbytes, 8))
        if remote:
            mpi = link["latency_us"] + link["mpi_software_us"] + nbytes / 1e3 / link["bandwidth_gbs"]
        return 2 * c.copy_sync + mpi + 2 * nbytes / 1e3 / PCIE_GBS
    raise ModelError(f"unknown transport {transport!r}: use one of {', '.join(TRANSPORTS)}")


def _measured_exchanges(cal, transport, path, rank, node):
    """(forward, reverse) us of the rank's first pulse from the exchange-timing record, when the calibration has
    one and every pulse stays on the node (the record is NVLink); else None."""
    if cal.exchange is None or any(node[p["send_rank"]] != node[rank["rank"]] for p in rank["pulses"]):
        return None
    if not rank["pulses"]:
        return None
    first = rank["pulses"][0]
    fx = cal.exchange.us(transport, path, "x", first["send"] * BYTES_PER_ATOM)
    ff = cal.exchange.us(transport, path, "f", first["recv"] * BYTES_PER_ATOM)
    return None if fx is None or ff is None else (fx, ff)


def rank_nodes(plan, gpus_per_node):
    return [r // gpus_per_node for r in range(plan["ranks"])]


def step(cal, plan, transport, path="direct", interconnect="nvlink4", ibgda=True, compute_scale=1.0):
    """The predicted steady step (us) of the slowest rank, and its parts."""
    link = dict(INTERCONNECTS[interconnect], ibgda=ibgda)
    gpn = link.get("gpus_per_node", plan["ranks"])
    node = rank_nodes(plan, gpn)
    graph = transport == "nvshmem"
    worst = None
    for r in plan["per_rank"]:
        n, halo = r["home"], r["halo"]
        local = cal.local_us(n) * compute_scale
        tail = cal.tail_us(n) * compute_scale
        w = NONLOCAL_PAIR_SHARE * halo
        nonlocal_kernels = cal.chain_us + cal.us_per_atom * w * compute_scale
        x = f = 0.0
        npulses = len(r["pulses"])
        for p in r["pulses"]:
            remote = node[p["send_rank"]] != node[r["rank"]]
            x += exchange_us(cal, transport, path, p["send"] * BYTES_PER_ATOM, p["send"], npulses, remote, link)
            f += exchange_us(cal, transport, path, p["recv"] * BYTES_PER_ATOM, p["recv"], npulses,
                             node[p["recv_rank"]] != node[r["rank"]], link)
        measured = _measured_exchanges(cal, transport, path, r, node)
        if measured:   # whole exchanges measured: they replace the first pulse's primitives and the kernel node
            x, f = measured[0] + x * (npulses - 1) / npulses, measured[1] + f * (npulses - 1) / npulses
        if graph:   # one fused kernel per direction, each a node of the step's graph
            if not measured:
                x += cal.node_us
                f += cal.node_us
            launch = 0.0
        else:       # host-launched kernels: the step's launches, one pack/unpack launch per pulse and direction
            launch = cal.nograph_us
        chain = x + nonlocal_kernels + f
        total = tail + launch + max(local, chain)
        parts = {"local": local, "tail": tail, "launch": launch, "exchange_x": x, "nonlocal": nonlocal_kernels,
                 "exchange_f": f, "exposed": max(0.0, chain - local), "home": n, "halo": halo}
        if worst is None or total > worst[0]:
            worst = (total, parts)
    return worst


def end_to_end(cal, plan, steady, nstlist, interconnect="nvlink4"):
    """All steps: a search every nstlist steps, priced as a one-GPU search of the rank's local atoms plus the
    search's messages (migration and the plan, two per pulse, each a host-waited hand-off)."""
    r = max(plan["per_rank"], key=lambda q: q["home"] + q["halo"])
    s = cal.search_us(r["home"] + r["halo"])
    if s is None:
        return None
    msgs = 2 * plan["pulses"] + 2 * sum(1 for d in plan["pulses_per_dim"] if d)
    s += msgs * cal.comm.ipc_handoff
    return steady + (s - steady) / nstlist


# ---- check: predicted beside measured -------------------------------------------------------------------------

def check_rows(path, record, commbench, exchange_timing=None):
    cal = Calibration([(path, record)], commbench, nstlist=_common(record, "nstlist"), rlist=_common(record, "rlist"),
                      exchange_timing=exchange_timing)
    rows = []
    for run in record.get("runs", []):
        if not isinstance(run, dict) or (run.get("ranks") or 1) < 2 or run.get("returncode", 0) != 0:
            continue
        figs = bench_common.md_figures(run)
        if figs is None:
            continue
        st = run.get("settings", {})
        transport = run.get("transport")
        p = st.get("nvshmem_path", "auto") if transport == "nvshmem" else ""
        p = "direct" if p == "auto" else p
        plan = plan_of(run["atoms"], grid=run.get("grid"), rlist=st.get("rlist", 0.985), rc=st.get("rc", 0.9))
        pred, parts = step(cal, plan, transport, p or "direct")
        nstlist = st.get("nstlist") or 50
        pred_e2e = end_to_end(cal, plan, pred, nstlist)
        meas_e2e, e2e_kind = measured_end_to_end(run)
        rows.append({"record": os.path.basename(path), "atoms": run["atoms"], "grid": run.get("grid"),
                     "transport": transport + (f"/{p}" if p else ""), "steady": figs.us_per_step_steady,
                     "steady_pred": pred, "e2e": meas_e2e, "e2e_pred": pred_e2e, "e2e_kind": e2e_kind,
                     "parts": parts, "timing": run.get("timing", {})})
    return cal, rows


def _common(record, key):
    values = {r.get("settings", {}).get(key) for r in record.get("runs", []) if isinstance(r, dict)}
    values.discard(None)
    return values.pop() if len(values) == 1 else None


def measured_end_to_end(run):
    """(us, kind): schema 2: us_per_step; schema 1: us_per_step_with_search less the transport set-up's total
    (schema 1 folded one-time start-up, NVSHMEM and NCCL initialisation, into the search steps)."""
    figs = bench_common.md_figures(run)
    if figs.schema >= 2:
        return figs.us_per_step, "all steps"
    ws = run.get("us_per_step_with_search")
    if ws is None:
        return None, None
    setup = (run.get("search_phases_ms") or {}).get("transport set-up", 0.0)
    return ws - setup * 1000.0 / run["steps"], "all steps less transport set-up (schema 1)"


def _err(pred, meas):
    return None if pred is None or not meas else 100.0 * (pred - meas) / meas


def print_check(paths, commbench_path, exchange_timing_paths=None):
    commbench = (commbench_path, bench_common.load_record(commbench_path))
    timing = _records(exchange_timing_paths) if exchange_timing_paths else None
    all_rows = []
    for path in paths:
        record = bench_common.load_record(path)
        cal, rows = check_rows(path, record, commbench, timing)
        print(f"## {os.path.relpath(path, bench_common.REPO) if os.path.isabs(path) else path}\n")
        for line in cal.describe():
            print(line)
        print()
        if not rows:
            print("(no multi-GPU haloex-md runs in this record)\n")
            continue
        kinds = {r["e2e_kind"] for r in rows if r["e2e_kind"]}
        print("| atoms | grid | transport | steady measured | steady model | error | "
              f"{' / '.join(sorted(kinds)) or 'all steps'} measured | model | error | model parts: local / exchange x "
              "/ non-local / exchange f / exposed |")
        print("|---:|---|---|---:|---:|---:|---:|---:|---:|---|")
        for r in rows:
            pt = r["parts"]
            print(f"| {r['atoms']} | {r['grid']} | {r['transport']} | {r['steady']:.1f} | {r['steady_pred']:.1f} | "
                  f"{_fmt_err(_err(r['steady_pred'], r['steady']))} | {bench_common.fmt(r['e2e'])} | "
                  f"{bench_common.fmt(r['e2e_pred'])} | {_fmt_err(_err(r['e2e_pred'], r['e2e']))} | "
                  f"{pt['local']:.1f} / {pt['exchange_x']:.1f} / {pt['nonlocal']:.1f} / {pt['exchange_f']:.1f} / "
                  f"{pt['exposed']:.1f} |")
        print()
        all_rows += rows
    summarize(all_rows)
    return all_rows


def _fmt_err(e):
    return "n/a" if e is None else f"{e:+.1f} %"


def summarize(rows):
    def line(name, errs, goal):
        errs = [abs(e) for e in errs if e is not None]
        if not errs:
            print(f"{name}: no figures")
            return
        within = sum(1 for e in errs if e <= goal)
        print(f"{name}: mean |error| {sum(errs) / len(errs):.1f} %, largest {max(errs):.1f} %, "
              f"{within} of {len(errs)} within {goal:.0f} %")
    line("steady", [_err(r["steady_pred"], r["steady"]) for r in rows], 10)
    line("end-to-end", [_err(r["e2e_pred"], r["e2e"]) for r in rows], 15)


# ---- predict: the paper's configurations ----------------------------------------------------------------------

# What the paper reports (arXiv:2509.21527; NVSHMEM vs MPI in GROMACS 2026): see docs/scaling-model.md.
PAPER_NVLINK = [(45000, 4), (180000, 8), (360000, 8)]
PAPER_IB_NODES = [2, 4, 8, 16, 32, 64]
PAPER_IB_SIZES = [180000, 360000, 1440000]
NSTLIST = 50
MAX_PREDICT_ATOMS = 8_400_000   # haloex-plan builds the whole lattice start in one process


def predict_row(cal, atoms, gpus, interconnect, ibgda=True, compute_scale=1.0):
    plan = plan_of(atoms, ranks=gpus)
    nv, parts = step(cal, plan, "nvshmem", "direct", interconnect, ibgda, compute_scale)
    cpu_transports = ("staged", "ipc", "nccl") if interconnect == "nvlink4" else ("staged", "nccl")
    cpu = None
    for t in cpu_transports:
        try:
            us, _ = step(cal, plan, t, interconnect=interconnect, compute_scale=compute_scale)
        except ModelError:
            continue
        if cpu is None or us < cpu[0]:
            cpu = (us, t)
    nv_all, cpu_all = end_to_end(cal, plan, nv, NSTLIST), end_to_end(cal, plan, cpu[0], NSTLIST)
    return {"atoms": atoms, "gpus": gpus, "grid": plan["grid"], "pulses": plan["pulses"],
            "atoms_per_gpu": atoms // gpus, "nvshmem": nv, "cpu": cpu[0], "cpu_transport": cpu[1],
            "gain": cpu[0] / nv, "exposed": parts["exposed"],
            "gain_all": cpu_all / nv_all if nv_all and cpu_all else None}


def crossover(cal, gpus, interconnect, ibgda=True, compute_scale=1.0, threshold=1.05):
    """The smallest atoms per GPU (doubling from 2 000, up to MAX_PREDICT_ATOMS in all) at which the gain falls below
    `threshold`."""
    per_gpu = 2000
    while per_gpu * gpus <= MAX_PREDICT_ATOMS:
        atoms = per_gpu * gpus
        atoms += atoms % 2
        try:
            row = predict_row(cal, atoms, gpus, interconnect, ibgda, compute_scale)
        except ModelError:
            per_gpu *= 2
            continue
        if row["gain"] < threshold:
            return row
        per_gpu *= 2
    return None


def print_predict(cal, compute_scale, ibgda):
    print("Predictions (not measurements). haloex-md's proxy step"
          + (f" with the compute scaled by {compute_scale:g}" if compute_scale != 1 else "") + "; nvshmem direct "
          "inside a node, put over InfiniBand" + (" (IBGDA)" if ibgda else " (IBRC proxy thread)") + ".\n")
    print("| configuration | atoms | GPUs | grid (pulses) | atoms/GPU | nvshmem us, steady | best CPU-orchestrated us, steady | "
          f"gain (all steps, nstlist {NSTLIST}) | gain (steady) | exposed us (nvshmem, steady) |")
    print("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    for atoms, gpus in PAPER_NVLINK:
        _print_row("NVLink, one node", predict_row(cal, atoms, gpus, "nvlink4", ibgda, compute_scale))
    ib_rows = []
    for atoms in PAPER_IB_SIZES:
        for nodes in PAPER_IB_NODES:
            try:
                row = predict_row(cal, atoms, 4 * nodes, "ib-ndr", ibgda, compute_scale)
            except ModelError as e:
                print(f"| {nodes} nodes x 4, InfiniBand (unvalidated) | {atoms} | {4 * nodes} | refused: {e} "
                      "| | | | | | |")
                continue
            ib_rows.append(row)
            _print_row(f"{nodes} nodes x 4, InfiniBand (unvalidated)", row)
    print()
    for line in ib_check(ib_rows):
        print(line)
    print("\nWhere GPU-initiated stops paying (steady-state gain below 1.05x; atoms per GPU doubled from 2 000):\n")
    for gpus, ic, name in ((8, "nvlink4", "8 GPUs, NVLink"), (16, "ib-ndr", "4 nodes x 4, InfiniBand"),
                           (64, "ib-ndr", "16 nodes x 4, InfiniBand"), (256, "ib-ndr", "64 nodes x 4, InfiniBand")):
        row = crossover(cal, gpus, ic, ibgda, compute_scale)
        if row is None:
            print(f"* {name}: gain above 1.05x up to {MAX_PREDICT_ATOMS // gpus} atoms per GPU (not scanned further)")
        else:
            print(f"* {name}: from ~{row['atoms_per_gpu']} atoms per GPU ({row['atoms']} atoms): gain "
                  f"{row['gain']:.2f}x (nvshmem {row['nvshmem']:.1f} us, {row['cpu_transport']} {row['cpu']:.1f} us)")


def ib_check(rows):
    """What the unvalidated InfiniBand predictions say against their only check, the paper's measured gain."""
    if not rows:
        return []
    gains = [r["gain"] for r in rows]
    above = sum(g > PAPER_IB_MEASURED_GAIN for g in gains)
    return [f"InfiniBand rows: UNVALIDATED (stated NDR bandwidth and an assumed {INTERCONNECTS['ib-ndr']['latency_us']:g} us "
            "per put on commbench primitives, while NVLink's first pulse is a measured exchange: not the same basis).",
            f"Check against the paper's measured {PAPER_IB_MEASURED_GAIN}x over InfiniBand: steady gains "
            f"{min(gains):.2f}-{max(gains):.2f}x, {above} of {len(gains)} above it."]


def _print_row(name, row):
    print(f"| {name} | {row['atoms']} | {row['gpus']} | {row['grid']} ({row['pulses']}) | {row['atoms_per_gpu']} | "
          f"{row['nvshmem']:.1f} | {row['cpu']:.1f} ({row['cpu_transport']}) | "
          f"{bench_common.fmt(row['gain_all'], '.2f')}x | {row['gain']:.2f}x | {row['exposed']:.1f} |")


# ---- command line ---------------------------------------------------------------------------------------------

def _records(paths):
    return [(p, bench_common.load_record(p)) for p in paths]


def _search_records(paths):
    if paths == ["none"]:
        return None
    return _records(paths or [DEFAULT_SEARCH])


def main(argv=None):
    ap = argparse.ArgumentParser(prog="model.py", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    sub = ap.add_subparsers(dest="command")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--calibration", nargs="+", default=None, metavar="RECORD",
                        help=f"haloex-md records whose one-GPU runs calibrate the model (default: "
                             f"{os.path.relpath(DEFAULT_MD, bench_common.REPO)})")
    common.add_argument("--commbench", default=DEFAULT_COMMBENCH, metavar="RECORD",
                        help="haloex-commbench record of the NVLink latencies and bandwidths (default: %(default)s)")
    common.add_argument("--exchange-timing", nargs="+", metavar="RECORD",
                        help="also calibrate the NVLink exchanges on whole exchanges measured by haloex-halo-stress "
                             "--time-exchanges (see check --help)")
    common.add_argument("--search-calibration", nargs="+", default=None, metavar="RECORD",
                        help="one-GPU runs that price the search step (default: "
                             f"{os.path.relpath(DEFAULT_SEARCH, bench_common.REPO)}: search on the device, schema 2; "
                             "'none': the --calibration runs' own)")
    common.add_argument("--nstlist", type=int, default=50, help="search interval of the calibration runs and of "
                                                                "the end-to-end step (default: %(default)s)")
    sp = sub.add_parser("step", parents=[common], help="the predicted step of one configuration")
    sp.add_argument("--atoms", type=int, required=True)
    sp.add_argument("--ranks", type=int)
    sp.add_argument("--grid", default="auto")
    sp.add_argument("--rlist", type=float, default=0.985)
    sp.add_argument("--transport", choices=TRANSPORTS, default="nvshmem")
    sp.add_argument("--path", choices=PATHS, default="direct")
    sp.add_argument("--interconnect", choices=sorted(INTERCONNECTS), default="nvlink4")
    sp.add_argument("--no-ibgda", action="store_true", help="InfiniBand puts through NVSHMEM's proxy thread")
    sc = sub.add_parser("check", help="predicted beside measured for the multi-GPU runs of haloex-md records, each "
                                      "calibrated only on its own one-GPU runs and the commbench record")
    sc.add_argument("records", nargs="+", metavar="RECORD")
    sc.add_argument("--commbench", default=DEFAULT_COMMBENCH, metavar="RECORD")
    sc.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    sc.add_argument("--exchange-timing", nargs="+", metavar="RECORD",
                    help="also calibrate on whole one-pulse exchanges measured by haloex-halo-stress "
                         "--time-exchanges (later records replace earlier ones' transports; e.g. "
                         f"{' '.join(os.path.relpath(p, bench_common.REPO) for p in EXCHANGE_TIMING)}): shows what "
                         "commbench's primitives leave out")
    pp = sub.add_parser("predict", parents=[common], help="the paper's configurations and the crossover")
    pp.add_argument("--compute-scale", type=float, default=1.0,
                    help="scale the one-GPU compute (e.g. GROMACS's step over haloex's, ~1.5 on one H200)")
    pp.add_argument("--no-ibgda", action="store_true")
    sub.add_parser("params", parents=[common], help="the calibration and interconnect parameters, with sources")
    args = ap.parse_args(argv)
    if args.command is None:
        ap.print_help()
        return 2
    try:
        if args.command == "check":
            rows = print_check(args.records, args.commbench, args.exchange_timing)
            if args.json:
                with open(args.json, "w") as f:
                    json.dump(rows, f, indent=1)
            return 0
        md = _records(args.calibration or [DEFAULT_MD])
        cal = Calibration(md, (args.commbench, bench_common.load_record(args.commbench)), nstlist=args.nstlist,
                          exchange_timing=_records(args.exchange_timing) if args.exchange_timing else None,
                          search_records=_search_records(args.search_calibration))
        if args.command == "params":
            for line in cal.describe():
                print(line)
            for name, ic in INTERCONNECTS.items():
                print(f"{name}: " + ", ".join(f"{k} {v}" for k, v in ic.items()))
            return 0
        if args.command == "predict":
            print_predict(cal, args.compute_scale, not args.no_ibgda)
            return 0
        plan = plan_of(args.atoms, grid=args.grid, ranks=args.ranks, rlist=args.rlist)
        us, parts = step(cal, plan, args.transport, args.path, args.interconnect, not args.no_ibgda)
        e2e = end_to_end(cal, plan, us, args.nstlist)
        print(f"{args.atoms} atoms, grid {plan['grid']} ({plan['pulses']} pulses), {args.transport}"
              f"{'/' + args.path if args.transport == 'nvshmem' else ''} over {args.interconnect}")
        print(f"steady {us:.1f} us/step; all steps (nstlist {args.nstlist}) {bench_common.fmt(e2e)} us/step")
        print("parts of the slowest rank: " + ", ".join(f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}"
                                                         for k, v in parts.items()))
        return 0
    except (ModelError, bench_common.SchemaError, OSError) as e:
        print(f"model.py: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
