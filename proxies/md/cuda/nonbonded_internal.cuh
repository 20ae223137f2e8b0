#pragma once
// Internals of the GPU non-bonded module shared by its .cu files: the device
// cluster layout, the device pair lists, and the build steps that fill them.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "haloex/cuda/device_buffer.hpp"
#include "haloex/detail/cuda/stream_order.hpp"
#include "haloex/md/gpu/cluster_reference.hpp"
#include "haloex/md/gpu/integrate.hpp"
#include "haloex/transport/coordinate_force_exchange.hpp"

namespace haloex::md::gpu::detail {

inline constexpr unsigned kFullWarp = 0xffffffffu;

inline int blocksFor(long long n, int threads) { return static_cast<int>((n + threads - 1) / threads); }

// The bits a non-negative value needs (at least 1): 2^bitsFor(v) > v.
inline int bitsFor(int value) {
    int bits = 1;
    while ((1LL << bits) <= value) ++bits;
    return bits;
}

// Grows a device buffer with headroom (contents are not kept).
template <class T>
void reserveWithHeadroom(cuda::DeviceBuffer<T>& buffer, std::size_t count, double growth) {
    if (count <= buffer.capacity()) {
        buffer.resize(count);
        return;
    }
    buffer.reserve(static_cast<std::size_t>(static_cast<double>(count) * growth) + 16);
    buffer.resize(count);
}

// What the grid kernels decide on the device, copied to the host with the
// search's totals: one host read per build, none between the bounds and the
// pair counts, so the whole build can run as one CUDA graph.
struct GridState {
    GridChoice grids;
    int numHomeAtoms;    // atoms gridded (equals numHome)
    int numHaloAtoms;    // non-padding halo atoms
    int firstNonFinite;  // INT_MAX: every non-padding position is finite
    // 1: nothing was gridded -- the grids need more columns than the build's
    // capacity (build again with more), or a position is not finite.
    int skipped;
    int numHomeClusters;
    int numClusters;
    // 1: a column had more atoms than one block sorts (grid_build.cu); the
    // layout is wrong, build again with the global sort.
    int columnTooLong;
};

// The sizes the kernels read (from the device, so a graph of the build
// stays valid while they change within its capacities).
struct BuildSizes {
    int numHome;
    int numLocal;
};

// Atoms in cluster order on the device (one slot per cluster position).
struct DeviceLayout {
    GridChoice grids;
    int numHome = 0;
    int numLocal = 0;
    int numHomeAtoms = 0;  // atoms gridded (equals numHome)
    int numHaloAtoms = 0;  // non-padding halo atoms
    // Known on the host after the build's one read (-1 before). Until then
    // launches, sorts and scans cover the capacities below: atoms, columns
    // (0: unknown, probeColumns learns it), and the clusters they can make.
    int numHomeClusters = 0;
    int numClusters = 0;
    int atomCapacity = 0;
    int homeCapacity = 0;
    int columnCapacity = 0;
    int maxHomeClusters = 0;
    int maxClusters = 0;
    int sortEndBit = 0;
    int numColumns() const { return grids.numColumns(); }
    long long numSlots() const { return static_cast<long long>(numClusters) * kClusterSize; }
    long long numHomeSlots() const { return static_cast<long long>(numHomeClusters) * kClusterSize; }
    long long maxSlots() const { return static_cast<long long>(maxClusters) * kClusterSize; }

    cuda::DeviceBuffer<GridState> state;
    cuda::PinnedBuffer<GridState> stateHost;
    cuda::DeviceBuffer<BuildSizes> sizes;
    cuda::PinnedBuffer<BuildSizes> sizesHost;
    cuda::DeviceBuffer<int> columnClusterStart;   // columnCapacity + 1 (the last entries: the total)
    cuda::DeviceBuffer<int> atomOfSlot;           // -1: empty slot
    cuda::DeviceBuffer<std::uint8_t> zoneOfSlot;  // kPaddingMask for empty slots
    cuda::DeviceBuffer<float> chargeOfSlot;       // q sqrt(f); 0 for empty slots
    // atomCapacity: each atom's slot, -1 for padding (the inverse of
    // atomOfSlot), so the fused update walks the home atoms in order and the
    // forward copies the halo's positions into their slots
    // (Nonbonded::haloPositionRecords).
    cuda::DeviceBuffer<int> slotOfAtom;
    cuda::DeviceBuffer<float4> bboxLo, bboxHi;  // per cluster
    // Positions + scaled charge per slot: the local kernel's copy (home slots)
    // and the non-local kernel's copy (all slots at the build; each step the
    // non-local gather refreshes the slots the non-local list reads), so the
    // two never race when they run on different streams.
    cuda::DeviceBuffer<float4> xqLocal, xqNonlocal;
    // Force accumulators in slot order, zero between steps (the scatter into
    // the caller's array clears them).
    cuda::DeviceBuffer<float4> fLocal, fNonlocal;
    // Home clusters that the non-local list reads or writes (as i or j
    // cluster of its outer list), in no particular order: the non-local
    // gather and scatter visit these and the halo clusters only, not every
    // home slot (at 180k atoms per GPU that was ~10 us of the step).
    cuda::DeviceBuffer<int> nonlocalHomeClusters;
    int numNonlocalHomeClusters = 0;
    // The slots the non-local gather and scatter visit: the listed home
    // clusters' slots, then every halo slot.
    long long numNonlocalSlots() const {
        return static_cast<long long>(numNonlocalHomeClusters) * kClusterSize + (numSlots() - numHomeSlots());
    }

    // Build scratch.
    cuda::DeviceBuffer<unsigned char> boundsPartials;  // BoundsPartial[2 * blocks]
    cuda::DeviceBuffer<std::uint32_t> keys, keysSorted;
    cuda::DeviceBuffer<int> atoms, atomsSorted;
    cuda::DeviceBuffer<int> columnCount, columnAtomStart, clusterColumn;
    // The sort by columns (one block per column), or else one radix sort of
    // every key (large systems, and for good once a column was too long for
    // a block): set by reserveLayout.
    bool columnSort = true;
    bool columnsTooLong = false;
    cuda::DeviceBuffer<int> columnFill;
    cuda::DeviceBuffer<std::uint64_t> bucket;
    cuda::DeviceBuffer<unsigned char> cubTemp;
    cuda::DeviceBuffer<int> clusterFlag, flaggedCount;
    cuda::PinnedBuffer<int> flaggedCountHost;
    bool flaggedCountPending = false;
};

struct BoundsPartial {
    float lo[3];
    float hi[3];
    int count;
    int firstNonFinite;  // INT_MAX if none
};

// The bounds of the home atoms [0, sizes->numHome) and of the non-padding
// halo atoms [numHome, numLocal), and the grids chooseGrids() takes from
// them, into *state (no host read). More columns than columnCapacity, or a
// non-finite position, mark the state skipped. partials: boundsPartialsBytes().
std::size_t boundsPartialsBytes();
void enqueueGridChoice(const Vec3f* dX, const std::uint8_t* dZoneMask, const BuildSizes* sizes, unsigned char* partials,
                       int columnCapacity, GridState* state, cudaStream_t stream);

// GPU timestamps between the parts of a build (HALOEX_SEARCH_TIMELINE=1, for
// measurements: the build then runs call by call, never as a graph). The
// intervals include any wait for the host's next launch.
class BuildMarks {
public:
    BuildMarks() = default;
    BuildMarks(const BuildMarks&) = delete;
    BuildMarks& operator=(const BuildMarks&) = delete;
    ~BuildMarks();
    void start(cudaStream_t stream);
    // The part since the previous mark ends here (stream-ordered).
    void mark(const char* part, cudaStream_t stream);
    // After the stream's synchronisation: "part us, ..." and the total.
    std::string report() const;

private:
    std::vector<std::pair<const char*, cudaEvent_t>> events_;
    std::size_t used_ = 0;
};
inline void mark(BuildMarks* marks, const char* part, cudaStream_t stream) {
    if (marks != nullptr) marks->mark(part, stream);
}

// The grid build in three parts, so that it can be captured in a graph:
// reserveLayout sizes every buffer for (numHome, numLocal) within the
// capacities (host only: call it before enqueueLayout and before a capture);
// enqueueLayout grids the atoms -- bounds, grid choice, keys, sort, column
// scan, slots, bounding boxes -- without a host read, and copies the
// GridState to layout.stateHost; after the stream's next synchronisation
// acceptLayout takes it. probeColumns learns the column capacity when it is
// unknown (first build) or too small (acceptLayout returned false).
void reserveLayout(DeviceLayout& layout, int numHome, int numLocal, double growth);
void enqueueLayout(DeviceLayout& layout, const Vec3f* dX, const float* dCharge, const std::uint8_t* dZoneMask,
                   float sqrtCoulomb, cudaStream_t stream, BuildMarks* marks = nullptr);
// Runs the bounds and the grid choice alone and reads them (synchronises
// `stream`); sets the column capacity from the columns they need. Throws
// InvalidInput for a non-finite position of a non-padding atom.
void probeColumns(DeviceLayout& layout, const Vec3f* dX, const std::uint8_t* dZoneMask, double growth,
                  cudaStream_t stream);
// Takes the copied GridState: throws InvalidInput for a non-finite position;
// false if the grids needed more columns than the capacity (then the layout
// is empty: the capacity is raised to fit them) or a column had more atoms
// than the per-column sort takes (the global sort is used from then on):
// reserve and build again.
bool acceptLayout(DeviceLayout& layout, double growth);

struct DeviceList {
    int numEntries = 0;
    long long numPairs = 0;
    long long atomPairs = 0;
    cuda::DeviceBuffer<ClusterEntry> entries;
    cuda::DeviceBuffer<ClusterPair> pairs;
    // Search scratch: per task (i cluster) pair counts, and where its pairs
    // and entries start (one scan of the counts).
    cuda::DeviceBuffer<int> pairCount, pairOffset, entryOffset;
    // [atom pairs, error flag, largest count, compacted on the device]
    cuda::DeviceBuffer<unsigned long long> counters;
    // One-pass search: a slot of scratchCapacity pairs per i cluster, sized
    // from the largest count of the last build (an overflow falls back to
    // the two-pass search once and grows it).
    cuda::DeviceBuffer<ClusterPair> scratch;
    int scratchCapacity = 128;
    cuda::DeviceBuffer<unsigned char> cubTemp;
    // The fill pass's counters, copied to the host for finishSearch; the
    // count totals of both lists (enqueueSearchCounts writes the local list's).
    cuda::PinnedBuffer<unsigned long long> countersHost;
    cuda::PinnedBuffer<int> totalsHost;
    bool fillPending = false;
    // Set by reserveSearch for the build: whether the list is searched at all.
    bool counted = false;
    // Entries longer than 32 j clusters (the build's entry length): the
    // force kernel then takes each entry's records 32 at a time.
    bool longEntries = false;
    bool quarterTile = false;  // entries of 32 j clusters or more: the force kernel's quarter tile

    // Rolling pruning (NonbondedOptions::rlistInner > 0): the inner list the
    // force kernel reads. innerEntries[e] is entries[e] with jEnd = jBegin +
    // kept; innerPairs[jBegin, jBegin + kept) are entry e's kept pairs in
    // their outer order (the rest of its outer range is stale). Same
    // capacities as entries / pairs, so an entry never moves.
    bool pruned = false;
    // The search's compaction wrote the inner list (no full prune needed).
    bool prunedAtSearch = false;
    int pruneParts = 1;
    float rlistInner2 = 0.f;  // as the kernels compare it (rlistSquared)
    cuda::DeviceBuffer<ClusterEntry> innerEntries;
    cuda::DeviceBuffer<ClusterPair> innerPairs;
    // [first entry, end entry, part] of the part to prune next (the range
    // first: the force kernel loads it as one 8-byte int2): device state
    // (advanced by the scatter after each force kernel), so a replayed graph
    // prunes a different part each step.
    cuda::DeviceBuffer<int> pruneState;

    // What the force kernel evaluates.
    const ClusterEntry* evaluatedEntries() const { return pruned ? innerEntries.data() : entries.data(); }
    const ClusterPair* evaluatedPairs() const { return pruned ? innerPairs.data() : pairs.data(); }
};

// The local (home-home) and the non-local list, in three parts like the
// grid: reserveSearch sizes their search scratch for the layout's capacities
// (host only); enqueueSearchCounts runs one search pass each (counts, and the
// pairs into scratch slots) and the scan of the counts, and copies the totals
// to the host (no host read: capturable with enqueueLayout); after the
// stream's synchronisation and acceptLayout, finishSearchCounts compacts
// each list into its dense form -- or, where a slot overflowed, searches it
// again by the fill pass, whose check and statistics are copied to the host
// asynchronously: call finishSearch after the next synchronisation.
// With prune.parts > 0 the lists are also prepared for rolling pruning
// (preparePrune) and, where the one-pass search did not overflow, their inner
// lists are written by the compaction from the search's own distances --
// exactly what launchFullPrune would write (list.prunedAtSearch).
struct SearchPrune {
    int parts = 0;            // 0: no pruning
    float rlistInner2 = 0.f;  // as the kernels compare it (rlistSquared)
};
void reserveSearch(DeviceList (&lists)[2], DeviceLayout& layout, const SearchPrune& prune, double growth);
void enqueueSearchCounts(DeviceList (&lists)[2], DeviceLayout& layout, const SearchSettings& settings,
                         const SearchPrune& prune, cudaStream_t stream, BuildMarks* marks = nullptr);
void finishSearchCounts(DeviceList (&lists)[2], DeviceLayout& layout, const SearchSettings& settings, double growth,
                        const SearchPrune& prune, cudaStream_t stream);
// enqueueSearchCounts also compacts both lists on the device, sizing them
// there (into their arrays as they are), and collects the non-local home
// clusters. After the synchronisation: true if it could (no slot
// overflowed, every list fit its arrays): the lists, their pruning state
// and layout.numNonlocalHomeClusters are then set, and finishSearchCounts,
// collectNonlocalHomeClusters and their synchronisation are not needed.
bool takeDeviceCompaction(DeviceList (&lists)[2], DeviceLayout& layout, const SearchPrune& prune);
// Throws Internal if the two passes disagreed; sets list.atomPairs.
void finishSearch(DeviceList& list, bool nonlocal);

// Fills layout.nonlocalHomeClusters from the non-local (outer) list. Call
// after finishSearchCounts; their count is copied to the host asynchronously: call
// finishNonlocalHomeClusters after the next synchronisation of `stream`.
void collectNonlocalHomeClusters(DeviceLayout& layout, const DeviceList& nonlocalList, double growth,
                                 cudaStream_t stream);
// Sets layout.numNonlocalHomeClusters from the copy collectNonlocalHomeClusters started.
void finishNonlocalHomeClusters(DeviceLayout& layout);

// Registers of the one-pass search kernel.
cudaFuncAttributes searchKernelAttributes();

// Error reports (nonbonded.cpp: fmt stays out of nvcc's way).
[[noreturn]] void throwNonFiniteAtom(int atom, int numHome);
[[noreturn]] void throwSearchPassesDisagree(bool nonlocal);

// --- per-step kernels (nonbonded.cu) -----------------------------------------
struct KernelParams {
    PairConstants c;
    float3 shifts[kNumShifts];
};

// Gathers positions of the local list's slots (home) or the non-local list's
// (its home clusters and the halo; haloOnly: the halo alone, where the fused
// update with a halo keeps the home clusters' slots) into the matching xq copy.
void launchGather(const Vec3f* dX, DeviceLayout& layout, bool local, cudaStream_t stream, bool haloOnly = false,
                  cuda::StreamOrder order = cuda::StreamOrder::Programmatic);
// The pair kernel over one list (list.evaluated*: the inner list when
// pruned) into the list's slot-ordered force buffer.
// With energies, the grid is capped at maxEnergyBlocks. When the list is
// pruned the kernel also does the rolling prune: it evaluates the part of
// the entries the device counter names from the outer list, rewrites their
// inner lists from the distances it computed (with this step's positions)
// (the scatter then advances the part) -- no second pass over the list.
void launchNonbonded(const KernelParams& params, DeviceList& list, DeviceLayout& layout, bool local, bool energies,
                     int maxEnergyBlocks, double* dEnergies, cudaStream_t stream,
                     cuda::StreamOrder order = cuda::StreamOrder::Programmatic);
// Adds the list's slot-ordered forces into dF and clears them (the slots the
// gather visits: haloOnly as there, the home clusters' forces then stay in
// their slots for the fused update); a pruned list's rolling prune moves on
// to its next part.
void launchScatter(DeviceLayout& layout, DeviceList& list, bool local, Vec3f* dF, cudaStream_t stream,
                   bool haloOnly = false);
// The home atoms' update in one kernel: each atom's force from its local
// slot -- stored into dF for one rank without a halo (Nonbonded::updateLocal;
// dHaloForces null), or, with dHaloForces, plus what that holds for the atom
// and what its non-local slot holds, both then zeroed (Nonbonded::updateHome;
// dF null) -- the leapfrog update of args (x, v; args.f is not read) and the
// gather of the new positions into the local slots (with dHaloForces also the
// non-local ones); with
// args.averageKineticEnergy also an energy step's kinetic energy and the
// non-finite check into dFirstBad; with homeStores (a halo only) also the
// stores of the next forward's home entries (Nonbonded::updateHome).
// nonlocalPrune: the non-local list's rolling prune, moved on here where no
// scatter of that list does it (the exchange took the halo's forces).
struct PruneAdvance {
    int* state = nullptr;
    int numEntries = 0;
    int parts = 1;
};
void launchUpdateLocal(DeviceLayout& layout, DeviceList& list, const LeapfrogArgs& args, Vec3f* dF, Vec3f* dHaloForces,
                       int* dFirstBad, cudaStream_t stream, const transport::HomeCoordinateStores* homeStores = nullptr,
                       PruneAdvance nonlocalPrune = {});
// Adds to *dCount the atom pairs with atomDistance2 < rc2 of the list's
// evaluated entries (outer = false) or of its outer list (diagnostic).
void launchCountWithinCutoff(const DeviceList& list, bool outer, DeviceLayout& layout, bool local, Float3 boxLengths,
                             float rc2, unsigned long long* dCount, cudaStream_t stream);

// --- pruning (prune.cu) -------------------------------------------------------
// Sizes the list's inner buffers to its outer list, sets its pruning
// parameters and resets the part counter to 0 (enqueued on `stream`). Call
// after the search's totals are known (finishSearchCounts).
void preparePrune(DeviceList& list, int parts, float rlistInner2, double growth, cudaStream_t stream);
// Prunes every entry of the list against list.rlistInner2 with the positions
// in the list's xq copy (local: xqLocal, else xqNonlocal): the search step's
// full prune. The rolling prune of later steps is fused into the force
// kernel (launchNonbonded).
void launchFullPrune(DeviceList& list, DeviceLayout& layout, bool local, Float3 boxLengths, cudaStream_t stream);
cudaFuncAttributes pruneKernelAttributes();
int energyKernelBlocksPerSm();
int forceKernelBlocksPerSm();
inline constexpr int kForceKernelWarpsPerBlock = 4;
// The force kernel's tiles, as launchNonbonded chooses them by the list's
// longest entry: four pairs per lane (< 32 j clusters), the quarter tile
// (exactly 32) and the quarter tile for long entries (> 32).
enum class ForceTile { Four, Quarter, QuarterLong };
cudaFuncAttributes nonbondedKernelAttributes(bool energies, bool prune, ForceTile tile);

}  // namespace haloex::md::gpu::detail
