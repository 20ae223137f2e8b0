#pragma once
// GPU non-bonded forces of one rank (DESIGN §4, §5): cluster-pair search and
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

#include "haloex/core/vec3.hpp"
#include "haloex/md/forcefield.hpp"
#include "haloex/md/gpu/cluster_reference.hpp"
#include "haloex/plan/box.hpp"

namespace haloex::md::gpu {

struct NonbondedOptions {
    // Long i-cluster lists are split into warp work items of at most this
    // many j clusters (1..32). 0: automatic -- 32, or 16 or 8 when the
    // local list would otherwise give fewer than 3 waves of warps on this
    // GPU (small systems balance better with more, shorter items).
    int maxJClustersPerEntry = 0;
    // Buffers grow with this headroom so later searches rarely reallocate.
    double growthFactor = 1.25;
};

enum class ListKind { Local, Nonlocal };

// Host-side counters of one list, known after build().
struct PairListStats {
    int entries = 0;               // warp work items
    std::int64_t clusterPairs = 0;
    std::int64_t atomPairs = 0;    // set mask bits: atom pairs in the list (within rlist or not)
};

// Energy slots in deviceEnergies().
enum EnergyIndex : int { kEnergyLj = 0, kEnergyCoulomb = 1, kEnergyVirial = 2, kNumEnergies = 3 };

class Nonbonded {
public:
    // rlist >= ff.rc: the pair-list (buffered) cutoff. Throws InvalidInput.
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
    void computeLocal(const Vec3f* dX, Vec3f* dF, bool energies, cudaStream_t stream);
    // Same for the non-local list; reads halo positions, adds forces on home
    // and halo atoms (the latter go home by the reverse halo exchange).
    // Enqueues nothing when the list is empty.
    void computeNonlocal(const Vec3f* dX, Vec3f* dF, bool energies, cudaStream_t stream);

    // Zeroes the energy accumulators (enqueued on `stream`).
    void clearEnergies(cudaStream_t stream);
    // Device array of kNumEnergies doubles: [lj, coulomb pairs, virial] (kJ/mol).
    const double* deviceEnergies() const;

    PairListStats stats(ListKind kind) const;
    int numHome() const;
    int numLocal() const;
    int numHomeClusters() const;
    int numClusters() const;
    double rlist() const;
    // The entry length the last build() used (resolves the automatic choice).
    int maxJClustersPerEntry() const;

    // --- diagnostics (synchronise; for tests and benchmarks) ----------------
    // Atom pairs of the list closer than rc at the positions in dX.
    std::int64_t countPairsWithinCutoff(ListKind kind, const Vec3f* dX, cudaStream_t stream);
    // Copies of the device layout and lists, comparable with the CPU
    // reference (cluster_reference.hpp).
    ClusterLayoutHost copyLayoutToHost() const;
    PairListHost copyListToHost(ListKind kind) const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// Registers and spills of the kernels on this device (for reports).
struct KernelResources {
    const char* name;
    int registers;
    int localBytes;  // > 0 means spills / local arrays
    int maxThreadsPerBlock;
};
std::array<KernelResources, 3> nonbondedKernelResources();  // forces, forces+energies, search

}  // namespace haloex::md::gpu
