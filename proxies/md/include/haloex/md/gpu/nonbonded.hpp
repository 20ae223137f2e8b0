#pragma once
// GPU non-bonded forces of one rank (docs/md-engine.md): cluster-pair search and
// the LJ + reaction-field kernel, in the spirit of GROMACS's nbnxm.
//
// Local atom layout (the rank's, see plan/particle_plan.hpp): [0, numHome)
// home atoms, then halo atoms; padding atoms (zone mask kPaddingMask) hold
// garbage positions and are left out. Home and halo atoms are gridded
// separately (columns in x-y, sorted by z, clusters of 8), so a home cluster
// holds home atoms only. Two lists, each atom pair in exactly one of them:
//   local     home-home cluster pairs              (computeLocal)
//   non-local pairs with at least one halo cluster (computeNonlocal), with
//             the zone-mask ownership rule frozen into the masks at build()
// Periodic images only along dims flagged periodic (= undecomposed).
//
// Units: nm, kJ/mol, e. Forces in kJ mol^-1 nm^-1.
//
// Streams and graphs: build() may synchronise. computeLocal/computeNonlocal
// only enqueue kernels on the given stream (no allocation, no host sync, no
// host reads) and may run concurrently on two streams: they use separate
// internal buffers and add into dF with atomics. They are capturable in a
// CUDA graph; a graph must be re-captured after every build() (list sizes and
// buffers change). Two calls for the same list (e.g. computeLocal twice) must
// be ordered (same stream, or an event between them): each list has one set
// of internal buffers.
#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "haloex/core/vec3.hpp"
#include "haloex/md/forcefield.hpp"
#include "haloex/md/gpu/cluster_reference.hpp"
#include "haloex/md/gpu/integrate.hpp"
#include "haloex/plan/box.hpp"
#include "haloex/transport/coordinate_force_exchange.hpp"

namespace haloex::md::gpu {

struct NonbondedOptions {
    // Long i-cluster lists are split into warp work items of at most this
    // many j clusters (1..kMaxJClustersPerEntry; a warp takes them 32 at a
    // time). 0: automatic -- 128 where about one entry per i cluster still
    // gives 4 waves of warps on this GPU, else the longest of 32 and 16
    // that gives 3, else 8: long items carry an i cluster's load, reduction
    // and atomics once for all its j clusters (and a pruned item keeps its
    // pairs in one run), short ones balance small systems.
    int maxJClustersPerEntry = 0;
    // Buffers grow with this headroom so later searches rarely reallocate.
    double growthFactor = 1.25;
    // Dynamic ("rolling") pruning of the lists, as GROMACS does on GPUs.
    // rlistInner (nm): radius of the inner list the force kernel evaluates,
    // rc <= rlistInner <= rlist. 0 = no pruning: the kernel evaluates the
    // whole list built at build(), exactly as without this option.
    // With pruning, build() prunes every entry of the (outer) list against
    // rlistInner with the positions of the build; then every computeLocal /
    // computeNonlocal re-prunes, inside its force kernel, one of `pruneParts`
    // contiguous parts of that list's entries (prunePartBegin in
    // cluster_geometry.hpp), in turn, with the positions of that step (the
    // kernel evaluates that part from the outer list -- the same forces, as
    // pairs beyond rc add nothing -- and keeps the distances it computes
    // anyway, so pruning needs no extra pass over the list). So an
    // entry is pruned every pruneParts steps and its inner list is used for
    // the next pruneParts steps: rlistInner must cover pruneParts steps of
    // motion (chooseRlistInner in verlet_buffer.hpp). The part to prune next
    // lives on the device and advances on the device, so a captured step
    // graph replays correctly; build() resets it to part 0.
    double rlistInner = 0.0;
    int pruneParts = 8;  // >= 1; used only when rlistInner > 0 (haloex-md: kDefaultPruneParts)
    // build() replays the grid and the count passes of the search as one CUDA
    // graph (captured again only when a capacity or an input array changes):
    // at small sizes the search step is bound by launches, not by the GPU.
    // False launches the same work one call at a time. The lists are the
    // same either way. HALOEX_SEARCH_GRAPH=0/1 overrides it (measurements).
    bool searchGraph = true;
};

enum class ListKind { Local, Nonlocal };

// Host-side counters of one list, known after build(). With pruning these
// are the outer list's (the inner list changes on the device every step:
// copyListToHost(kind, ListView::Evaluated) reads it).
struct PairListStats {
    int entries = 0;  // warp work items
    std::int64_t clusterPairs = 0;
    std::int64_t atomPairs = 0;  // set mask bits: atom pairs in the list (within rlist or not)
};

// What one list holds now (Nonbonded::census): its entries (and how many are
// empty), the cluster pairs and atom pairs (mask bits) the force kernel
// evaluates for it, and how many of those atom pairs are closer than rc --
// the useful ones.
struct ListCensus {
    std::int64_t clusterPairs = 0;
    std::int64_t atomPairs = 0;
    std::int64_t pairsWithinCutoff = 0;
    std::int64_t entries = 0;       // the force kernel's passes (one warp each)
    std::int64_t emptyEntries = 0;  // of them, with no pair left (pruned inner list)
};

// Which list a diagnostic reads: the one the force kernel evaluates (the
// pruned inner list when pruning is on, else the list built at build()) or
// the outer list built at build().
enum class ListView { Evaluated, Outer };

// Energy slots in deviceEnergies().
enum EnergyIndex : int { kEnergyLj = 0, kEnergyCoulomb = 1, kEnergyVirial = 2, kNumEnergies = 3 };

class Nonbonded {
public:
    // rlist >= ff.rc: the pair-list (buffered) cutoff. Throws InvalidInput
    // (also for rlistInner outside [rc, rlist] or pruneParts < 1 with pruning).
    Nonbonded(const ForceField& ff, double rlist, NonbondedOptions options = {});
    ~Nonbonded();
    Nonbonded(const Nonbonded&) = delete;
    Nonbonded& operator=(const Nonbonded&) = delete;

    // Search step: grids the atoms and builds both lists from the positions
    // now in dX (device, numLocal entries), the charges (e) and zone masks of
    // the local atoms. dZoneMask may be null when numLocal == numHome.
    // periodic[d]: use shift vectors along d (requires L_d > 2 rlist).
    // Synchronises `stream`. Throws InvalidInput for a non-finite position of
    // a non-padding atom (naming its local index) or a too-small periodic box.
    void build(const Vec3f* dX, const float* dCharge, const std::uint8_t* dZoneMask, int numHome, int numLocal,
               const plan::Box& box, std::array<bool, 3> periodic, cudaStream_t stream);

    // Adds the forces of the local (home-home) pairs into dF (numLocal
    // entries, the rank's layout) reading the positions now in dX. With
    // `energies`, also adds LJ, Coulomb (pair part, without the reaction-field
    // self term) and virial (-1/2 sum r_ij . f_ij) into deviceEnergies().
    // With pruning, the same kernel also re-prunes the next part of the local
    // list with these positions (the next call evaluates the result).
    // firstAfterEventWait (here and in computeLocalForces): the stream has
    // just waited for another stream's launch-completion event, so the first
    // kernel is launched plainly, not as a programmatic dependent
    // (cuda::StreamOrder::Full says why).
    void computeLocal(const Vec3f* dX, Vec3f* dF, bool energies, cudaStream_t stream, bool firstAfterEventWait = false);
    // Same for the non-local list; reads halo positions, adds forces on home
    // and halo atoms (the latter go home by the reverse halo exchange).
    // Enqueues nothing when the list is empty.
    void computeNonlocal(const Vec3f* dX, Vec3f* dF, bool energies, cudaStream_t stream);

    // One rank without a halo, two kernels a step instead of four
    // (docs/md-engine.md, "Fused update"; --fuse-update): computeLocalForces
    // enqueues the force kernel alone, reading the local slots' positions as
    // build() or the last updateLocal (or computeLocal, census) left them --
    // gpu::leapfrog does not update them, so after it use computeLocal;
    // updateLocal then stores each home atom's force into dF (stored, not
    // added: on one rank nothing else adds to it, so nothing needs clearing;
    // args.f is not read), moves the atom by gpu::leapfrog's arithmetic and
    // gathers its new position for the next step. With
    // args.averageKineticEnergy (an energy step) it also adds the kinetic
    // energy and makes gpu::checkFinite's check of the old positions and the
    // forces into dFirstBad. args.numAtoms must be numHome(). The results are
    // computeLocal + gpu::leapfrog's, bit for bit.
    void computeLocalForces(bool energies, cudaStream_t stream, bool firstAfterEventWait = false);
    void updateLocal(const LeapfrogArgs& args, Vec3f* dF, int* dFirstBad, cudaStream_t stream);
    // A rank with a halo, the same fused update after computeLocalForces:
    // each home atom's force is its local slot's plus its non-local slot's
    // (where computeNonlocalHalo leaves it; zero after computeNonlocal) plus
    // what dF already holds for it (the non-local scatter and the reverse
    // halo exchange add there; enqueue this after both), and zeroes the home
    // atoms' entries of dF for the next step: clear the rest after it
    // (CoordinateForceHalo::clearHaloForces). The new positions go to both
    // the local and the non-local slot order. The results are computeLocal +
    // computeNonlocal + gpu::leapfrog's up to the order of the float
    // additions into each atom's force. With homeStores (CoordinateForceHalo::
    // homeCoordinateStores) each new position also goes where the next
    // forward sends it, for gatherCoordinatesAfterHomeStores.
    void updateHome(const LeapfrogArgs& args, Vec3f* dF, int* dFirstBad, cudaStream_t stream,
                    const transport::HomeCoordinateStores* homeStores = nullptr);
    // computeNonlocal for a step that ends in updateHome: the non-local
    // list's home clusters read the positions build() or the last updateHome
    // put in slot order and leave their forces in their slots for updateHome;
    // only the halo slots are gathered from dX and scattered into dF (after
    // gpu::leapfrog, use computeNonlocal). Two kernels of the non-local path
    // visit the halo alone, or none where the exchange moves the halo
    // (setHaloMovedByExchange).
    void computeNonlocalHalo(const Vec3f* dX, Vec3f* dF, bool energies, cudaStream_t stream);
    // The non-local kernel's halo slots as records of the halo's atoms
    // (transport::HaloRecords: each atom's slot, -1 for padding), for a
    // forward that copies the received positions into them itself
    // (CoordinateForceHalo::copyReceivedCoordinates; the slot's charge
    // kept) and a reverse that takes the halo's forces from them
    // (addHaloForcesFromRecords). Valid until the next build().
    transport::HaloRecords haloPositionRecords();
    transport::HaloRecords haloForceRecords();
    // Whether the exchange now does computeNonlocalHalo's gather (it copies
    // into haloPositionRecords()) and its scatter (it takes
    // haloForceRecords()): computeNonlocalHalo then launches the force
    // kernel alone, and without the scatter updateHome moves the non-local
    // list's rolling prune on. Off after every build().
    void setHaloMovedByExchange(bool positions, bool forces);

    // Zeroes the energy accumulators (enqueued on `stream`).
    void clearEnergies(cudaStream_t stream);
    // Device array of kNumEnergies doubles: [lj, coulomb pairs, virial] (kJ/mol).
    const double* deviceEnergies() const;

    // Host wall time (ms) of the parts of the last build(): gridding,
    // the two list searches, the non-local home clusters, pruning, and the
    // final synchronisation (work still queued at a part's end is counted
    // in the next part).
    const std::vector<std::pair<const char*, double>>& buildPartsMs() const;

    PairListStats stats(ListKind kind) const;
    int numHome() const;
    int numLocal() const;
    int numHomeClusters() const;
    int numClusters() const;
    double rlist() const;
    double rlistInner() const;  // 0: no pruning
    int pruneParts() const;     // meaningful when rlistInner() > 0
    bool pruning() const { return rlistInner() > 0.0; }
    // The entry length the last build() used (resolves the automatic choice).
    int maxJClustersPerEntry() const;
    // How many times build() captured its search graph (options.searchGraph):
    // once, plus once per change of a capacity or an input array.
    int searchGraphCaptures() const;
    // Builds whose lists the device compacted without a second host round
    // trip (every build after the first while the lists fit their arrays).
    int deviceCompactions() const;

    // --- diagnostics (synchronise; for tests and benchmarks) ----------------
    // Atom pairs of the list closer than rc at the positions in dX. The
    // default counts what the force kernel evaluates now (the inner list when
    // pruning), so "pairs within rc" and the fraction of useful pairs are
    // honest; ListView::Outer counts the list built at build(). Overwrites
    // the list's gathered positions (the next compute gathers again).
    std::int64_t countPairsWithinCutoff(ListKind kind, const Vec3f* dX, cudaStream_t stream,
                                        ListView view = ListView::Evaluated);
    // The same count with the list's cluster pairs and atom pairs in that
    // view (with pruning, the inner list's differ from stats()'s outer ones).
    ListCensus census(ListKind kind, const Vec3f* dX, cudaStream_t stream, ListView view = ListView::Evaluated);
    // Copies of the device layout and lists, comparable with the CPU
    // reference (cluster_reference.hpp). ListView::Outer (the default) is
    // the list of the last build(); ListView::Evaluated the one the next
    // force kernel would read, made dense (entries in the same order, each
    // pointing at its kept pairs): compare with pruneReference().
    ClusterLayoutHost copyLayoutToHost() const;
    PairListHost copyListToHost(ListKind kind, ListView view = ListView::Outer) const;
    // The part of the list the next force kernel re-prunes (the rolling
    // prune's device counter; synchronises the device), or -1 for a list
    // that is not pruned or is empty.
    int nextPrunePart(ListKind kind) const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// Registers and spills of the kernels on this device (for reports).
struct KernelResources {
    std::string name;
    int registers;
    int localBytes;  // > 0 means spills / local arrays
    int maxThreadsPerBlock;
    int localBytesAllowed = 0;  // a spill measured cheaper than the occupancy it buys back
};
// Every force kernel build the launcher can choose -- forces, forces +
// energies, the same two with the fused rolling prune, for each tile (four
// pairs per lane; the quarter tile for a longest entry of 32; the quarter
// tile for entries of more than 32) -- then the search (one pass) and the
// search step's full prune.
std::array<KernelResources, 14> nonbondedKernelResources();

}  // namespace haloex::md::gpu
