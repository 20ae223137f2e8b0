#pragma once
// The MD run of one rank: the loop, repartitioning at search steps, output
// steps, and the performance summary. Collective over the World; every rank
// calls run() with the same options.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "haloex/md/backend.hpp"
#include "haloex/md/forcefield.hpp"
#include "haloex/md/options.hpp"
#include "haloex/md/run_stop.hpp"
#include "haloex/md/step_kernels.hpp"
#include "haloex/runtime/world.hpp"
#include "haloex/halo/coordinate_force_halo.hpp"
#include "haloex/transport/block_transport.hpp"

namespace haloex::md {

struct EnergySample {
    std::int64_t step = 0;
    double time = 0.0;  // ps
    double lj = 0.0, coulomb = 0.0, potential = 0.0, kinetic = 0.0, total = 0.0, conserved = 0.0;
    double temperature = 0.0;  // K
    double pressure = 0.0;     // bar
};

// Least-squares slope of the conserved energy over these samples, per atom
// (kJ/mol/ps per atom): the run's "Conserved-energy drift" over all its
// energy steps, as GROMACS reports it; 0 for fewer than three samples.
double conservedDriftPerAtom(const std::vector<EnergySample>& samples, std::int64_t atoms);
// The samples at or after `fromPs` (all of them for 0).
std::vector<EnergySample> samplesFrom(const std::vector<EnergySample>& samples, double fromPs);

// One part of the run's wall time over the ranks (the log's performance table).
struct RankSpread {
    std::string name;
    double min = 0.0, avg = 0.0, max = 0.0;
};

struct RunSummary {
    std::string transport;
    std::string backend;
    std::string search;     // where search steps ran: "device" or "host"
    bool onDevice = false;  // the GPU backend: the summary's device-only lines apply
    // The step's kernels as set up (--fuse-update, --sort-atoms; auto decided
    // by chooseStepKernels), each with why: "set" when given.
    StepKernelChoice stepKernels;
    int ranks = 1;
    std::string grid;
    std::int64_t atoms = 0;
    std::int64_t firstStep = 0;
    std::int64_t steps = 0;           // steps run
    std::int64_t requestedSteps = 0;  // --steps (more than `steps` when stopped early)
    // Why the run stopped early (a signal, --maxh) and where; empty reason: it completed.
    StopRecord stop;
    // --steps 0: the evaluated step's forces (rank 0; kJ mol^-1 nm^-1), with
    // its energies in `energies`.
    struct SinglePoint {
        bool evaluated = false;
        std::int64_t step = 0;
        double maxForce = 0.0;
        std::int64_t maxForceAtom = -1;  // global id
        double rmsForce = 0.0;           // sqrt(mean |F|^2) over the atoms
    };
    SinglePoint singlePoint;
    double dt = 0.0, rc = 0.0, rlist = 0.0;
    int nstlist = 0;
    double estimatedBufferDrift = 0.0;
    // Dynamic pruning (GPU): inner radius and parts (= inner-list life in
    // steps); pruneParts 0 = off.
    double rlistInner = 0.0;
    int pruneParts = 0;
    double estimatedPruneDrift = 0.0;
    std::int64_t searchSteps = 0;
    std::int64_t normalSteps = 0;
    // Wall times (s), the slowest rank's. Every step from the first to the
    // last counts (search steps, energy and output steps included) in
    // totalSeconds; one-time initialisation does not: startupSeconds holds
    // reading the input, the decomposition, library and transport
    // initialisation (NVSHMEM, NCCL), first allocations and the first graph
    // instantiation (a warm-up search of the start configuration, after which
    // step 0 searches again at its recurring cost).
    double startupSeconds = 0.0;
    double totalSeconds = 0.0;   // all steps
    double normalSeconds = 0.0;  // steps without search (the steady state)
    double searchSeconds = 0.0;  // search steps, each with the MD step it runs
    // End-to-end: what a user gets (all steps); the steady state is named so.
    double usPerStep = 0.0;
    double nsPerDay = 0.0;
    double usPerStepSteady = 0.0;
    double nsPerDaySteady = 0.0;
    double searchStepMs = 0.0;  // mean wall time of one search step
    double hostSyncsPerStep = 0.0;
    // --count-api-syncs: host-blocking CUDA calls inside the normal steps,
    // counted by CUPTI (the largest count of any rank; by function: rank 0's).
    bool apiSyncsCounted = false;
    // Per-rank spread of the wall time: steps without search, search steps,
    // start-up (s), and each search-step part (ms, summed over the searches).
    std::vector<RankSpread> rankSpread;
    std::int64_t apiSyncsInNormalSteps = 0;
    std::map<std::string, std::int64_t> apiSyncsByFunction;
    bool graphs = false;
    std::map<std::string, int> stepGraphNodes;  // RankBackend::stepGraphNodes (rank 0)
    std::int64_t stepsInMultiStepGraphs = 0;    // RankBackend::stepsInMultiStepGraphs (rank 0)
    std::vector<std::string> exchangeNotes;     // RankBackend::exchangeNotes (rank 0)
    std::vector<EnergySample> energies;
    // Least-squares slope of the conserved energy over the energy samples
    // from MdOptions::driftFromPs on, per atom (kJ/mol/ps per atom; 0 with
    // fewer than 3 such samples), and how many samples that was.
    double conservedDrift = 0.0;
    std::size_t driftSamples = 0;
    double driftSpanPs = 0.0;  // the fitted samples' time span
    StepTimings timings;
    std::vector<std::string> transportNotes;  // e.g. the nvshmem path per peer and why
    // Rank 0's search-step wall time by part (ms, summed over the search
    // steps); the parts add up to the whole search step ("step" is the MD
    // step it runs). startupPhasesMs: the same for the start-up.
    std::map<std::string, double> searchPhasesMs;
    std::map<std::string, double> startupPhasesMs;
    // Search on the device: the parts of its phases "migrate", "plan" and
    // "pair search" (ms, summed over the search steps; rank 0's).
    PhaseParts searchPhasePartsMs;
    // --measure-buffer: pairs the lists missed (exact recount at each search).
    // With pruning also the pairs the outer list held but the inner list
    // (at the end of its life) did not: countMissedByPruning.
    struct BufferSample {
        std::int64_t step = 0, count = 0;
        double energy = 0.0, absoluteEnergy = 0.0;  // kJ/mol
        std::int64_t prunedCount = 0;
        double prunedEnergy = 0.0, prunedAbsoluteEnergy = 0.0;  // kJ/mol
        std::int64_t pruneAge = 0;                              // steps since the prune those pairs were missed by
    };
    std::vector<BufferSample> bufferSamples;
    double measuredBufferDrift = 0.0;          // mean |net missed energy| / list life / atoms, kJ/mol/ps per atom
    double measuredBufferDriftAbsolute = 0.0;  // the same with every pair's |energy| (no cancellation)
    double measuredPruneDrift = 0.0;           // the same for the inner list (life: pruneAge steps)
    double measuredPruneDriftAbsolute = 0.0;
};

// One-time work done before the engine started (e.g. the transport's
// creation, or --transport auto's measurement) counted as start-up: added to
// startupSeconds and shown as its own start-up part, never in totalSeconds.
void addStartupPart(RunSummary& summary, const std::string& name, double seconds);

// A drift fitted over less than this (ps) is reported as too short to mean
// much: the conserved energy's fluctuations dominate the slope (the
// project's own drift checks fit 30 ps, from 10 ps on in 40).
inline constexpr double kMeaningfulDriftSpanPs = 10.0;

// The note a drift fitted over `spanPs` gets in the reports (empty: none).
std::string driftSpanNote(double spanPs);

// Search-step (or start-up) parts in the order a search step runs them, the
// parts it does not know after them by name: the reports list them so.
std::vector<std::pair<std::string, double>> inStepOrder(const std::map<std::string, double>& parts);

class Engine {
public:
    // `options` must be resolved (resolveOptions); the transport and backend
    // must match (host transport for the CPU backend).
    Engine(MdOptions options, runtime::World& world, transport::BlockTransport& transport, RankBackend& backend);
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;
    ~Engine();
    RunSummary run();

    // A trial on this transport, for measuring it (the auto transport choice,
    // halo/auto_select.hpp): startTrial() sets up as run() does (the start
    // configuration, the warm-up search) without writing or printing
    // anything; each advanceTrial(n) then runs the next n MD steps as run()
    // would (a search every nstlist steps; no energies, output or stop
    // checks) and waits for them. Collective. An Engine runs a trial or
    // run(), not both.
    void startTrial();
    void advanceTrial(int steps);

private:
    struct Impl;
    MdOptions options_;
    runtime::World& world_;
    transport::BlockTransport& transport_;
    CoordinateForceHalo halo_;  // the backend's coordinates and forces, over transport_
    RankBackend& backend_;
    std::unique_ptr<Impl> trial_;
};

// Fills the "auto" options for a run on `numRanks` ranks with or without
// GPUs, and checks the rest (throws InvalidInput with the option's name).
MdOptions resolveOptions(MdOptions options, int numRanks, bool onGpu);

}  // namespace haloex::md
