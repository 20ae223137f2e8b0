#pragma once
// One rank's MD compute (forces, integration) on the CPU or a GPU. The engine
// (engine.hpp) owns the loop, repartitioning and output; a backend owns the
// per-step work and its schedule (streams, CUDA graphs), using the transport
// for the halo exchange.
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "haloex/md/forcefield.hpp"
#include "haloex/md/home_atoms.hpp"
#include "haloex/plan/particle_plan.hpp"
#include "haloex/transport/transport.hpp"

namespace haloex::md {

// Per-local-atom static data, valid from one search step to the next.
struct LocalStatics {
    std::vector<float> charges;                // e
    std::vector<std::int32_t> types;
    std::vector<std::int64_t> globalIds;
    std::vector<plan::ZoneMask> zoneMasks;     // from the plan (padding marked)
};

// This rank's share of the energies of one step (kJ/mol).
struct EnergyTerms {
    double lj = 0.0;
    double coulombPairs = 0.0;
    double coulombSelf = 0.0;
    double kinetic = 0.0;        // leapfrog: mean of the two half-step kinetic energies
    double virial = 0.0;
    // First atom (global id) found with a non-finite force or position, and
    // the backend's step count when it was found (sticky); -1 if none.
    std::int64_t nonFiniteAtom = -1;
    std::int64_t nonFiniteStep = -1;
};

// Device-side timeline averages over the steps run so far (DESIGN §6), in us.
struct StepTimings {
    std::int64_t samples = 0;
    std::vector<double> localUs, nonlocalUs, nonoverlapUs;  // one value per sampled step
};

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
};

class RankBackend {
public:
    virtual ~RankBackend() = default;

    virtual std::string description() const = 0;           // "CPU reference", "GPU 0: NVIDIA H200"
    virtual transport::MemorySpace memorySpace() const = 0;

    // Search step, in this order: setHome (positions into the transport's
    // coordinates, velocities kept by the backend), the engine runs the
    // transport's forward exchanges, then prepare() builds the pair lists.
    virtual void setHome(transport::ParticleTransport& transport, std::span<const AtomRecord> home) = 0;
    virtual void prepare(transport::ParticleTransport& transport, const LocalStatics& statics,
                         const BackendContext& context) = 0;
    // Current home positions and velocities (may block the host).
    virtual void getHome(transport::ParticleTransport& transport, std::span<AtomRecord> home) = 0;

    // Steps run since the backend was created (the engine adds its offset).
    virtual std::int64_t stepsRun() const = 0;
    // Runs `count` MD steps (forces at x(t), v(t+dt/2), x(t+dt)); energies are
    // computed on the last one when asked. Must not block the host on GPUs.
    virtual void runSteps(transport::ParticleTransport& transport, int count, bool energiesOnLast) = 0;
    // This rank's energies of the last energy step (blocks until available).
    virtual EnergyTerms energies() = 0;
    // Velocity scaling applied from the next step on (thermostat).
    virtual void setVelocityScale(double lambda) = 0;
    // Waits for all queued work (timing boundaries, output steps).
    virtual void synchronize() = 0;

    virtual StepTimings timings() const { return {}; }
    virtual std::int64_t hostSyncsInSteps() const { return 0; }
    virtual bool graphsActive() const { return false; }
};

}  // namespace haloex::md
