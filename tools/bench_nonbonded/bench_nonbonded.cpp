// haloex-bench-nonbonded: times the MD kernels of one rank holding the whole
// system (all atoms home): pair search (build), the local non-bonded step
// (gather + kernel + scatter), the leapfrog update, and a whole step
// (clear forces + local non-bonded + update) launched on a stream and
// replayed as a CUDA graph. Prints a table and JSON (docs/md-engine.md system).
// haloex-bench-nonbonded-rdc is the same program over the same kernels built
// as relocatable device code (-rdc): bench/rdc_cost.py runs both.
//
//   haloex-bench-nonbonded [--sizes 11250,22500,...] [--steps 200] [--rlist 1.0]
//                          [--rlist-inner R --prune-parts N] [--as-md] [--json FILE] [--seed N]
// --as-md: the pair-list settings haloex-md resolves for one GPU at each size
// (rlist, nstlist, the rolling prune's inner radius and parts), so the kernel
// timed, and profiled by bench/roofline.py, is the one an MD step runs.
// --rlist-inner / --prune-parts: the rolling prune at a chosen outer radius
// (--rlist), to price the outer list's radius with the inner one held fixed.
#include <cuda_runtime.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fmt/format.h>
#include <map>
#include <string>
#include <vector>

#include "haloex/core/error.hpp"
#include "haloex/cuda/device_buffer.hpp"
#include "haloex/md/gpu/integrate.hpp"
#include "haloex/md/gpu/nonbonded.hpp"
#include "haloex/md/engine.hpp"
#include "haloex/md/system.hpp"

using namespace haloex;
using namespace haloex::md::gpu;

namespace {

// How the kernels this program links were compiled (set by CMake per target).
constexpr const char* kDeviceCode = HALOEX_BENCH_DEVICE_CODE;

struct Options {
    std::vector<int> sizes{11250, 22500, 45000, 90000, 180000, 360000, 720000};
    int steps = 200;
    double rlist = 1.0;
    double rlistInner = 0.0;  // 0: no rolling prune (without --as-md)
    int pruneParts = 8;
    bool asMd = false;
    int maxJ = 0;  // entry length; 0: Nonbonded's automatic choice
    std::string json;
    unsigned long long seed = 2026;
};

// The command line (CLI11); exits with CLI11's status on --help or a bad option.
Options parse(int argc, char** argv) {
    Options o;
    CLI::App app{fmt::format("haloex-bench-nonbonded: times pair search, local non-bonded, update and a whole step "
                             "of one rank holding the whole system (device code: {})",
                             kDeviceCode)};
    app.add_option("--sizes", o.sizes, "Atom counts, comma-separated")
        ->delimiter(',')
        ->check(CLI::Range(2, 100000000))
        ->capture_default_str();
    app.add_option("--steps", o.steps, "Timed repetitions per figure")
        ->check(CLI::Range(1, 1000000))
        ->capture_default_str();
    app.add_option("--rlist", o.rlist, "Pair-list radius (nm) without --as-md")
        ->check(CLI::Range(0.9, 10.0))
        ->capture_default_str();
    app.add_option("--rlist-inner", o.rlistInner,
                   "Without --as-md: the rolling prune's inner radius (nm; between 0.9 and --rlist), 0 for none")
        ->check(CLI::Range(0.0, 10.0))
        ->capture_default_str();
    app.add_option("--prune-parts", o.pruneParts, "Without --as-md: the rolling prune's parts (with --rlist-inner)")
        ->check(CLI::Range(1, 1000))
        ->capture_default_str();
    app.add_flag("--as-md", o.asMd,
                 "haloex-md's pair-list settings for one GPU at each size (rlist, nstlist, rolling prune) instead of "
                 "--rlist");
    app.add_option("--max-j", o.maxJ,
                   "j clusters per pair-list entry (1-128; entries over 32 take the long-entry kernel), 0 for the "
                   "automatic choice")
        ->check(CLI::Range(0, md::gpu::kMaxJClustersPerEntry))
        ->capture_default_str();
    app.add_option("--json", o.json, "Also write the JSON to this file");
    app.add_option("--seed", o.seed, "Seed of the lattice's velocities")->capture_default_str();
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        std::exit(app.exit(e));
    }
    if (o.rlistInner > 0.0 && (o.asMd || o.rlistInner < 0.9 || o.rlistInner > o.rlist)) {
        fmt::print(stderr,
                   "haloex-bench-nonbonded: --rlist-inner {} must lie in [rc = 0.9, --rlist = {}] nm and goes without "
                   "--as-md (which takes haloex-md's own)\n",
                   o.rlistInner, o.rlist);
        std::exit(2);
    }
    return o;
}

// Per-step targets on one H200 (us), from the project brief.
double targetUs(int atoms) {
    static const std::map<int, double> targets{{22500, 56},   {45000, 75},   {90000, 124},
                                               {180000, 224}, {360000, 412}, {720000, 790}};
    const auto it = targets.find(atoms);
    return it == targets.end() ? 0.0 : it->second;
}

struct Row {
    int atoms = 0;
    double rlist = 0, rlistInner = 0;
    int nstlist = 0, pruneParts = 0;
    ListCensus outer, inner;  // the list built, and the one the kernel evaluates (the inner list when pruning)
    int clusters = 0;
    int maxJ = 0;
    PairListStats list;
    std::int64_t pairsWithinCutoff = 0;
    double buildMs = 0, localUs = 0, localEnergyUs = 0, leapfrogUs = 0, stepUs = 0, graphStepUs = 0;
};

std::string censusJson(const ListCensus& c) {
    return fmt::format("{{\"cluster_pairs\": {}, \"atom_pairs\": {}, \"pairs_within_rc\": {}, \"entries\": {}, "
                       "\"empty_entries\": {}}}",
                       c.clusterPairs, c.atomPairs, c.pairsWithinCutoff, c.entries, c.emptyEntries);
}

// Average time of `count` repetitions of `work` on `stream`, in us.
template <class Work>
double timeUs(cudaStream_t stream, int count, Work&& work) {
    cuda::Event start(true), stop(true);
    work();  // warm-up
    start.record(stream);
    for (int k = 0; k < count; ++k) work();
    stop.record(stream);
    HALOEX_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.f;
    HALOEX_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    return 1000.0 * ms / count;
}

Row run(int numAtoms, const Options& o) {
    const md::ForceField ff;
    const md::System system = md::makeLatticeSystem(numAtoms, o.seed, 300.0, ff);
    std::vector<Vec3f> x(numAtoms), v(numAtoms);
    std::vector<float> q(numAtoms);
    for (int i = 0; i < numAtoms; ++i) {
        x[i] = Vec3f(system.positions[i]);
        v[i] = Vec3f(system.velocities[i]);
        q[i] = static_cast<float>(ff.chargeOfType(system.types[i]));
    }
    const std::size_t bytes = numAtoms * sizeof(Vec3f);
    cuda::DeviceBuffer<Vec3f> dX0(numAtoms), dX(numAtoms), dV0(numAtoms), dV(numAtoms), dF(numAtoms);
    cuda::DeviceBuffer<float> dQ(numAtoms);
    cuda::copyToDeviceNow(dX0.data(), x.data(), bytes);
    cuda::copyToDeviceNow(dV0.data(), v.data(), bytes);
    cuda::copyToDeviceNow(dQ.data(), q.data(), numAtoms * sizeof(float));
    cuda::Stream stream;
    const auto restore = [&] {
        HALOEX_CUDA_CHECK(cudaMemcpyAsync(dX.data(), dX0.data(), bytes, cudaMemcpyDeviceToDevice, stream));
        HALOEX_CUDA_CHECK(cudaMemcpyAsync(dV.data(), dV0.data(), bytes, cudaMemcpyDeviceToDevice, stream));
    };
    restore();

    Row row;
    row.atoms = numAtoms;
    row.rlist = o.rlist;
    NonbondedOptions nbOptions;
    nbOptions.maxJClustersPerEntry = o.maxJ;
    if (o.asMd) {
        md::MdOptions mdOptions;
        mdOptions.atoms = numAtoms;
        mdOptions = md::resolveOptions(mdOptions, 1, true);
        row.rlist = mdOptions.rlist;
        row.nstlist = mdOptions.nstlist;
        row.pruneParts = mdOptions.pruneParts;
        row.rlistInner = mdOptions.pruneParts > 0 ? mdOptions.rlistInner : 0.0;
        nbOptions.rlistInner = row.rlistInner;
        nbOptions.pruneParts = std::max(1, row.pruneParts);
    } else if (o.rlistInner > 0.0) {
        row.rlistInner = o.rlistInner;
        row.pruneParts = o.pruneParts;
        nbOptions.rlistInner = o.rlistInner;
        nbOptions.pruneParts = o.pruneParts;
    }
    Nonbonded nb(ff, row.rlist, nbOptions);
    const std::array<bool, 3> periodic{true, true, true};
    nb.build(dX.data(), dQ.data(), nullptr, numAtoms, numAtoms, system.box, periodic, stream);  // warm-up
    std::vector<double> builds;
    for (int k = 0; k < 3; ++k) {
        const auto t0 = std::chrono::steady_clock::now();
        nb.build(dX.data(), dQ.data(), nullptr, numAtoms, numAtoms, system.box, periodic, stream);
        builds.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(builds.begin(), builds.end());
    row.buildMs = builds[1];
    row.clusters = nb.numClusters();
    row.maxJ = nb.maxJClustersPerEntry();
    row.list = nb.stats(ListKind::Local);
    row.outer = nb.census(ListKind::Local, dX.data(), stream, ListView::Outer);
    row.inner = nb.census(ListKind::Local, dX.data(), stream);
    row.pairsWithinCutoff = row.inner.pairsWithinCutoff;

    HALOEX_CUDA_CHECK(cudaMemsetAsync(dF.data(), 0, bytes, stream));
    row.localUs = timeUs(stream, o.steps, [&] { nb.computeLocal(dX.data(), dF.data(), false, stream); });
    row.localEnergyUs = timeUs(stream, o.steps, [&] {
        nb.clearEnergies(stream);
        nb.computeLocal(dX.data(), dF.data(), true, stream);
    });

    LeapfrogArgs a;
    a.x = dX.data();
    a.v = dV.data();
    a.f = dF.data();
    a.numAtoms = numAtoms;
    a.dt = 0.002f;
    a.invMass = static_cast<float>(1.0 / ff.mass);
    HALOEX_CUDA_CHECK(cudaMemsetAsync(dF.data(), 0, bytes, stream));  // zero forces: atoms only drift
    row.leapfrogUs = timeUs(stream, o.steps, [&] { leapfrog(a, stream); });

    const auto step = [&] {
        HALOEX_CUDA_CHECK(cudaMemsetAsync(dF.data(), 0, bytes, stream));
        nb.computeLocal(dX.data(), dF.data(), false, stream);
        leapfrog(a, stream);
    };
    restore();
    row.stepUs = timeUs(stream, o.steps, step);

    restore();
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    HALOEX_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    step();
    HALOEX_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    HALOEX_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    row.graphStepUs = timeUs(stream, o.steps, [&] { HALOEX_CUDA_CHECK(cudaGraphLaunch(exec, stream)); });
    HALOEX_CUDA_CHECK(cudaGraphExecDestroy(exec));
    HALOEX_CUDA_CHECK(cudaGraphDestroy(graph));
    HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
    return row;
}

}  // namespace

int main(int argc, char** argv) {
    const Options o = parse(argc, argv);
    try {
        if (cuda::deviceCount() == 0) {
            fmt::print(stderr, "haloex-bench-nonbonded: no CUDA device visible\n");
            return 1;
        }
        cudaDeviceProp prop{};
        HALOEX_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
        fmt::print("device: {} ({} SMs), rlist {}, rc 0.9 nm, {} timed repetitions; device code {}\n", prop.name,
                   prop.multiProcessorCount,
                   o.asMd ? "as haloex-md chooses it"
                   : o.rlistInner > 0.0
                       ? fmt::format("{} nm, inner {} nm in {} parts", o.rlist, o.rlistInner, o.pruneParts)
                       : fmt::format("{} nm", o.rlist),
                   o.steps, kDeviceCode);
        for (const KernelResources& k : nonbondedKernelResources()) {
            fmt::print("  kernel {}: {} registers, {} bytes local memory\n", k.name, k.registers, k.localBytes);
        }
        fmt::print("{:>8} {:>8} {:>10} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8}\n", "atoms", "clusters",
                   "clpairs", "eff%", "build_ms", "local_us", "localE_us", "update_us", "step_us", "graph_us",
                   "target");
        std::vector<Row> rows;
        for (int n : o.sizes) {
            const Row r = run(n, o);
            rows.push_back(r);
            fmt::print("{:>8} {:>8} {:>10} {:>7.1f} {:>9.2f} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f} {:>8}\n",
                       r.atoms, r.clusters, r.list.clusterPairs,
                       100.0 * r.pairsWithinCutoff / std::max<double>(1.0, 64.0 * r.inner.clusterPairs), r.buildMs,
                       r.localUs, r.localEnergyUs, r.leapfrogUs, r.stepUs, r.graphStepUs,
                       targetUs(r.atoms) > 0 ? fmt::format("{:.0f}", targetUs(r.atoms)) : "-");
            std::fflush(stdout);
        }
        std::string json =
            fmt::format("{{\"device\": \"{}\", \"device_code\": \"{}\", \"sms\": {}, \"rlist_nm\": {}, \"as_md\": {}, "
                        "\"max_j_requested\": {}, \"repetitions\": {}, \"kernels\": [",
                        prop.name, kDeviceCode, prop.multiProcessorCount, o.rlist, o.asMd, o.maxJ, o.steps);
        bool firstKernel = true;
        for (const KernelResources& k : nonbondedKernelResources()) {
            json += fmt::format("{}\n  {{\"name\": \"{}\", \"registers\": {}, \"local_bytes\": {}}}",
                                firstKernel ? "" : ",", k.name, k.registers, k.localBytes);
            firstKernel = false;
        }
        json += "], \"results\": [";
        for (std::size_t k = 0; k < rows.size(); ++k) {
            const Row& r = rows[k];
            json += fmt::format(
                "{}\n  {{\"atoms\": {}, \"clusters\": {}, \"max_j_per_entry\": {}, \"entries\": {}, \"cluster_pairs\": "
                "{}, \"atom_pairs_in_list\": "
                "{}, \"pairs_within_rc\": {}, \"build_ms\": {:.3f}, \"local_us\": {:.2f}, \"local_energies_us\": "
                "{:.2f}, \"leapfrog_us\": {:.2f}, \"step_us\": {:.2f}, \"graph_step_us\": {:.2f}, \"target_step_us\": "
                "{}, \"rlist_nm\": {}, \"nstlist\": {}, \"rlist_inner_nm\": {}, \"prune_parts\": {}, "
                "\"outer_list\": {}, \"evaluated_list\": {}}}",
                k ? "," : "", r.atoms, r.clusters, r.maxJ, r.list.entries, r.list.clusterPairs, r.list.atomPairs,
                r.pairsWithinCutoff, r.buildMs, r.localUs, r.localEnergyUs, r.leapfrogUs, r.stepUs, r.graphStepUs,
                targetUs(r.atoms), r.rlist, r.nstlist, r.rlistInner, r.pruneParts, censusJson(r.outer),
                censusJson(r.inner));
        }
        json += "\n]}\n";
        fmt::print("{}", json);
        if (!o.json.empty()) {
            std::FILE* f = std::fopen(o.json.c_str(), "w");
            if (f == nullptr) throwError(ErrorKind::Io, "cannot write " + o.json);
            std::fputs(json.c_str(), f);
            std::fclose(f);
        }
    } catch (const std::exception& e) {
        fmt::print(stderr, "haloex-bench-nonbonded: {}\n", e.what());
        return 1;
    }
    return 0;
}
