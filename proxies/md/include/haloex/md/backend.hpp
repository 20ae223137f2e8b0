#pragma once
// One rank's MD compute (forces, integration) on the CPU or a GPU. The engine
// (engine.hpp) owns the loop, repartitioning and output; a backend owns the
// per-step work and its schedule (streams, CUDA graphs) and the coordinate
// and force arrays (step_arrays.hpp), exchanged through the halo API's
// CoordinateForceHalo.
#include <array>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "haloex/core/error.hpp"
#include "haloex/core/part_times.hpp"
#include "haloex/md/forcefield.hpp"
#include "haloex/md/home_atoms.hpp"
#include "haloex/plan/decomposition.hpp"
#include "haloex/plan/particle_plan.hpp"
#include "haloex/runtime/world.hpp"
#include "haloex/halo/coordinate_force_halo.hpp"
#include "haloex/transport/block_transport.hpp"

namespace haloex::md {

// Search phases' own parts and their host wall time (ms), each phase's in
// the order they ran (on the GPU: "migrate", "plan" and "pair search"; the
// part names are the libraries' string literals).
using PhaseParts = std::map<std::string, PartTimes>;

// Per-local-atom static data, valid from one search step to the next.
struct LocalStatics {
    std::vector<float> charges;  // e
    std::vector<std::int32_t> types;
    std::vector<std::int64_t> globalIds;
    std::vector<plan::ZoneMask> zoneMasks;  // from the plan (padding marked)
};

// This rank's share of the energies of one step (kJ/mol).
struct EnergyTerms {
    double lj = 0.0;
    double coulombPairs = 0.0;
    double coulombSelf = 0.0;
    double kinetic = 0.0;  // leapfrog: mean of the two half-step kinetic energies
    double virial = 0.0;
    // First atom (global id) found with a non-finite force or position, and
    // the backend's step count when it was found (sticky); -1 if none.
    std::int64_t nonFiniteAtom = -1;
    std::int64_t nonFiniteStep = -1;
};

// Device-side timeline of sampled normal steps (the last step of each chunk
// of normal steps; never a search step), in us, one value per sampled step:
//   local        the local non-bonded kernel (home-home pairs)
//   nonlocal     the non-local path: forward exchange, non-local forces, reverse exchange
//   nonoverlap   how much of the non-local path the local kernel did not hide
//   forward, nonlocalForce, reverse   the non-local path's three parts
//   update       from the last force to the end of the step (leapfrog, clearing)
//   step         the whole step on the device, local start to the step's end
// One rank (no halo): nonlocal, nonoverlap and the three parts are 0. The
// parts, update and step only with GpuBackendOptions::timelineParts (else
// empty). exchangeKernelUs, also with timelineParts and a transport whose
// kernels record timestamps (the GPU-initiated ones): inside the forward and
// reverse kernels, per pulse, from the device's own timer
// (transport::ExchangeTimestamps; names as exchangeKernelParts makes them).
struct StepTimings {
    std::int64_t samples = 0;
    // "device": GPU events on the stream (the above); "host": the CPU
    // backend's wall clock, where local is the step's own compute (forces and
    // update) and nonlocal = nonoverlap the time inside its two exchanges, the
    // waits for slower neighbours included (nothing overlaps on the CPU).
    std::string clock = "device";
    std::vector<double> localUs, nonlocalUs, nonoverlapUs;
    std::vector<double> forwardUs, nonlocalForceUs, reverseUs, updateUs, stepUs;
    // In the order first seen (exchangeKernelParts' order).
    std::vector<std::pair<std::string, std::vector<double>>> exchangeKernelUs;
    void addExchangeKernelPart(const std::string& name, double us) {
        for (auto& [known, values] : exchangeKernelUs) {
            if (known == name) {
                values.push_back(us);
                return;
            }
        }
        exchangeKernelUs.push_back({name, {us}});
    }
};

// The parts of one exchange inside its kernels, µs, by name: "forward
// kernel" and "reverse kernel" (first pulse's start to the last block's
// end), then per pulse p "forward p<p> stores" (start to every block's
// entries stored; the wait for earlier pulses included), "... until
// dependencies" (start to those pulses' arrival), "... signal" (stored to the
// receiver notified), "... until received" (start to this rank's own halo
// slot filled: the peer's side), "... clear" (received to the slot cleared);
// "reverse p<p> until dependencies", "... signal" (start to the owner
// notified), "... until received" (start to the peer's forces on what this
// rank sent), "... accumulate" (received to every block's sums). A part
// whose two points were not both reached is left out.
std::vector<std::pair<std::string, double>> exchangeKernelParts(const transport::ExchangeTimestamps& t);

struct BackendContext {
    const ForceField* forceField = nullptr;
    plan::Box box;
    std::array<bool, 3> periodic{true, true, true};  // undecomposed dimensions
    double rlist = 0.0;
    // Dynamic pruning (GPU backend; MdOptions::pruneParts): 0 parts = off.
    double rlistInner = 0.0;
    int pruneParts = 0;
    double dt = 0.002;
    bool useGraphs = true;
    int stepsPerGraph = 1;    // MdOptions::stepsPerGraph (GPU, with graphs)
    bool fuseUpdate = false;  // MdOptions::fuseUpdate (GPU, one rank)
    bool sortAtoms = false;   // MdOptions::sortAtoms (GPU, device search)
};

class RankBackend {
public:
    virtual ~RankBackend() = default;

    virtual std::string description() const = 0;  // "CPU reference", "GPU 0: NVIDIA H200"
    virtual transport::MemorySpace memorySpace() const = 0;

    // Search step on the host (the oracle path), in this order: adoptPlan
    // (collective: the backend's arrays hold plan.numLocal atoms and `halo`
    // is bound to them), setHome (positions into the coordinates, velocities
    // kept by the backend), the engine forwards the static data over the
    // World, then prepare() builds the pair lists.
    virtual void adoptPlan(CoordinateForceHalo& halo, runtime::World& world, const plan::ParticleHaloPlan& plan) = 0;
    virtual void setHome(CoordinateForceHalo& halo, std::span<const AtomRecord> home) = 0;
    virtual void prepare(CoordinateForceHalo& halo, const LocalStatics& statics, const BackendContext& context) = 0;
    // The current home atoms (may block the host). After a host search the
    // count is the one setHome was given and only positions and velocities
    // change; after a device search every field comes from the device and
    // `home` is resized.
    virtual void getHome(CoordinateForceHalo& halo, std::vector<AtomRecord>& home) = 0;

    // Search step on the device (the atoms stay there between searches; no
    // per-atom data crosses PCIe): loadHome puts the home atoms on the device
    // once (start-up, restart), then every searchOnDevice wraps and migrates
    // them, builds the halo plan, binds the halo to it, carries the static
    // data to the halo copies and builds the pair lists. Collective.
    virtual bool canSearchOnDevice(const CoordinateForceHalo& halo) const {
        (void)halo;
        return false;
    }
    virtual void loadHome(std::span<const AtomRecord> home) { (void)home; }
    struct DeviceSearchReport {
        int numHome = 0;                           // home atoms after migration
        std::uint64_t idSum = 0, idSquareSum = 0;  // fingerprint of their global ids (particles::MigrationStats)
        std::map<std::string, double> phasesMs;    // wall time of each part
        PhaseParts phasePartsMs;                   // the phases' own parts
    };
    virtual DeviceSearchReport searchOnDevice(CoordinateForceHalo& halo, const plan::Decomposition& decomposition,
                                              runtime::World& world, const BackendContext& context);

    // Steps run since the backend was created (the engine adds its offset).
    virtual std::int64_t stepsRun() const = 0;
    // Runs `count` MD steps (forces at x(t), v(t+dt/2), x(t+dt)); energies are
    // computed on the last one when asked. Must not block the host on GPUs.
    virtual void runSteps(CoordinateForceHalo& halo, int count, bool energiesOnLast) = 0;
    // This rank's energies of the last energy step (blocks until available).
    virtual EnergyTerms energies() = 0;
    // Velocity scaling applied from the next step on (thermostat).
    virtual void setVelocityScale(double lambda) = 0;
    // Waits for all queued work (timing boundaries, output steps).
    virtual void synchronize() = 0;

    // The steps queued since the last synchronize() are not sampled into
    // timings() (search steps: the timeline describes normal steps only).
    virtual void dropTimelineSample() {}
    virtual StepTimings timings() const { return {}; }
    virtual std::int64_t hostSyncsInSteps() const { return 0; }
    // --count-api-syncs (GPU backend): host-blocking CUDA calls of this
    // thread, counted by CUPTI while switched on (the engine switches it on
    // around the normal steps' runSteps, not the synchronisation that ends a
    // chunk). apiSyncsCounted(): false when the backend does not count.
    virtual void countApiSyncs(bool on) { (void)on; }
    virtual bool apiSyncsCounted() const { return false; }
    virtual std::map<std::string, std::int64_t> apiSyncs() const { return {}; }
    virtual bool graphsActive() const { return false; }
    // The nodes of the last captured normal-step graph by type ("kernel",
    // "memset", "memcpy", "event record", "event wait", "other"): what one
    // step launches (issue 34 part 4). Empty without graphs.
    virtual std::map<std::string, int> stepGraphNodes() const { return {}; }
    // Normal steps run inside graphs of several steps (MdOptions::stepsPerGraph).
    virtual std::int64_t stepsInMultiStepGraphs() const { return 0; }
    // How the step meets the halo exchange, one line each, for the run
    // summary: which kernel goes first, who stores the forward's home
    // entries, and why (RunSummary::exchangeNotes). Empty without a halo.
    virtual std::vector<std::string> exchangeNotes() const { return {}; }
};

inline RankBackend::DeviceSearchReport RankBackend::searchOnDevice(CoordinateForceHalo&, const plan::Decomposition&,
                                                                   runtime::World&, const BackendContext&) {
    throwError(ErrorKind::Internal,
               "searchOnDevice called on a backend that cannot search on the device (" + description() + ")");
}

}  // namespace haloex::md
