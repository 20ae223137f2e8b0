// Nonbonded: the host side of the GPU non-bonded module (nonbonded.hpp). The
// kernels and their launchers live in the .cu files.
#include "haloex/detail/cuda/blocking_ops.hpp"
#include "haloex/detail/cuda/graph_capture.hpp"
#include "haloex/md/gpu/nonbonded.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <fmt/format.h>
#include <type_traits>

#include "haloex/core/error.hpp"
#include "haloex/detail/core/environment_switch.hpp"
#include "haloex/detail/core/nvtx.hpp"
#include "nonbonded_internal.cuh"

namespace haloex::md::gpu {

namespace detail {

void throwNonFiniteAtom(int atom, int numHome) {
    throwError(ErrorKind::InvalidInput,
               fmt::format("pair search: local atom {} ({} atom) has a non-finite position; only padding atoms (zone "
                           "mask kPaddingMask) may. Check the previous step's forces and the halo exchange",
                           atom, atom < numHome ? "home" : "halo"));
}

void throwSearchPassesDisagree(bool nonlocal) {
    throwError(ErrorKind::Internal,
               fmt::format("pair search ({} list): the count and fill passes found different cluster pairs; this is "
                           "a bug in haloex (report it with the system that triggers it)",
                           nonlocal ? "non-local" : "local"));
}

}  // namespace detail

using namespace detail;

namespace {

// The first kernel after a wait on another stream's launch-completion event
// is launched plainly (cuda::StreamOrder::Full says why).
cuda::StreamOrder streamOrder(bool firstAfterEventWait) {
    return firstAfterEventWait ? cuda::StreamOrder::Full : cuda::StreamOrder::Programmatic;
}

// Entry length for the automatic choice (about 66 j clusters per i cluster
// at 100 atoms/nm^3 and rlist 1 nm; ~7.8 atoms per cluster):
// - 128, one entry for nearly every i cluster, where those give at least
//   four waves of warps: a pruned list keeps an entry's length, and with
//   entries of 32 an i cluster's kept pairs spread over more, shorter items
//   as rlist grows (the force kernel at rlist 0.995 nm on an H200: 128
//   against 32 took 675.55 / 714.48 us at 720 000 atoms and 171.67 / 178.25
//   at 180 000, 4.8 waves);
// - else the longest of 32, 16 whose entries give one and a half waves,
//   else 8 (at 90 000 atoms entries of 64, 2.8 waves, took 100.54 us
//   against 92.30 with 32: too few items to balance; with the four-pair
//   tile, 16 against 8 at 11 250 atoms took 18.04 / 19.60 us and 32
//   against 16 at 22 500 27.49 / 28.91, bench/results/entry-length-NVIDIA-H100-2026-12-05.json).
int chooseEntryLength(int numHome, int residentWarps) {
    constexpr double kJClustersPerCluster = 66.0;
    constexpr double kAtomsPerCluster = 7.8;
    const double clusters = numHome / kAtomsPerCluster;
    if (clusters >= 4.0 * residentWarps) return kMaxJClustersPerEntry;
    for (int maxJ : {32, 16}) {
        const double entries = clusters * std::ceil(kJClustersPerCluster / maxJ);
        if (entries >= 1.5 * residentWarps) return maxJ;
    }
    return 8;
}

}  // namespace

struct Nonbonded::Impl {
    ForceField ff;
    double rlist = 0.0;
    NonbondedOptions options;
    KernelParams params{};
    SearchSettings settings;
    DeviceLayout layout;
    DeviceList lists[2];  // local, non-local
    cuda::DeviceBuffer<double> energies;
    cuda::DeviceBuffer<unsigned long long> diagnosticCounter;
    int energyBlocks = 1;
    int residentWarps = 1;    // force-kernel warps the GPU holds at once
    int maxJ = 32;            // entry length of the last build
    float rlistInner2 = 0.f;  // pruning radius squared, as the prune kernel compares it
    bool built = false;
    // setHaloMovedByExchange (false again at every build).
    bool haloPositionsByExchange = false;
    bool haloForcesByExchange = false;
    // The last non-local compute enqueued no scatter, which moves the
    // list's rolling prune on: the next updateHome does (at most once a step).
    bool nonlocalScatterSkipped = false;
    std::vector<std::pair<const char*, double>> buildParts;

    bool pruning() const { return options.rlistInner > 0.0; }

    DeviceList& list(ListKind kind) { return lists[kind == ListKind::Local ? 0 : 1]; }
    const DeviceList& list(ListKind kind) const { return lists[kind == ListKind::Local ? 0 : 1]; }

    // The grid and count passes of a build, launched as one CUDA graph while
    // every array and capacity they use stays the same (the key), else
    // captured again; or call by call (options.searchGraph false, or a
    // stream that cannot be captured).
    struct SearchGraph {
        std::vector<std::uintptr_t> key;
        cudaGraphExec_t exec = nullptr;
        SearchGraph() = default;
        SearchGraph(const SearchGraph&) = delete;
        SearchGraph& operator=(const SearchGraph&) = delete;
        ~SearchGraph() { reset(); }
        void reset() {
            if (exec != nullptr) cudaGraphExecDestroy(exec);
            exec = nullptr;
            key.clear();
        }
    } searchGraph;
    int searchGraphCaptures = 0;
    // Builds whose lists the device compacted (in the graph).
    int deviceCompactions = 0;

    // HALOEX_SEARCH_TIMELINE=1: GPU timestamps between the build's parts,
    // printed per build on stderr (measurements; the build then runs call by call).
    std::unique_ptr<BuildMarks> marks;

    void enqueueGridAndCounts(const Vec3f* dX, const float* dCharge, const std::uint8_t* dZoneMask,
                              const SearchPrune& prune, cudaStream_t stream) {
        enqueueLayout(layout, dX, dCharge, dZoneMask, params.c.sqrtCoulomb, stream, marks.get());
        enqueueSearchCounts(lists, layout, settings, prune, stream, marks.get());
    }

    // Everything enqueueGridAndCounts passes to a kernel, a copy or a memset.
    std::vector<std::uintptr_t> searchGraphKey(const Vec3f* dX, const float* dCharge, const std::uint8_t* dZoneMask,
                                               const SearchPrune& prune, cudaStream_t stream) const {
        std::vector<std::uintptr_t> k;
        const auto add = [&k](auto v) {
            if constexpr (std::is_pointer_v<decltype(v)>) {
                k.push_back(reinterpret_cast<std::uintptr_t>(v));
            } else if constexpr (std::is_same_v<decltype(v), float>) {
                std::uint32_t bits;
                std::memcpy(&bits, &v, sizeof(bits));
                k.push_back(bits);
            } else if constexpr (std::is_same_v<decltype(v), double>) {
                std::uint64_t bits;
                std::memcpy(&bits, &v, sizeof(bits));
                k.push_back(static_cast<std::uintptr_t>(bits));
            } else {
                k.push_back(static_cast<std::uintptr_t>(v));
            }
        };
        const auto buffer = [&add](const auto& b) {
            add(b.data());
            add(b.size());
        };
        add(stream);
        add(dX);
        add(dCharge);
        add(dZoneMask);
        add(params.c.sqrtCoulomb);
        const DeviceLayout& l = layout;
        for (int v : {l.atomCapacity, l.homeCapacity, l.columnCapacity, l.maxHomeClusters, l.maxClusters, l.sortEndBit})
            add(v);
        add(l.columnSort);
        buffer(l.columnFill);
        buffer(l.bucket);
        add(l.state.data());
        add(l.stateHost.data());
        add(l.sizes.data());
        add(l.sizesHost.data());
        buffer(l.boundsPartials);
        buffer(l.keys);
        buffer(l.keysSorted);
        buffer(l.atoms);
        buffer(l.atomsSorted);
        buffer(l.columnCount);
        buffer(l.columnAtomStart);
        buffer(l.columnClusterStart);
        buffer(l.cubTemp);
        buffer(l.clusterColumn);
        buffer(l.atomOfSlot);
        buffer(l.zoneOfSlot);
        buffer(l.chargeOfSlot);
        buffer(l.slotOfAtom);
        buffer(l.xqLocal);
        buffer(l.xqNonlocal);
        buffer(l.fLocal);
        buffer(l.fNonlocal);
        buffer(l.bboxLo);
        buffer(l.bboxHi);
        add(lists[0].totalsHost.data());
        add(l.clusterFlag.data());
        add(l.clusterFlag.size());
        add(l.nonlocalHomeClusters.data());
        add(l.flaggedCount.data());
        add(l.flaggedCountHost.data());
        // The compaction sized on the device writes within these capacities.
        const auto arrays = [&add](const auto& b) {
            add(b.data());
            add(b.capacity());
        };
        for (const DeviceList& list : lists) {
            arrays(list.pairs);
            arrays(list.entries);
            arrays(list.innerPairs);
            arrays(list.innerEntries);
            add(list.pruneState.data());
            add(list.counted);
            add(list.scratchCapacity);
            buffer(list.pairCount);
            buffer(list.pairOffset);
            buffer(list.entryOffset);
            buffer(list.counters);
            buffer(list.scratch);
            buffer(list.cubTemp);
            add(list.countersHost.data());
        }
        for (int d = 0; d < 3; ++d) {
            add(settings.box.length[d]);
            add(settings.periodic[d]);
        }
        add(settings.rlist);
        add(settings.maxJClustersPerEntry);
        add(prune.parts);
        add(prune.rlistInner2);
        return k;
    }

    static bool useSearchGraph(bool option, cudaStream_t stream) {
        if (!cuda::capturableStream(stream)) return false;
        return ::haloex::detail::environmentSwitch("HALOEX_SEARCH_GRAPH", option,
                                                   "the pair search's grid and count passes as a CUDA graph");
    }

    void launchGridAndCounts(const Vec3f* dX, const float* dCharge, const std::uint8_t* dZoneMask,
                             const SearchPrune& prune, cudaStream_t stream) {
        if (marks != nullptr || !useSearchGraph(options.searchGraph, stream)) {
            searchGraph.reset();
            if (marks != nullptr) marks->start(stream);
            enqueueGridAndCounts(dX, dCharge, dZoneMask, prune, stream);
            return;
        }
        std::vector<std::uintptr_t> key = searchGraphKey(dX, dCharge, dZoneMask, prune, stream);
        if (searchGraph.exec == nullptr || key != searchGraph.key) {
            searchGraph.reset();
            cudaGraph_t graph =
                cuda::captureGraph(stream, [&] { enqueueGridAndCounts(dX, dCharge, dZoneMask, prune, stream); });
            cuda::updateOrInstantiate(searchGraph.exec, graph, 0);  // reset above: instantiated anew
            searchGraph.key = std::move(key);
            ++searchGraphCaptures;
        }
        HALOEX_CUDA_CHECK(cudaGraphLaunch(searchGraph.exec, stream));
    }

    void requireBuilt(const char* what) const {
        if (!built) {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("Nonbonded::{} called before build(): build the pair lists first", what));
        }
    }

    // Gather, kernel, scatter for one list. With pruning the kernel also
    // re-prunes the next part of the list (fused). haloOnly: the non-local
    // list's halo slots alone (computeNonlocalHalo). Enqueue only.
    void compute(ListKind kind, const Vec3f* dX, Vec3f* dF, bool withEnergies, cudaStream_t stream,
                 bool haloOnly = false, cuda::StreamOrder order = cuda::StreamOrder::Programmatic) {
        DeviceList& l = list(kind);
        if (l.numEntries == 0) return;
        const bool local = kind == ListKind::Local;
        // The exchange may move the halo slots' positions in and forces out
        // itself (setHaloMovedByExchange): then no gather, no scatter.
        if (!(haloOnly && haloPositionsByExchange)) launchGather(dX, layout, local, stream, haloOnly, order);
        launchNonbonded(params, l, layout, local, withEnergies, energyBlocks, energies.data(), stream);
        const bool scatter = !(haloOnly && haloForcesByExchange);
        if (scatter) launchScatter(layout, l, local, dF, stream, haloOnly);
        if (!local) nonlocalScatterSkipped = !scatter;
    }
};

Nonbonded::Nonbonded(const ForceField& ff, double rlist, NonbondedOptions options) : impl_(std::make_unique<Impl>()) {
    if (!(rlist >= ff.rc) || !std::isfinite(rlist)) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("Nonbonded: rlist = {} nm must be finite and at least rc = {} nm", rlist, ff.rc));
    }
    if (options.maxJClustersPerEntry < 0 || options.maxJClustersPerEntry > kMaxJClustersPerEntry) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("Nonbonded: maxJClustersPerEntry = {} must be in [1, {}], or 0 for automatic",
                               options.maxJClustersPerEntry, kMaxJClustersPerEntry));
    }
    if (!(options.growthFactor >= 1.0)) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("Nonbonded: growthFactor = {} must be at least 1", options.growthFactor));
    }
    if (options.rlistInner != 0.0 && !(options.rlistInner >= ff.rc && options.rlistInner <= rlist)) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("Nonbonded: rlistInner = {} nm must lie between rc = {} nm and rlist = {} nm (the "
                               "inner list is pruned from the rlist list and must hold every pair within rc), or "
                               "be 0 for no pruning",
                               options.rlistInner, ff.rc, rlist));
    }
    if (options.rlistInner > 0.0 && options.pruneParts < 1) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("Nonbonded: pruneParts = {} must be at least 1 with pruning (rlistInner = {} nm); "
                               "set rlistInner = 0 to turn pruning off",
                               options.pruneParts, options.rlistInner));
    }
    impl_->ff = ff;
    impl_->rlist = rlist;
    impl_->options = options;
    impl_->params.c = makePairConstants(ff);
    impl_->rlistInner2 = rlistSquared(options.rlistInner);
    impl_->energies.resize(kNumEnergies);
    cuda::fillBytesNow(impl_->energies.data(), 0, impl_->energies.bytes());
    impl_->diagnosticCounter.resize(4);  // census(): within rc, cluster pairs, atom pairs, empty entries
    int device = 0, numSms = 1;
    HALOEX_CUDA_CHECK(cudaGetDevice(&device));
    HALOEX_CUDA_CHECK(cudaDeviceGetAttribute(&numSms, cudaDevAttrMultiProcessorCount, device));
    impl_->energyBlocks = std::max(1, numSms * energyKernelBlocksPerSm());
    impl_->residentWarps = std::max(1, numSms * forceKernelBlocksPerSm() * kForceKernelWarpsPerBlock);
}

Nonbonded::~Nonbonded() = default;

void Nonbonded::build(const Vec3f* dX, const float* dCharge, const std::uint8_t* dZoneMask, int numHome, int numLocal,
                      const plan::Box& box, std::array<bool, 3> periodic, cudaStream_t stream) {
    Impl& m = *impl_;
    m.built = false;
    m.haloPositionsByExchange = m.haloForcesByExchange = m.nonlocalScatterSkipped = false;
    if (numHome < 0 || numLocal < numHome) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("Nonbonded::build: {} home atoms but {} local atoms; need 0 <= numHome <= numLocal",
                               numHome, numLocal));
    }
    if (dZoneMask == nullptr && numLocal != numHome) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("Nonbonded::build: {} halo atoms but no zone masks; pass the plan's zone masks",
                               numLocal - numHome));
    }
    if (numLocal > 0 && (dX == nullptr || dCharge == nullptr)) {
        throwError(ErrorKind::InvalidInput, "Nonbonded::build: null position or charge array");
    }
    m.maxJ = m.options.maxJClustersPerEntry > 0 ? m.options.maxJClustersPerEntry
                                                : chooseEntryLength(numHome, m.residentWarps);
    m.settings = SearchSettings{box, periodic, m.rlist, m.maxJ};
    validateSearchSettings(m.settings, "Nonbonded::build");
    for (DeviceList& l : m.lists) {
        l.longEntries = m.maxJ > 32;
        l.quarterTile = m.maxJ >= 32;
    }
    const Float3 lengths = boxLengthsF(box);
    for (int s = 0; s < kNumShifts; ++s) {
        const Float3 v = shiftVector(s, lengths);
        m.params.shifts[s] = make_float3(v.x, v.y, v.z);
    }
    m.buildParts.clear();
    NvtxParts ranges;  // named as the parts below ("pair search" parts of a search step)
    ranges.next("grid and counts");
    auto t = std::chrono::steady_clock::now();
    const auto part = [&](const char* name) {
        const auto now = std::chrono::steady_clock::now();
        m.buildParts.emplace_back(name, 1e3 * std::chrono::duration<double>(now - t).count());
        t = now;
    };
    const double growth = m.options.growthFactor;
    if (::haloex::detail::environmentSwitch("HALOEX_SEARCH_TIMELINE", false,
                                            "the pair search build's parts timed on the host")) {
        if (!m.marks) m.marks = std::make_unique<BuildMarks>();
    }
    const SearchPrune prune{m.pruning() ? m.options.pruneParts : 0, m.rlistInner2};
    DeviceLayout& layout = m.layout;
    reserveLayout(layout, numHome, numLocal, growth);
    if (numLocal == 0) {  // no atom, no cluster: the grids of two empty sets
        layout.grids = chooseGrids(AtomBounds{}, AtomBounds{});
        layout.numHomeAtoms = layout.numHaloAtoms = layout.numHomeClusters = layout.numClusters = 0;
        reserveSearch(m.lists, layout, prune, growth);
    } else {
        if (layout.columnCapacity == 0) {  // the first build learns how many columns the grids take
            probeColumns(layout, dX, dZoneMask, growth, stream);
            reserveLayout(layout, numHome, numLocal, growth);
        }
        // The grid and both count passes, then the one host read of the
        // build (grids, cluster and pair totals). Grids that need more
        // columns than the capacity leave the layout empty; the capacity
        // then fits them, and the second pass succeeds.
        for (int attempt = 0;; ++attempt) {
            reserveSearch(m.lists, layout, prune, growth);
            m.launchGridAndCounts(dX, dCharge, dZoneMask, prune, stream);
            HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
            if (acceptLayout(layout, growth)) break;
            // At most twice again: once for the columns, once for the sort.
            HALOEX_ASSERT(attempt < 2, "the grid fits the columns and the sort acceptLayout chose");
            reserveLayout(layout, numHome, numLocal, growth);
        }
    }
    part("grid and counts");
    ranges.next("lists");
    // The lists were compacted on the device within the arrays' capacities
    // (the usual case after the first build): nothing more to launch and no
    // second host round trip. Else compact now that the totals are known.
    const bool compactedOnDevice = takeDeviceCompaction(m.lists, layout, prune);
    if (!compactedOnDevice) {
        finishSearchCounts(m.lists, layout, m.settings, growth, prune, stream);
        mark(m.marks.get(), "compaction sized by the host", stream);
    }
    part("lists");
    ranges.next("non-local home clusters");
    if (!compactedOnDevice) collectNonlocalHomeClusters(m.layout, m.lists[1], m.options.growthFactor, stream);
    part("non-local home clusters");
    ranges.next("prune");
    // Pruning: the inner lists hold the pairs within rlistInner at the
    // positions of the build (in both xq copies since enqueueLayout), so the
    // first step already evaluates them; the search's compaction wrote them
    // unless a scratch slot overflowed, then the full prune does. The rolling
    // parts start again at part 0.
    for (int k = 0; k < 2; ++k) {
        if (m.lists[k].pruned && !m.lists[k].prunedAtSearch) {
            launchFullPrune(m.lists[k], m.layout, k == 0, lengths, stream);
        }
    }
    part("prune");
    ranges.next("synchronise");
    if (!compactedOnDevice) {
        HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
        finishSearch(m.lists[0], false);
        finishSearch(m.lists[1], true);
        finishNonlocalHomeClusters(m.layout);
    }
    if (compactedOnDevice) ++m.deviceCompactions;
    part("synchronise");
    if (m.marks && numLocal > 0) {
        fmt::print(stderr, "search timeline ({} atoms, GPU us): {}\n", numLocal, m.marks->report());
    }
    m.built = true;
}

void Nonbonded::computeLocal(const Vec3f* dX, Vec3f* dF, bool energies, cudaStream_t stream, bool firstAfterEventWait) {
    impl_->requireBuilt("computeLocal");
    impl_->compute(ListKind::Local, dX, dF, energies, stream, /*haloOnly=*/false, streamOrder(firstAfterEventWait));
}

void Nonbonded::computeNonlocal(const Vec3f* dX, Vec3f* dF, bool energies, cudaStream_t stream) {
    impl_->requireBuilt("computeNonlocal");
    impl_->compute(ListKind::Nonlocal, dX, dF, energies, stream);
}

void Nonbonded::computeNonlocalHalo(const Vec3f* dX, Vec3f* dF, bool energies, cudaStream_t stream) {
    impl_->requireBuilt("computeNonlocalHalo");
    impl_->compute(ListKind::Nonlocal, dX, dF, energies, stream, /*haloOnly=*/true);
}

static_assert(sizeof(float4) == 4 * sizeof(float), "a slot is four floats: x, y, z and charge (or w)");

transport::HaloRecords Nonbonded::haloPositionRecords() {
    Impl& m = *impl_;
    m.requireBuilt("haloPositionRecords");
    return {reinterpret_cast<float*>(m.layout.xqNonlocal.data()), 4, m.layout.slotOfAtom.data()};
}

transport::HaloRecords Nonbonded::haloForceRecords() {
    Impl& m = *impl_;
    m.requireBuilt("haloForceRecords");
    return {reinterpret_cast<float*>(m.layout.fNonlocal.data()), 4, m.layout.slotOfAtom.data()};
}

void Nonbonded::setHaloMovedByExchange(bool positions, bool forces) {
    Impl& m = *impl_;
    m.requireBuilt("setHaloMovedByExchange");
    m.haloPositionsByExchange = positions;
    m.haloForcesByExchange = forces;
}

void Nonbonded::computeLocalForces(bool energies, cudaStream_t stream, bool firstAfterEventWait) {
    Impl& m = *impl_;
    m.requireBuilt("computeLocalForces");
    DeviceList& l = m.list(ListKind::Local);
    if (l.numEntries > 0) {
        launchNonbonded(m.params, l, m.layout, /*local=*/true, energies, m.energyBlocks, m.energies.data(), stream,
                        streamOrder(firstAfterEventWait));
    }
}

void Nonbonded::updateLocal(const LeapfrogArgs& args, Vec3f* dF, int* dFirstBad, cudaStream_t stream) {
    Impl& m = *impl_;
    m.requireBuilt("updateLocal");
    // Padding after the home atoms (a plan's alignment) has no slot: only a
    // real halo atom rules the fused update out.
    if (args.numAtoms != m.layout.numHome || m.layout.numHaloAtoms != 0) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("Nonbonded::updateLocal: {} atoms to update, the lists hold {} home and {} halo "
                               "atoms; the fused update is for one rank without a halo, updating every home atom "
                               "(with a halo: updateHome)",
                               args.numAtoms, m.layout.numHome, m.layout.numHaloAtoms));
    }
    launchUpdateLocal(m.layout, m.list(ListKind::Local), args, dF, /*dHaloForces=*/nullptr, dFirstBad, stream);
}

void Nonbonded::updateHome(const LeapfrogArgs& args, Vec3f* dF, int* dFirstBad, cudaStream_t stream,
                           const transport::HomeCoordinateStores* homeStores) {
    Impl& m = *impl_;
    m.requireBuilt("updateHome");
    if (args.numAtoms != m.layout.numHome) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("Nonbonded::updateHome: {} atoms to update, the lists hold {} home atoms; the fused "
                               "update moves every home atom",
                               args.numAtoms, m.layout.numHome));
    }
    // Where no scatter of the non-local list moves its rolling prune on
    // (the exchange took the halo's forces), this update does.
    DeviceList& nonlocal = m.list(ListKind::Nonlocal);
    const PruneAdvance nonlocalPrune =
        m.nonlocalScatterSkipped && nonlocal.pruned && nonlocal.numEntries > 0
            ? PruneAdvance{nonlocal.pruneState.data(), nonlocal.numEntries, nonlocal.pruneParts}
            : PruneAdvance{};
    launchUpdateLocal(m.layout, m.list(ListKind::Local), args, /*dF=*/nullptr, dF, dFirstBad, stream, homeStores,
                      nonlocalPrune);
    m.nonlocalScatterSkipped = false;  // moved on once for that compute
}

void Nonbonded::clearEnergies(cudaStream_t stream) { impl_->energies.zeroAsync(stream); }

const double* Nonbonded::deviceEnergies() const { return impl_->energies.data(); }

const std::vector<std::pair<const char*, double>>& Nonbonded::buildPartsMs() const { return impl_->buildParts; }

PairListStats Nonbonded::stats(ListKind kind) const {
    const DeviceList& l = impl_->list(kind);
    return {l.numEntries, l.numPairs, l.atomPairs};
}

int Nonbonded::numHome() const { return impl_->layout.numHome; }
int Nonbonded::numLocal() const { return impl_->layout.numLocal; }
int Nonbonded::numHomeClusters() const { return impl_->layout.numHomeClusters; }
int Nonbonded::numClusters() const { return impl_->layout.numClusters; }
double Nonbonded::rlist() const { return impl_->rlist; }
double Nonbonded::rlistInner() const { return impl_->options.rlistInner; }
int Nonbonded::pruneParts() const { return impl_->options.pruneParts; }
int Nonbonded::maxJClustersPerEntry() const { return impl_->maxJ; }
int Nonbonded::searchGraphCaptures() const { return impl_->searchGraphCaptures; }
int Nonbonded::deviceCompactions() const { return impl_->deviceCompactions; }

ListCensus Nonbonded::census(ListKind kind, const Vec3f* dX, cudaStream_t stream, ListView view) {
    Impl& m = *impl_;
    m.requireBuilt("census");
    const DeviceList& l = m.list(kind);
    if (l.numEntries == 0) return {};
    const bool local = kind == ListKind::Local;
    launchGather(dX, m.layout, local, stream);
    m.diagnosticCounter.zeroAsync(stream);
    launchCountWithinCutoff(l, view == ListView::Outer, m.layout, local, boxLengthsF(m.settings.box), m.params.c.rc2,
                            m.diagnosticCounter.data(), stream);
    std::array<unsigned long long, 4> n{};
    HALOEX_CUDA_CHECK(cudaMemcpyAsync(n.data(), m.diagnosticCounter.data(), sizeof(n), cudaMemcpyDeviceToHost, stream));
    HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
    return {static_cast<std::int64_t>(n[1]), static_cast<std::int64_t>(n[2]), static_cast<std::int64_t>(n[0]),
            l.numEntries, static_cast<std::int64_t>(n[3])};
}

std::int64_t Nonbonded::countPairsWithinCutoff(ListKind kind, const Vec3f* dX, cudaStream_t stream, ListView view) {
    return census(kind, dX, stream, view).pairsWithinCutoff;
}

ClusterLayoutHost Nonbonded::copyLayoutToHost() const {
    const DeviceLayout& l = impl_->layout;
    ClusterLayoutHost h;
    h.grids = l.grids;
    h.numHomeClusters = l.numHomeClusters;
    h.numClusters = l.numClusters;
    h.columnClusterStart.resize(static_cast<std::size_t>(l.numColumns()) + 1);
    h.atomOfSlot.resize(static_cast<std::size_t>(l.numSlots()));
    std::vector<float4> lo(static_cast<std::size_t>(l.numClusters)), hi(static_cast<std::size_t>(l.numClusters));
    HALOEX_CUDA_CHECK(cudaDeviceSynchronize());
    HALOEX_CUDA_CHECK(cudaMemcpy(h.columnClusterStart.data(), l.columnClusterStart.data(),
                                 h.columnClusterStart.size() * sizeof(int), cudaMemcpyDeviceToHost));
    if (l.numClusters > 0) {
        HALOEX_CUDA_CHECK(cudaMemcpy(h.atomOfSlot.data(), l.atomOfSlot.data(), h.atomOfSlot.size() * sizeof(int),
                                     cudaMemcpyDeviceToHost));
        HALOEX_CUDA_CHECK(cudaMemcpy(lo.data(), l.bboxLo.data(), lo.size() * sizeof(float4), cudaMemcpyDeviceToHost));
        HALOEX_CUDA_CHECK(cudaMemcpy(hi.data(), l.bboxHi.data(), hi.size() * sizeof(float4), cudaMemcpyDeviceToHost));
    }
    for (std::size_t c = 0; c < lo.size(); ++c) {
        h.bboxLo.push_back({lo[c].x, lo[c].y, lo[c].z});
        h.bboxHi.push_back({hi[c].x, hi[c].y, hi[c].z});
    }
    return h;
}

int Nonbonded::nextPrunePart(ListKind kind) const {
    const DeviceList& l = impl_->list(kind);
    if (!l.pruned || l.numEntries == 0) return -1;
    int state[3] = {};
    HALOEX_CUDA_CHECK(cudaDeviceSynchronize());
    HALOEX_CUDA_CHECK(cudaMemcpy(state, l.pruneState.data(), sizeof(state), cudaMemcpyDeviceToHost));
    return state[2];
}

PairListHost Nonbonded::copyListToHost(ListKind kind, ListView view) const {
    const DeviceList& l = impl_->list(kind);
    const bool inner = view == ListView::Evaluated && l.pruned;
    PairListHost h;
    h.entries.resize(static_cast<std::size_t>(l.numEntries));
    h.pairs.resize(static_cast<std::size_t>(l.numPairs));
    HALOEX_CUDA_CHECK(cudaDeviceSynchronize());
    if (l.numEntries > 0) {
        HALOEX_CUDA_CHECK(cudaMemcpy(h.entries.data(), inner ? l.innerEntries.data() : l.entries.data(),
                                     h.entries.size() * sizeof(ClusterEntry), cudaMemcpyDeviceToHost));
        HALOEX_CUDA_CHECK(cudaMemcpy(h.pairs.data(), inner ? l.innerPairs.data() : l.pairs.data(),
                                     h.pairs.size() * sizeof(ClusterPair), cudaMemcpyDeviceToHost));
    }
    if (!inner) return h;
    // The inner list shares the outer ranges' starts: make it dense (what
    // pruneReference returns), dropping the stale tails.
    PairListHost dense;
    dense.entries.reserve(h.entries.size());
    for (const ClusterEntry& e : h.entries) {
        const int begin = static_cast<int>(dense.pairs.size());
        dense.pairs.insert(dense.pairs.end(), h.pairs.begin() + e.jBegin, h.pairs.begin() + e.jEnd);
        dense.entries.push_back({e.ci, begin, static_cast<int>(dense.pairs.size()), 0});
    }
    return dense;
}

std::array<KernelResources, 14> nonbondedKernelResources() {
    const auto pack = [](std::string name, const cudaFuncAttributes& a, int localBytesAllowed = 0) {
        return KernelResources{std::move(name), a.numRegs, static_cast<int>(a.localSizeBytes), a.maxThreadsPerBlock,
                               localBytesAllowed};
    };
    // The long entries' pruning builds run 7 blocks per SM (72 registers) and
    // spill 8 bytes: 3-4 % faster at 180 000-720 000 atoms than 6 blocks
    // without a spill (bench/results/kernel-variants-NVIDIA-H100-2026-12-05.json).
    constexpr int kLongPruneSpill = 8;
    // Entries of more than 32 run the quarter tile, whose pruning build
    // spills 24 bytes at 6 blocks (80 registers); with the quarter tile the
    // local kernel ran 3.4 % faster at 720 000 atoms
    // (bench/results/kernel-variants-NVIDIA-H200-2026-12-05-d.json).
    constexpr int kQuarterLongPruneSpill = 24;
    // A list whose longest entry is exactly 32 runs the quarter tile without
    // the long entries' loop; its pruning build (forces only), at 7 blocks
    // per SM (72 registers, nbMinBlocks), has a 16-byte stack frame (12
    // bytes spilled; ptxas of CUDA 13.0 for sm_90). Not measured against 6
    // blocks: such a list is rare (its longest entry must be exactly 32).
    constexpr int kQuarterPruneSpill = 16;
    struct Build {
        const char* tile;
        ForceTile kind;
        int pruneSpill;        // the forces-only pruning build's allowance
        int energyPruneSpill;  // the pruning build with energies
    };
    constexpr Build builds[] = {{"", ForceTile::Four, 0, 0},
                                {", quarter tile: longest entry 32", ForceTile::Quarter, kQuarterPruneSpill, 0},
                                {", entries > 32", ForceTile::QuarterLong, kQuarterLongPruneSpill, kLongPruneSpill}};
    std::array<KernelResources, 14> all;
    std::size_t k = 0;
    for (const Build& b : builds) {
        all[k++] = pack(fmt::format("nonbonded (forces{})", b.tile), nonbondedKernelAttributes(false, false, b.kind));
        all[k++] = pack(fmt::format("nonbonded (forces + energies{})", b.tile),
                        nonbondedKernelAttributes(true, false, b.kind));
        all[k++] = pack(fmt::format("nonbonded (forces, rolling prune{})", b.tile),
                        nonbondedKernelAttributes(false, true, b.kind), b.pruneSpill);
        all[k++] = pack(fmt::format("nonbonded (forces + energies, rolling prune{})", b.tile),
                        nonbondedKernelAttributes(true, true, b.kind), b.energyPruneSpill);
    }
    all[k++] = pack("pair search (one pass)", searchKernelAttributes());
    all[k++] = pack("full prune (search steps)", pruneKernelAttributes());
    return all;
}

}  // namespace haloex::md::gpu
