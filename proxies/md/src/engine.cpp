#include "haloex/md/engine.hpp"
#include "haloex/md/distribution.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <optional>

#include "haloex/core/error.hpp"
#include "haloex/detail/core/nvtx.hpp"
#include "haloex/md/checkpoint.hpp"
#include "haloex/md/log_file.hpp"
#include "haloex/md/step_kernels.hpp"
#include "haloex/md/buffer_check.hpp"
#include "haloex/md/close_contacts.hpp"
#include "haloex/md/gro.hpp"
#include "haloex/md/nstlist_choice.hpp"
#include "haloex/md/gromacs_export.hpp"
#include "haloex/md/h5md_trajectory.hpp"
#include "haloex/md/option_ranges.hpp"
#include "haloex/md/output_names.hpp"
#include "haloex/md/rank_notes.hpp"
#include "haloex/md/restart.hpp"
#include "haloex/md/run_files.hpp"
#include "haloex/md/run_length.hpp"
#include "haloex/md/run_output.hpp"
#include "haloex/md/run_stop.hpp"
#include "haloex/md/system.hpp"
#include "haloex/md/thermostat.hpp"
#include "haloex/md/velocity_generation.hpp"
#include "haloex/md/verlet_buffer.hpp"
#include "haloex/plan/decomposition.hpp"
#include "haloex/runtime/plan_exchange.hpp"
#include "haloex/detail/transport/host_exchange.hpp"

namespace haloex::md {
namespace {

using Clock = std::chrono::steady_clock;
constexpr double kBarPerKJMolNm3 = 16.6054;
// Bounds past which a run is stopped as blown up (docs/md-engine.md): the
// temperature beyond kTemperatureFactor times the larger of --temperature and
// the start's (at least kMinTemperatureBound), and an atom moving more than
// kMaxStepDisplacement in one step (half the LJ sigma; thermal atoms move
// about 0.001 nm per 2 fs step at 300 K). Non-finite values always stop it.
constexpr double kTemperatureFactor = 10.0;
constexpr double kMinTemperatureBound = 1000.0;  // K
constexpr double kMaxStepDisplacement = 0.1;     // nm

double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

void requireOption(bool ok, const std::string& message) {
    if (!ok) throwError(ErrorKind::InvalidInput, message);
}

// An atom of the start that would move more than kMaxStepDisplacement in
// its first step: refused before step 0 (the check of the run's search and
// output steps only begins after the first search, so such an atom used to go
// unnoticed in a short run).
void requireNoFastStartAtom(const System& system, double dt, const std::string& source) {
    int fastest = -1;
    double move = 0.0;
    for (int i = 0; i < system.size(); ++i) {
        const double m = std::sqrt(norm2(system.velocities[i])) * dt;
        if (m > move || !std::isfinite(m)) {
            move = std::isfinite(m) ? m : HUGE_VAL;
            fastest = i;
        }
    }
    if (fastest < 0 || move <= kMaxStepDisplacement) return;
    throwError(ErrorKind::InvalidInput,
               fmt::format("{}: atom {} (global id) would move {:.3g} nm in the first step (velocity {:.4g} nm/ps, "
                           "--dt {} ps), more than the bound of {} nm per step: check the velocities of the input, "
                           "or use a smaller --dt",
                           source, system.globalIds[fastest], move, move / dt, dt, kMaxStepDisplacement));
}

// The start configuration. A .gro without velocities (or any .gro with
// --gen-vel) gets Maxwell-Boltzmann velocities at --temperature, and
// `velocityNote` the line that says so.
System initialSystem(const MdOptions& o, const ForceField& ff, std::string& velocityNote) {
    if (!o.groFile.empty()) {
        GroFrame frame = readGro(o.groFile);
        // One atom has no degrees of freedom once the centre of mass is fixed
        // (3N - 3): its temperature is 0/0, which used to surface as a
        // "temperature -nan K" blow-up at the first energy step.
        if (frame.system.size() < 2) {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("--gro {}: {} atom: a system needs at least 2 atoms (3N - 3 degrees of freedom, "
                                   "without the centre of mass's motion); give a larger system",
                                   o.groFile, frame.system.size()));
        }
        if (o.generateVelocities || hasNoVelocities(frame.system)) {
            generateMaxwellBoltzmannVelocities(frame.system, o.seed, o.temperature, ff);
            velocityNote = fmt::format(
                "Generated velocities ({}): Maxwell-Boltzmann at {:g} K (--temperature), seed {} (--seed), by global "
                "atom id (the same on any number of ranks), centre-of-mass motion removed, scaled to exactly {:g} K",
                o.generateVelocities ? fmt::format("--gen-vel replaces those of {}", o.groFile)
                                     : fmt::format("{} has none", o.groFile),
                o.temperature, o.seed, o.temperature);
        }
        return std::move(frame.system);
    }
    return makeLatticeSystem(static_cast<int>(o.atoms), o.seed, o.temperature, ff);  // range: requireOptionRanges
}

// The rank grid (--grid, or the smallest halo). When no grid fits because the
// automatic pair-list radius exceeds half the box, the planner's advice (fewer
// ranks, a smaller rlist) misses the cause: say where rlist came from and
// what to change (the usual case: a time step too large for this system).
plan::RankGrid chooseGrid(const MdOptions& o, const plan::Box& box, int numRanks) {
    try {
        const plan::RankGrid grid =
            o.grid == "auto" ? plan::chooseRankGrid(numRanks, box, o.rc, o.rlist) : plan::parseRankGrid(o.grid);
        plan::requireGridMatchesRanks(grid, numRanks);
        (void)plan::Decomposition(plan::DecompositionSpec{box, grid, o.rc, o.rlist});
        return grid;
    } catch (const Error& e) {
        const bool automaticRlist =
            std::find(o.explicitOptions.begin(), o.explicitOptions.end(), "rlist") == o.explicitOptions.end();
        const double shortest = std::min({box.length[0], box.length[1], box.length[2]});
        if (e.kind() != ErrorKind::Plan || !automaticRlist || shortest > 2.0 * o.rlist) throw;
        throwError(
            ErrorKind::InvalidInput,
            fmt::format(
                "the pair-list radius rlist = {:.4g} nm, chosen for --dt {:g} ps and nstlist {} so "
                "that the estimated energy drift stays within --buffer-tolerance {:g} kJ/mol/ps per "
                "atom, is more than half the shortest box length ({:.4g} nm), so no rank grid of {} rank(s) fits: the "
                "pair-list buffer grows with the time step. Use a smaller --dt (this system runs at "
                "0.002 ps), a smaller --nstlist, or a larger system",
                o.rlist, o.dt, o.nstlist, o.bufferTolerance, shortest, numRanks));
    }
}

// Dynamic pruning (GPU only): parts and inner radius, after rlist.
void resolvePruning(MdOptions& o, bool onGpu) {
    requireOption(o.pruneParts >= -1,
                  fmt::format("--prune-parts {}: use 0 (no pruning), a positive number of parts, or -1 (auto)",
                              o.pruneParts));
    const bool automatic = o.pruneParts == -1;
    if (automatic) o.pruneParts = onGpu ? kDefaultPruneParts : 0;
    requireOption(onGpu || o.pruneParts == 0,
                  fmt::format("--prune-parts {}: pair-list pruning is a GPU-backend feature (the CPU reference "
                              "computes exactly the pairs within rc every step); use --prune-parts 0 or run on a GPU",
                              o.pruneParts));
    requireOption(o.rlistInner == 0.0 || o.pruneParts > 0,
                  fmt::format("--rlist-inner {} nm without pruning: give --prune-parts N > 0 too, or drop "
                              "--rlist-inner",
                              o.rlistInner));
    requireOption(o.rlistInner == 0.0 || (o.rlistInner >= o.rc && o.rlistInner <= o.rlist),
                  fmt::format("--rlist-inner {} nm must lie between --rc {} nm and the pair-list radius {:.4g} nm (the "
                              "inner list is pruned from the outer one and must hold every pair within rc)",
                              o.rlistInner, o.rc, o.rlist));
    if (o.pruneParts == 0 || o.rlistInner != 0.0) return;
    ForceField ff;
    ff.rc = o.rc;
    o.rlistInner = chooseRlistInner(ff, kNumberDensity, o.temperature, o.pruneParts, o.dt,
                                    o.bufferTolerance * kPruneToleranceFraction, o.rlist)
                       .rlist;
    // An inner list as large as the outer one would drop nothing: skip the
    // prune passes unless pruning was asked for explicitly.
    if (automatic && o.rlistInner >= o.rlist) {
        o.pruneParts = 0;
        o.rlistInner = 0.0;
    }
}

// --search: where search steps run. auto: on the device when the backend
// and the transport can (GPU backend, device transport), else on the host.
bool resolveSearchPlace(const std::string& option, bool deviceCapable) {
    if (option == "host") return false;
    if (option == "device") {
        requireOption(deviceCapable, "--search device: this run's backend or transport keeps the atoms on the host "
                                     "(CPU reference, or a host transport); use --search host or auto");
        return true;
    }
    return deviceCapable;
}

// An option that would do nothing in this run is refused, as --auto-steps
// without --transport auto is: the user meant something by it.
void requireNoIgnoredOptions(const MdOptions& o) {
    const auto named = [&](const char* name) {
        return std::find(o.explicitOptions.begin(), o.explicitOptions.end(), name) != o.explicitOptions.end();
    };
    requireOption(o.checkpointEvery == 0 || !o.checkpointFile.empty(),
                  fmt::format("--cpt-every {} without --cpt: no checkpoint would be written; give --cpt FILE (e.g. "
                              "--cpt state.cpt) or --deffnm NAME, or drop --cpt-every",
                              o.checkpointEvery));
    requireOption(o.checkpointMinutes == 0.0 || !o.checkpointFile.empty(),
                  fmt::format("--cpt-minutes {} without --cpt: no checkpoint would be written; give --cpt FILE (e.g. "
                              "--cpt state.cpt) or --deffnm NAME, or drop --cpt-minutes",
                              o.checkpointMinutes));
    requireOption(!named("traj-every") || !o.trajFile.empty(),
                  fmt::format("--traj-every {} without --traj: no trajectory would be written; give --traj FILE, or "
                              "drop --traj-every",
                              o.trajEvery));
    requireOption(!named("tau-t") || o.thermostat == "v-rescale",
                  fmt::format("--tau-t {} ps with --thermostat {}: only v-rescale has a coupling time; give "
                              "--thermostat v-rescale, or drop --tau-t",
                              o.tauT, o.thermostat));
}

}  // namespace

double conservedDriftPerAtom(const std::vector<EnergySample>& samples, std::int64_t atoms) {
    if (samples.size() < 3 || atoms <= 0) return 0.0;
    double st = 0, se = 0, stt = 0, ste = 0;
    for (const EnergySample& e : samples) {
        st += e.time;
        se += e.conserved;
        stt += e.time * e.time;
        ste += e.time * e.conserved;
    }
    const double n = static_cast<double>(samples.size());
    const double denominator = n * stt - st * st;
    return denominator > 0 ? (n * ste - st * se) / denominator / static_cast<double>(atoms) : 0.0;
}

std::vector<EnergySample> samplesFrom(const std::vector<EnergySample>& samples, double fromPs) {
    // Energy-step times are multiples of dt: allow their rounding.
    const double from = fromPs - 1e-9 * std::max(1.0, fromPs);
    std::vector<EnergySample> kept;
    for (const EnergySample& e : samples) {
        if (fromPs <= 0.0 || e.time >= from) kept.push_back(e);
    }
    return kept;
}

MdOptions resolveOptions(MdOptions o, int numRanks, bool onGpu) {
    requireOptionRanges(o);
    std::optional<CheckpointData> header;
    if (!o.restartFile.empty()) {
        const StartupReadGuard reading;  // the header of a checkpoint that may be a FIFO
        header = readCheckpointHeader(o.restartFile);
    }
    // The names first: a restart's spacings are adopted for the outputs it continues.
    o = resolveOutputNames(std::move(o), header ? &*header : nullptr);
    if (header) {
        const std::string path = o.restartFile;
        o = adoptCheckpointSettings(std::move(o), *header, path);
    }
    resolveRunLength(o, header ? header->step : 0, o.restartFile);
    requireNoIgnoredOptions(o);  // as given (before --cpt-every is rounded), with a restart's thermostat
    requireOption(o.dt > 0.0 && std::isfinite(o.dt), fmt::format("--dt {} ps: the time step must be positive", o.dt));
    requireOption(o.rc > 0.0 && std::isfinite(o.rc), fmt::format("--rc {} nm: the cutoff must be positive", o.rc));
    requireOption(o.steps >= kStepsUntilStopped,
                  fmt::format("--steps {}: use -1 (until stopped), 0 (single point) or a step count", o.steps));
    requireOption(o.nstlist >= 0, fmt::format("--nstlist {}: must be positive (or 0 for auto)", o.nstlist));
    requireOption(o.rlist == 0.0 || o.rlist >= o.rc,
                  fmt::format("--rlist {} nm is below --rc {} nm: the pair list must reach at least the cutoff",
                              o.rlist, o.rc));
    requireOption(o.search == "auto" || o.search == "host" || o.search == "device",
                  fmt::format("--search '{}': use auto, host or device", o.search));
    requireOption(o.thermostat == "none" || o.thermostat == "v-rescale",
                  fmt::format("--thermostat '{}': use none or v-rescale", o.thermostat));
    requireOption(o.temperature > 0.0, fmt::format("--temperature {} K must be positive", o.temperature));
    requireOption(!o.generateVelocities || o.restartFile.empty(),
                  "--gen-vel with --restart: a restart continues with the checkpoint's velocities; drop --gen-vel, "
                  "or start a new run from a structure (--gro)");
    if (o.groFile.empty() && o.atoms == 0) o.atoms = onGpu ? 22500LL * numRanks : 3000;
    if (o.groFile.empty()) {
        requireOption(o.atoms >= kMinAtoms && o.atoms % 2 == 0,
                      fmt::format("--atoms {}: the proxy system needs an even number of atoms, at least {} (so the "
                                  "box exceeds 2 x rlist and the lattice start is not tight)",
                                  o.atoms, kMinAtoms));
    }
    const bool stepsGiven =
        std::find(o.explicitOptions.begin(), o.explicitOptions.end(), "steps") != o.explicitOptions.end() ||
        o.untilStep != kNoUntilStep;
    if (o.steps == 0 && !stepsGiven) o.steps = onGpu ? kDefaultStepsGpu : kDefaultStepsCpu;
    if (o.nstlist == 0) {
        ForceField ff;
        ff.rc = o.rc;
        // A .gro start's size is not known yet: the model then assumes the
        // proxy's 22 500 atoms per rank (it ranks candidates by their cost
        // per atom and per step; the size only weighs the two).
        const double atomsPerRank = (o.atoms > 0 ? static_cast<double>(o.atoms) : 22500.0 * numRanks) / numRanks;
        const int parts = o.pruneParts == -1 ? (onGpu ? kDefaultPruneParts : 0) : o.pruneParts;
        const NstlistChoice choice = chooseNstlist(ff, kNumberDensity, o.temperature, o.dt, o.bufferTolerance,
                                                   atomsPerRank, parts, onGpu, o.rlist);
        o.nstlist = choice.chosen.nstlist;
        o.nstlistReason = choice.reason;
    } else {
        o.nstlistReason = o.restartFile.empty() ? "set by --nstlist" : "from the checkpoint";
    }
    if (o.rlist == 0.0) {
        ForceField ff;
        ff.rc = o.rc;
        // The GPU's cluster list is held to the short-list tolerance as in
        // the automatic choice; the CPU reference computes the pairs within
        // rc exactly every step.
        const double tolerance = onGpu ? outerListTolerance(o.bufferTolerance, o.nstlist, o.dt) : o.bufferTolerance;
        o.rlist = chooseRlist(ff, kNumberDensity, o.temperature, o.nstlist, o.dt, tolerance).rlist;
        o.rlistTolerance = tolerance;
    }
    resolvePruning(o, onGpu);
    requireOption(o.fuseUpdate != Toggle::On || onGpu,
                  "--fuse-update 1 with the CPU reference: the fused update is one of the GPU step's kernels; use "
                  "--device gpu, or --fuse-update 0");
    requireOption(o.sortAtoms != Toggle::On || onGpu,
                  "--sort-atoms 1 with the CPU reference: the cell order is that of the GPU's pair search; use "
                  "--device gpu, or --sort-atoms 0");
    if (o.stepsPerGraph == 0) o.stepsPerGraph = onGpu && o.cudaGraphs ? kAutoStepsPerGraph : 1;
    requireOption(o.stepsPerGraph == 1 || (onGpu && o.cudaGraphs),
                  fmt::format("--steps-per-graph {} {}: graphs of several steps are CUDA graphs of the GPU step; use "
                              "--device gpu with --cuda-graphs 1, or --steps-per-graph 1",
                              o.stepsPerGraph, onGpu ? "with --cuda-graphs 0" : "with the CPU reference"));
    if (o.thermoEvery == 0) {
        o.thermoEvery =
            o.steps == kStepsUntilStopped ? kDefaultThermoEveryUntilStopped : std::max<std::int64_t>(1, o.steps / 10);
    }
    if (o.checkpointEvery > 0) {
        // Checkpoints at search steps restart bitwise-identically where forces are deterministic.
        const std::int64_t given = o.checkpointEvery;
        o.checkpointEvery = (o.checkpointEvery + o.nstlist - 1) / o.nstlist * o.nstlist;
        if (o.checkpointEvery != given) {
            o.adjustments.push_back(fmt::format("--cpt-every {} rounded up to {}, a multiple of nstlist {}: "
                                                "checkpoints are written at search steps, from which a restart "
                                                "continues exactly",
                                                given, o.checkpointEvery, o.nstlist));
        }
    }
    requireOption(o.trajEvery >= 0 && o.checkpointEvery >= 0,
                  fmt::format("--traj-every {} / --cpt-every {}: cannot be negative", o.trajEvery, o.checkpointEvery));
    if (!o.trajFile.empty() && o.trajEvery == 0) o.trajEvery = o.thermoEvery;
    requireOption(!isH5mdPath(o.trajFile) || h5mdAvailable(),
                  fmt::format("--traj {}: {}", o.trajFile, h5mdUnavailableReason()));
    return o;
}

struct Engine::Impl {
    Engine& e;
    ForceField ff;
    plan::Box box;
    plan::RankGrid grid;
    std::vector<AtomRecord> home;
    std::int64_t totalAtoms = 0;
    std::int64_t step = 0;
    double thermostatEnergy = 0.0;    // energy removed by the thermostat so far
    double lastVelocityScale = 1.0;   // the thermostat's lambda at the last energy step
    double startVelocityScale = 1.0;  // a restart's lambda still to apply at its first step
    double maxTemperature = 0.0;      // K: beyond it the run is stopped as blown up
    Thermostat thermostat;
    RunSummary summary;
    Clock::time_point runStart;
    std::int64_t normalStepSyncs = 0;
    // --search: the atoms stay on the device (resolved in setUp).
    bool deviceSearch = false;
    // --restart: the checkpoint without its atoms.
    std::optional<CheckpointData> restartFrom;
    // Where energy rows go (--energy): the run's output, while it runs.
    RunOutput* energyOutput = nullptr;
    // Sum and sum of squares of every global id (modulo 2^64).
    std::array<std::uint64_t, 2> idFingerprint{0, 0};

    // Signals and --maxh: agreed at search and energy steps (run_stop.hpp).
    RunStop stopper;
    // --cpt-minutes: when the last checkpoint was written (or the run
    // started), and whether the last search agreed one is due.
    Clock::time_point lastCheckpointAt;
    bool timedCheckpointDue = false;
    // The search under way (its atom-count check carries the stop vote).
    // Final: the search of the step whose energies end the series (finalEnergies):
    // neither timed nor measured, and no stop vote counts there.
    enum class SearchKind { Warmup, First, Regular, Final };
    SearchKind currentSearch = SearchKind::Warmup;

    explicit Impl(Engine& engine)
        : e(engine), thermostat(engine.options_.seed),
          stopper(engine.options_.maxHours, Clock::now(), engine.world_.rank()) {}

    bool isRoot() const { return e.world_.rank() == 0; }

    // One past the last step to run (--steps -1: never reached).
    std::int64_t runEnd() const {
        return e.options_.steps == kStepsUntilStopped ? std::numeric_limits<std::int64_t>::max()
                                                      : summary.firstStep + e.options_.steps;
    }

    void setUp() {
        const MdOptions& o = e.options_;
        ff.rc = o.rc;
        // Before any work: an output that cannot be written, or that would
        // overwrite an input or another output, stops the run now.
        runOnRoot(e.world_, [&] { checkRunFiles(o); });
        std::string velocityNote;
        System system = [&] {
            const StartupReadGuard reading;  // a signal now ends the process: nothing was run or written
            return o.restartFile.empty() ? initialSystem(o, ff, velocityNote) : restoreCheckpoint();
        }();
        system.validate();
        if (isRoot() && !o.quiet && !velocityNote.empty()) fmt::print("{}\n", velocityNote);
        if (isRoot() && !o.quiet) {
            for (const std::string& adjusted : o.adjustments) fmt::print("Note: {}\n", adjusted);
            if (!o.continuedOutputs.empty()) {
                std::string list;
                for (const std::string& output : o.continuedOutputs) list += (list.empty() ? "" : ", ") + output;
                fmt::print("Note: --restart {} continues the outputs it recorded: {} (name one to start a new file "
                           "instead); checkpoints go to {}\n",
                           o.restartFile, list, o.checkpointFile.empty() ? std::string("no file") : o.checkpointFile);
            }
        }
        runOnRoot(e.world_, [&] {
            const std::string source = !o.restartFile.empty() ? "--restart " + o.restartFile
                                       : !o.groFile.empty()   ? "--gro " + o.groFile
                                                              : std::string("the lattice start");
            requireNoCloseContacts(system, o.minDistance, source, o.restartFile.empty() && !o.groFile.empty());
            requireNoFastStartAtom(system, o.dt, source);
        });
        maxTemperature =
            std::max(kMinTemperatureBound, kTemperatureFactor * std::max(o.temperature, temperature(system, ff)));
        if (!o.writeGromacsDir.empty()) {
            runOnRoot(e.world_, [&] {
                for (const std::string& note : writeGromacsInputs(o.writeGromacsDir, system, o, ff)) {
                    if (!o.quiet) fmt::print("{}\n", note);
                }
            });
        }
        box = system.box;
        totalAtoms = system.size();
        grid = chooseGrid(o, box, e.world_.size());
        // Every rank holds the same start; each keeps the atoms of its cell.
        std::vector<AtomRecord> mine;
        const plan::Decomposition dd(spec());
        for (int i = 0; i < system.size(); ++i) {
            AtomRecord a;
            a.globalId = system.globalIds[i];
            a.type = system.types[i];
            a.position = plan::wrapIntoBox(system.positions[i], box, "an atom of the start configuration");
            a.velocity = system.velocities[i];
            if (dd.ownerRank(a.position) == e.world_.rank()) mine.push_back(a);
        }
        home = std::move(mine);
        idFingerprint = {0, 0};
        for (int i = 0; i < system.size(); ++i) {
            const auto id = static_cast<std::uint64_t>(system.globalIds[i]);
            idFingerprint[0] += id;
            idFingerprint[1] += id * id;
        }
        summary.transport = e.transport_.name();
        summary.backend = e.backend_.description();
        deviceSearch = resolveSearchPlace(o.search, e.backend_.canSearchOnDevice(e.halo_));
        summary.search = deviceSearch ? "device" : "host";
        requireOption(o.sortAtoms != Toggle::On || deviceSearch,
                      "--sort-atoms 1 with the search on the host: the cell order is made where the atoms stay on the "
                      "GPU between searches; use --search device (or auto) with a device transport, or --sort-atoms 0");
        summary.onDevice = e.backend_.memorySpace() == transport::MemorySpace::Device;
        // Auto decided now that the atoms and the search's place are known.
        summary.stepKernels =
            chooseStepKernels(o.fuseUpdate, o.sortAtoms, summary.onDevice, e.world_.size(), deviceSearch, totalAtoms);
        summary.ranks = e.world_.size();
        summary.grid = grid.toString();
        summary.atoms = totalAtoms;
        summary.firstStep = step;
        summary.steps = o.steps;
        summary.dt = o.dt;
        summary.rc = o.rc;
        summary.rlist = o.rlist;
        summary.nstlist = o.nstlist;
        summary.estimatedBufferDrift =
            estimateBufferDrift(ff, totalAtoms / box.volume(), o.temperature, o.rlist, o.nstlist, o.dt);
        summary.rlistInner = o.pruneParts > 0 ? o.rlistInner : 0.0;
        summary.pruneParts = o.pruneParts;
        if (o.pruneParts > 0) {
            summary.estimatedPruneDrift =
                estimatePruneDrift(ff, totalAtoms / box.volume(), o.temperature, o.rlistInner, o.pruneParts, o.dt);
        }
    }

    // --restart: the checkpoint's atoms, step and thermostat state (every rank reads it).
    System restoreCheckpoint() {
        CheckpointData checkpoint = readCheckpoint(e.options_.restartFile);
        requireCheckpointSettings(e.options_, checkpoint, e.options_.restartFile);
        // The last step must be a step number: past 2^63 - 1 the end wrapped
        // and the run ran no step, with exit status 0.
        const std::int64_t steps = e.options_.steps;
        if (steps > 0 && checkpoint.step > std::numeric_limits<std::int64_t>::max() - steps) {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("--restart {}: the checkpoint is at step {}, and --steps {} from there passes the "
                                   "largest step number (2^63 - 1): the checkpoint is probably damaged; restart from "
                                   "{}, or give fewer --steps",
                                   e.options_.restartFile, checkpoint.step, steps,
                                   previousCheckpointPath(e.options_.restartFile)));
        }
        restartFrom = checkpoint;  // where its outputs stood (RunOutput::open)
        restartFrom->system = System{};
        step = checkpoint.step;
        thermostatEnergy = checkpoint.thermostatEnergy;
        thermostat.setRandomState(checkpoint.thermostatRandom);
        startVelocityScale = checkpoint.pendingVelocityScale;
        if (startVelocityScale != 1.0) e.backend_.setVelocityScale(startVelocityScale);
        return std::move(checkpoint.system);
    }

    // The velocity scale the next step will apply: the thermostat's lambda
    // when the step before was an energy step (v-rescale is coupled on energy steps only, as GROMACS's nsttcouple).
    double pendingVelocityScale() const {
        if (step == summary.firstStep) return startVelocityScale;
        return e.options_.thermostat == "v-rescale" && isEnergyStep(step - 1) ? lastVelocityScale : 1.0;
    }

    // Trajectory frames and checkpoints at the boundary before `step`
    // (collective). `homeCurrent`: `home` already holds the atoms at `step`
    // (before the first search, or fetched and checked at the end).
    void writeOutput(RunOutput& output, bool homeCurrent, Boundary boundary) {
        if (!output.isOutputStep(step, boundary)) return;
        const NvtxRange range("output");
        if (!homeCurrent) {
            e.backend_.getHome(e.halo_, home);
            requireSaneAtoms();  // never a checkpoint of a blown-up system
        }
        if (output.write(e.world_, box, home, runState(), boundary)) lastCheckpointAt = Clock::now();
    }

    RunState runState() const {
        return RunState{step, thermostatEnergy, pendingVelocityScale(), thermostat.randomState()};
    }

    // --cpt-minutes: whether rank 0's clock says a checkpoint is due (its
    // vote decides for every rank: requireAtomsConserved).
    bool checkpointTimeDue() const {
        const double minutes = e.options_.checkpointMinutes;
        return minutes > 0 && seconds(lastCheckpointAt, Clock::now()) >= 60.0 * minutes;
    }

    // The checkpoint --cpt-minutes asked for, at this search step (collective).
    void writeTimedCheckpoint(RunOutput& output) {
        const NvtxRange range("output");
        e.backend_.getHome(e.halo_, home);
        requireSaneAtoms();
        output.writeCheckpoint(e.world_, box, home, runState());
        lastCheckpointAt = Clock::now();
    }

    plan::DecompositionSpec spec() const { return plan::DecompositionSpec{box, grid, e.options_.rc, e.options_.rlist}; }

    // Wall time of each part of the search steps (ms, summed over searches;
    // the start-up's warm-up search into startupPhasesMs).
    std::map<std::string, double>* phases = &summary.searchPhasesMs;
    void phase(const char* name, Clock::time_point& since) {
        const auto now = Clock::now();
        (*phases)[name] += 1e3 * seconds(since, now);
        since = now;
    }

    // Which search (SearchKind): the start-up's warm-up (one-time
    // initialisation: the first setPlan initialises the transport's library,
    // buffers are allocated, graphs instantiated), the first step's (atoms
    // still on the host: nothing to download) or a later one.

    BackendContext backendContext() const {
        BackendContext context;
        context.forceField = &ff;
        context.box = box;
        for (int d = 0; d < 3; ++d) context.periodic[d] = !grid.decomposed(d);
        context.rlist = e.options_.rlist;
        context.rlistInner = e.options_.rlistInner;
        context.pruneParts = e.options_.pruneParts;
        context.dt = e.options_.dt;
        context.useGraphs = cudaGraphsFor(e.options_, e.transport_.name());
        context.stepsPerGraph = e.options_.stepsPerGraph;
        context.fuseUpdate = summary.stepKernels.fuseUpdate;
        context.sortAtoms = summary.stepKernels.sortAtoms;
        return context;
    }

    // The count and the fingerprint of the global ids (sum and sum of
    // squares modulo 2^64, over every rank) must be those of the start: an
    // atom lost and another duplicated would keep the count. The same
    // reduction carries every rank's stop vote (signals, --maxh): the stop is
    // agreed here, at search steps, at no extra cost.
    void requireAtomsConserved(std::int64_t homeCount, std::uint64_t idSum, std::uint64_t idSquareSum) {
        std::vector<std::int64_t> sums{homeCount, static_cast<std::int64_t>(idSum),
                                       static_cast<std::int64_t>(idSquareSum)};
        const bool beforeStart = currentSearch == SearchKind::Warmup;
        const auto vote = stopper.vote(!beforeStart);
        sums.insert(sums.end(), vote.begin(), vote.end());
        // And --cpt-minutes: rank 0's clock decides for every rank.
        sums.push_back(isRoot() && checkpointTimeDue() ? 1 : 0);
        e.world_.allReduce(std::span(sums), runtime::ReduceOp::Sum);  // two's complement: sums modulo 2^64
        // The first step's search leaves a stop to the next one: the run
        // makes at least one search interval of progress.
        stopper.agreeAtSearch(std::span(sums).subspan(3, RunStop::kVoteSize), step, beforeStart,
                              currentSearch == SearchKind::Regular);
        timedCheckpointDue = currentSearch == SearchKind::Regular && sums.back() > 0;
        if (sums[0] != totalAtoms) {
            throwError(ErrorKind::Internal,
                       fmt::format("repartitioning at step {} lost or duplicated atoms: {} instead of {}", step,
                                   sums[0], totalAtoms));
        }
        if (static_cast<std::uint64_t>(sums[1]) != idFingerprint[0] ||
            static_cast<std::uint64_t>(sums[2]) != idFingerprint[1]) {
            throwError(ErrorKind::Internal,
                       fmt::format("repartitioning at step {} kept {} atoms but not the same ones (their global ids "
                                   "changed: one was lost and another duplicated)",
                                   step, sums[0]));
        }
    }

    static std::array<std::uint64_t, 2> idSumsOf(std::span<const AtomRecord> atoms) {
        std::array<std::uint64_t, 2> s{0, 0};
        for (const AtomRecord& a : atoms) {
            const auto id = static_cast<std::uint64_t>(a.globalId);
            s[0] += id;
            s[1] += id * id;
        }
        return s;
    }

    // Repartitions, rebuilds the plan and the pair lists.
    void search(SearchKind kind) {
        currentSearch = kind;
        const NvtxRange range("search step");
        if (deviceSearch) {
            searchOnDevice(kind);
        } else {
            searchOnHost(kind);
        }
    }

    // The atoms stay on the device: the backend migrates them, builds the
    // plan and the lists there; the host sees counts only (the buffer check,
    // a diagnostic, downloads them).
    void searchOnDevice(SearchKind kind) {
        NvtxParts ranges;  // the backend names its own parts
        auto t = Clock::now();
        ranges.next("upload");
        if (kind == SearchKind::Warmup) e.backend_.loadHome(home);
        phase("upload", t);
        if (e.options_.measureBuffer && kind != SearchKind::Warmup && kind != SearchKind::Final) {
            ranges.next("buffer check");
            if (kind == SearchKind::Regular) e.backend_.getHome(e.halo_, home);
            measureBuffer(kind == SearchKind::First);
            phase("buffer check", t);
        }
        ranges.end();
        const plan::Decomposition dd(spec());
        const RankBackend::DeviceSearchReport report =
            e.backend_.searchOnDevice(e.halo_, dd, e.world_, backendContext());
        for (const auto& [name, ms] : report.phasesMs) (*phases)[name] += ms;
        if (kind != SearchKind::Warmup && kind != SearchKind::Final) {
            for (const auto& [phase, parts] : report.phasePartsMs) {
                for (const auto& [name, ms] : parts) addPartTime(summary.searchPhasePartsMs[phase], name, ms);
            }
        }
        t = Clock::now();
        ranges.next("count check");
        requireAtomsConserved(report.numHome, report.idSum, report.idSquareSum);
        phase("count check", t);
    }

    void searchOnHost(SearchKind kind) {
        // The first searches and the final one find `home` current on the host.
        const bool first = kind != SearchKind::Regular;
        NvtxParts ranges;  // named as the phases below
        auto t = Clock::now();
        ranges.next("download");
        if (!first) {
            e.backend_.getHome(e.halo_, home);
            requireSaneAtoms();
        }
        phase("download", t);
        ranges.next("buffer check");
        if (e.options_.measureBuffer && kind != SearchKind::Warmup && kind != SearchKind::Final) {
            measureBuffer(kind == SearchKind::First);
        }
        phase("buffer check", t);
        ranges.next("migrate");
        const plan::Decomposition dd(spec());
        home = migrateAtoms(std::move(home), dd, e.world_);
        const auto ids = idSumsOf(home);
        requireAtomsConserved(static_cast<std::int64_t>(home.size()), ids[0], ids[1]);
        std::vector<Vec3d> positions(home.size());
        for (std::size_t i = 0; i < home.size(); ++i) positions[i] = home[i].position;
        phase("migrate", t);
        ranges.next("plan");
        runtime::RankPlan rankPlan = runtime::buildParticlePlan(dd, positions, e.world_, transportAlignment());
        phase("plan", t);
        ranges.next("transport set-up");
        e.backend_.adoptPlan(e.halo_, e.world_, rankPlan.plan);
        phase("transport set-up", t);
        ranges.next("upload");
        e.backend_.setHome(e.halo_, home);
        phase("upload", t);
        ranges.next("static data");

        // Static data of halo atoms, once per search, on the host.
        const auto& plan = e.halo_.plan();
        LocalStatics statics;
        statics.charges.assign(plan.numLocal, 0.0f);
        statics.types.assign(plan.numLocal, 0);
        statics.globalIds.assign(plan.numLocal, -1);
        for (std::size_t i = 0; i < home.size(); ++i) {
            statics.types[i] = home[i].type;
            statics.charges[i] = static_cast<float>(ff.chargeOfType(home[i].type));
            statics.globalIds[i] = home[i].globalId;
        }
        transport::forwardPulses(e.world_, plan.pulses, std::span(statics.types));
        transport::forwardPulses(e.world_, plan.pulses, std::span(statics.charges));
        transport::forwardPulses(e.world_, plan.pulses, std::span(statics.globalIds));
        statics.zoneMasks = plan.zoneMask;
        phase("static data", t);

        ranges.next("pair search");
        e.backend_.prepare(e.halo_, statics, backendContext());
        phase("pair search", t);
    }

    // Positions (by global id) when the current list was built.
    std::vector<Vec3d> positionsAtLastSearch;
    std::int64_t lastSearchStep = 0;
    // With pruning: positions (by global id) at the step the oldest part of
    // the inner list will have been pruned with when the next search comes
    // (pruneSampleStep), and that step; -1: none for the current list.
    std::vector<Vec3d> positionsAtPrune;
    std::int64_t pruneSampleTaken = -1;

    // --measure-buffer with pruning: every step re-prunes one of pruneParts
    // parts, so at the next search the oldest part was pruned pruneParts
    // steps before it (or at the build, where the whole list was pruned).
    // That step, when it lies after the current step's search and the next
    // search is within the run; else -1. `s` is not a search step.
    std::int64_t pruneSampleStep(std::int64_t s) const {
        const MdOptions& o = e.options_;
        if (!o.measureBuffer || o.pruneParts <= 0) return -1;
        const std::int64_t first = summary.firstStep;
        const std::int64_t nextSearch = first + ((s - first) / o.nstlist + 1) * o.nstlist;
        const std::int64_t sample = nextSearch - o.pruneParts;
        if (nextSearch >= runEnd() || sample <= nextSearch - o.nstlist) return -1;
        return sample;
    }

    // The positions of pruneSampleStep, gathered on rank 0 (collective).
    void samplePrunePositions() {
        e.backend_.getHome(e.halo_, home);
        const std::vector<AtomRecord> all = gatherAtomsOnRoot(home, e.world_);
        positionsAtPrune.resize(all.size());
        for (std::size_t i = 0; i < all.size(); ++i) positionsAtPrune[i] = all[i].position;
        pruneSampleTaken = step;
    }

    void measureBuffer(bool first) {
        // Only rank 0 recounts; the others contribute their atoms.
        const std::vector<AtomRecord> all = gatherAtomsOnRoot(home, e.world_);
        std::vector<Vec3d> now(all.size());
        std::vector<double> charges(all.size());
        for (std::size_t i = 0; i < all.size(); ++i) {
            now[i] = all[i].position;
            charges[i] = ff.chargeOfType(all[i].type);
        }
        if (!first && e.world_.rank() == 0) {
            const MissedPairs m = countMissedPairs(positionsAtLastSearch, now, charges, box, ff, e.options_.rlist);
            RunSummary::BufferSample sample{step, m.count, m.energy, m.absoluteEnergy};
            // The list lived from the last search to this one.
            const double life = (step - lastSearchStep) * e.options_.dt;
            const std::size_t k = summary.bufferSamples.size() + 1;
            const double perAtom = 1.0 / static_cast<double>(totalAtoms);
            const double net = std::abs(m.energy) / life * perAtom;
            const double abs = m.absoluteEnergy / life * perAtom;
            summary.measuredBufferDrift += (net - summary.measuredBufferDrift) / static_cast<double>(k);
            summary.measuredBufferDriftAbsolute += (abs - summary.measuredBufferDriftAbsolute) / static_cast<double>(k);
            if (e.options_.pruneParts > 0) {
                // The inner list's oldest part: pruned at the sampled step,
                // or with the whole list at the build.
                const bool sampled = pruneSampleTaken > lastSearchStep;
                const MissedPairs p =
                    countMissedByPruning(positionsAtLastSearch, sampled ? positionsAtPrune : positionsAtLastSearch, now,
                                         charges, box, ff, e.options_.rlist, e.options_.rlistInner);
                sample.prunedCount = p.count;
                sample.prunedEnergy = p.energy;
                sample.prunedAbsoluteEnergy = p.absoluteEnergy;
                sample.pruneAge = step - (sampled ? pruneSampleTaken : lastSearchStep);
                const double pruneLife = static_cast<double>(sample.pruneAge) * e.options_.dt;
                const double pnet = std::abs(p.energy) / pruneLife * perAtom;
                const double pabs = p.absoluteEnergy / pruneLife * perAtom;
                summary.measuredPruneDrift += (pnet - summary.measuredPruneDrift) / static_cast<double>(k);
                summary.measuredPruneDriftAbsolute +=
                    (pabs - summary.measuredPruneDriftAbsolute) / static_cast<double>(k);
            }
            summary.bufferSamples.push_back(sample);
        }
        positionsAtLastSearch = std::move(now);
        lastSearchStep = step;
        positionsAtPrune.clear();
    }

    int transportAlignment() const { return e.transport_.memorySpace() == transport::MemorySpace::Device ? 4 : 1; }

    // Energy steps are absolute multiples of --thermo-every, as trajectory
    // frames and checkpoints are: counted from a restart's first step they
    // fell elsewhere than in the uninterrupted run whenever the restart's step
    // was no multiple (a stop at a search step between energy steps), and so
    // did the thermostat's coupling and the rows of the log and .xvg. The
    // series also ends at the run's last step, where its frame and checkpoint
    // are (finalEnergies), not one step before them.
    bool isEnergyStep(std::int64_t s) const { return s % e.options_.thermoEvery == 0; }

    // The atom that moves farthest per step (+inf: a non-finite position or
    // velocity) over every rank's home atoms on the host (after getHome).
    // Collective.
    struct FastestAtom {
        double move = 0.0;  // nm per step
        std::int64_t id = INT64_MAX;
        std::string describe(double dt) const {
            if (!std::isfinite(move)) {
                return fmt::format("atom {} (global id) has a non-finite position or velocity", id);
            }
            return fmt::format("atom {} (global id) moves {:.3g} nm per step (velocity {:.4g} nm/ps)", id, move,
                               move / dt);
        }
    };
    FastestAtom fastestAtom() const {
        FastestAtom mine;
        for (const AtomRecord& a : home) {
            const bool finite = isFinite(a.position) && isFinite(a.velocity);
            const double move = finite ? std::sqrt(norm2(a.velocity)) * e.options_.dt : HUGE_VAL;
            if (move > mine.move || (move == mine.move && a.globalId < mine.id)) mine = {move, a.globalId};
        }
        FastestAtom all;
        all.move = e.world_.allReduceValue(mine.move, runtime::ReduceOp::Max);
        all.id = e.world_.allReduceValue(mine.move == all.move ? mine.id : INT64_MAX, runtime::ReduceOp::Min);
        return all;
    }

    // At `step`, with the home atoms on the host: a non-finite atom, or one
    // moving more than kMaxStepDisplacement per step, stops the run on every
    // rank with the atom and the step.
    void requireSaneAtoms() {
        const FastestAtom fastest = fastestAtom();
        if (fastest.move <= kMaxStepDisplacement) return;
        throwError(ErrorKind::InvalidInput,
                   fmt::format("{} at step {}{}: the system blew up. Use a smaller --dt, check the input structure, or "
                               "relax it (energy minimisation) first",
                               fastest.describe(e.options_.dt), step,
                               std::isfinite(fastest.move)
                                   ? fmt::format(", more than the bound of {} nm per step", kMaxStepDisplacement)
                                   : ""));
    }

    // An energy step of the run: its energies, its rows in --energy and the
    // log, and the thermostat's coupling.
    void recordEnergies(std::int64_t s) {
        const EnergySample sample = measureEnergies(s);
        if (energyOutput != nullptr) {
            energyOutput->appendEnergies(e.world_, sample);
            if (logEnabled(e.options_)) energyOutput->appendLog(e.world_, logEnergyBlock(sample), s);
        }
        if (e.options_.thermostat == "v-rescale") {
            const int dof = degreesOfFreedom(static_cast<int>(totalAtoms));
            const double lambda = thermostat.scale(sample.kinetic, dof, e.options_.temperature, e.options_.tauT,
                                                   e.options_.thermoEvery * e.options_.dt);
            thermostatEnergy += (lambda * lambda - 1.0) * sample.kinetic;
            lastVelocityScale = lambda;
            e.backend_.setVelocityScale(lambda);
        }
    }

    // The energies of step `s` (collective; the backend has just computed
    // them): checked against a blow-up, kept in the summary and printed.
    EnergySample measureEnergies(std::int64_t s) {
        const NvtxRange range("energies");
        const EnergyTerms local = e.backend_.energies();
        std::vector<double> sums{local.lj, local.coulombPairs, local.coulombSelf, local.kinetic, local.virial};
        // And the stop vote: a second signal stops at the step after this one.
        for (const std::int64_t v : stopper.vote(false)) sums.push_back(static_cast<double>(v));
        e.world_.allReduce(std::span(sums), runtime::ReduceOp::Sum);
        stopper.agreeAtEnergyStep(std::span(sums).subspan(5), s + 1);
        std::vector<std::int64_t> bad{local.nonFiniteAtom >= 0 ? local.nonFiniteStep : INT64_MAX,
                                      local.nonFiniteAtom >= 0 ? local.nonFiniteAtom : INT64_MAX};
        e.world_.allReduce(std::span(bad), runtime::ReduceOp::Min);
        if (bad[1] != INT64_MAX) {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("non-finite force or position of atom {} (global id) found at step {} (checked "
                                   "every energy step); the system blew up: use a smaller --dt, check the input "
                                   "structure, or relax it first",
                                   bad[1], summary.firstStep + bad[0]));
        }
        EnergySample sample;
        sample.step = s;
        sample.time = s * e.options_.dt;
        sample.lj = sums[0];
        sample.coulomb = sums[1] + sums[2];
        sample.potential = sample.lj + sample.coulomb;
        sample.kinetic = sums[3];
        sample.total = sample.potential + sample.kinetic;
        sample.conserved = sample.total - thermostatEnergy;
        const int dof = degreesOfFreedom(static_cast<int>(totalAtoms));
        sample.temperature = 2.0 * sample.kinetic / (dof * kBoltzmann);
        sample.pressure = 2.0 / (3.0 * box.volume()) * (sample.kinetic - sums[4]) * kBarPerKJMolNm3;
        // Decided together (an integer maximum): sums of doubles reduced over
        // MPI need not agree to the last bit on every rank, and the branch
        // below is collective.
        const bool tooHot = !(sample.temperature <= maxTemperature);
        if (e.world_.allReduceValue<std::int64_t>(tooHot ? 1 : 0, runtime::ReduceOp::Max) != 0) {
            // Name the atom too: the fastest one at the end of that step.
            e.backend_.getHome(e.halo_, home);
            const FastestAtom fastest = fastestAtom();
            throwError(ErrorKind::InvalidInput,
                       fmt::format("the temperature reached {:.4g} K at step {}, beyond the bound of {:.4g} K ({} x "
                                   "the larger of --temperature and the start temperature), and {}: the system blew "
                                   "up. Use a smaller --dt, check the input structure, or relax it (energy "
                                   "minimisation) first",
                                   sample.temperature, s, maxTemperature, kTemperatureFactor,
                                   fastest.describe(e.options_.dt)));
        }
        summary.energies.push_back(sample);
        printThermo(sample);
        return sample;
    }

    // The energies of the run's last step `step` (its end or a stop), where
    // its frame and checkpoint are: the series ended a step before them, so it
    // was uneven across a restart. One more step's forces from the state at
    // `step`, outside the run's timing; `home` keeps that state for the
    // outputs, and the thermostat is not coupled (the checkpoint is the state
    // before this step: a restart couples at its first step where that is an
    // energy step). Its log block is written now; its .xvg row after the
    // checkpoint, as a periodic checkpoint precedes its step's row, so a
    // restart cuts it and writes it again where it is an energy step.
    EnergySample finalEnergies(bool searchedHere) {
        const std::vector<AtomRecord> atStep = home;
        std::map<std::string, double> untimed;
        phases = &untimed;
        if ((step - summary.firstStep) % e.options_.nstlist == 0 && !searchedHere) search(SearchKind::Final);
        phases = &summary.searchPhasesMs;
        e.backend_.runSteps(e.halo_, 1, true);
        e.backend_.dropTimelineSample();
        e.backend_.synchronize();
        e.transport_.checkForFailure();
        const EnergySample sample = measureEnergies(step);
        home = atStep;
        if (energyOutput != nullptr && logEnabled(e.options_)) {
            energyOutput->appendLog(e.world_, logEnergyBlock(sample), step);
        }
        return sample;
    }

    void printThermo(const EnergySample& s) const {
        if (!isRoot() || e.options_.quiet) return;
        if (summary.energies.size() == 1) {
            fmt::print("{:>10} {:>10} {:>13} {:>13} {:>13} {:>13} {:>13} {:>13} {:>9} {:>10}  {}\n", "Step", "Time",
                       "LJ (SR)", "Coulomb (SR)", "Potential", "Kinetic", "Total", "Conserved", "Temp", "Pres(bar)",
                       "progress");
        }
        std::string progress = "single point";
        if (e.options_.steps == kStepsUntilStopped) {
            progress = "until stopped";
        } else if (e.options_.steps > 0) {
            // The last row (finalEnergies) is the step after the last one run.
            const double done = std::min(1.0, double(s.step - summary.firstStep + 1) / e.options_.steps);
            const double elapsed = seconds(runStart, Clock::now());
            const double left = done > 0 ? elapsed * (1.0 - done) / done : 0.0;
            progress = fmt::format("{:3.0f}%, {:.0f} s left", 100.0 * done, left);
        }
        fmt::print("{:>10} {:>10.3f} {:>13.5g} {:>13.6g} {:>13.6g} {:>13.6g} {:>13.6g} {:>13.6g} {:>9.2f} {:>10.4g}  "
                   "{}\n",
                   s.step, s.time, s.lj, s.coulomb, s.potential, s.kinetic, s.total, s.conserved, s.temperature,
                   s.pressure, progress);
        std::fflush(stdout);
    }

    // --drift-from past the run's last step would fit nothing: refused before
    // anything runs (a restart's segment starts at its checkpoint's step).
    void requireDriftWindowInRun() const {
        const double from = e.options_.driftFromPs, dt = e.options_.dt;
        const std::int64_t last = runEnd();
        if (from > 0.0 && from > static_cast<double>(last) * dt * (1.0 + 1e-9)) {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("--drift-from {} ps: this run ends at {:g} ps (step {} of {:g} ps); give a time "
                                   "within it, or 0 to fit the whole run",
                                   from, static_cast<double>(last) * dt, last, dt));
        }
    }

    RunSummary run() {
        const auto startupBegin = Clock::now();
        auto t = startupBegin;
        phases = &summary.startupPhasesMs;
        setUp();
        requireDriftWindowInRun();
        phase("set-up", t);
        if (isRoot()) stopper.fireTestHooks(RunStop::kAtStart);
        search(SearchKind::Warmup);  // records its own parts
        t = Clock::now();
        e.backend_.synchronize();
        phase("synchronise", t);
        phases = &summary.searchPhasesMs;
        summary.startupSeconds = seconds(startupBegin, Clock::now());
        summary.requestedSteps = e.options_.steps;
        if (stopper.stopRequested()) {
            // A signal during start-up: nothing run, no output opened.
            summary.stop = stopper.record();
            summary.steps = 0;
            return summary;
        }

        const MdOptions& o = e.options_;
        const std::int64_t first = summary.firstStep;
        const std::int64_t end = runEnd();
        step = first;
        runStart = Clock::now();
        lastCheckpointAt = runStart;
        bool firstSearch = true;
        std::int64_t searchedAt = -1;  // the step of the last search
        RunOutput output(o, first);
        output.open(e.world_, restartFrom ? &*restartFrom : nullptr, totalAtoms);
        energyOutput = &output;
        if (logEnabled(o)) {
            const LogContext context{e.backend_.description(), e.transport_.name(), summary.grid,
                                     summary.search,           e.world_.size(),     first,
                                     restartFrom.has_value(),  totalAtoms,          summary.stepKernels};
            output.appendLog(e.world_, logHeader(o, context), first);
        }
        if (o.steps == 0) {
            singlePoint(output);
            firstSearch = false;
        }
        while (step < end) {
            if (isRoot()) stopper.fireTestHooks(step);
            if (stopper.stopRequested()) break;  // agreed at the last energy step
            writeOutput(output, firstSearch, Boundary::Step);
            if ((step - first) % o.nstlist == 0) {
                auto t0 = Clock::now();
                search(firstSearch ? SearchKind::First : SearchKind::Regular);
                firstSearch = false;
                searchedAt = step;
                if (stopper.stopRequested()) break;  // agreed in the search: stop before its step
                if (timedCheckpointDue) {
                    const auto tOutput = Clock::now();
                    writeTimedCheckpoint(output);
                    t0 += Clock::now() - tOutput;  // output time, not the search step's
                }
                auto tStep = Clock::now();
                e.backend_.runSteps(e.halo_, 1, isEnergyStep(step));
                e.backend_.dropTimelineSample();
                e.backend_.synchronize();
                e.transport_.checkForFailure();
                phase("step", tStep);
                summary.searchSeconds += seconds(t0, tStep);
                ++summary.searchSteps;
                if (isEnergyStep(step)) recordEnergies(step);
                ++step;
                continue;
            }
            // --measure-buffer with pruning: positions for the inner list's check.
            const std::int64_t pruneSample = pruneSampleStep(step);
            if (step == pruneSample) samplePrunePositions();
            // Run up to the next search, output step, energy step (inclusive),
            // prune sample or the end.
            std::int64_t chunkEnd = std::min(end, first + ((step - first) / o.nstlist + 1) * o.nstlist);
            chunkEnd = std::min(chunkEnd, output.nextOutputStep(step));
            if (pruneSample > step) chunkEnd = std::min(chunkEnd, pruneSample);
            for (std::int64_t s = step; s < chunkEnd; ++s) {
                if (isEnergyStep(s)) {
                    chunkEnd = s + 1;
                    break;
                }
            }
            const int count = static_cast<int>(chunkEnd - step);
            const std::int64_t syncsBefore = hostSyncs();
            const auto t0 = Clock::now();
            e.backend_.countApiSyncs(true);
            e.backend_.runSteps(e.halo_, count, isEnergyStep(chunkEnd - 1));
            e.backend_.countApiSyncs(false);
            e.backend_.synchronize();
            e.transport_.checkForFailure();
            summary.normalSeconds += seconds(t0, Clock::now());
            summary.normalSteps += count;
            normalStepSyncs += hostSyncs() - syncsBefore;
            step = chunkEnd;
            if (isEnergyStep(step - 1)) recordEnergies(step - 1);
        }
        summary.steps = step - first;
        if (stopper.stopRequested() && step < end) {  // a stop agreed at the last step is no stop
            summary.stop = stopper.record();
            summary.stop.searchStep = (step - first) % o.nstlist == 0;
        }
        // Every step counts, with the energy and output steps' host work
        // (the final energies and checkpoint below are no step's).
        summary.totalSeconds = seconds(runStart, Clock::now());
        std::optional<EnergySample> lastEnergies;
        if (!firstSearch) {
            // The atoms at the end are checked as at every output step, even
            // where no output is due (a blow-up in the last steps of a run
            // used to end with exit status 0).
            e.backend_.getHome(e.halo_, home);
            requireSaneAtoms();
            if (summary.steps > 0) lastEnergies = finalEnergies(searchedAt == step);
        }
        finishSummary();
        // The log's end goes before the final checkpoint, which records where
        // every output stands: a restart from it keeps this segment's summary.
        if (logEnabled(o)) output.appendLog(e.world_, logEnd(summary, o), step);
        // The end, or the stop: a final checkpoint and whatever is due here.
        writeOutput(output, true, summary.stop.stopped() ? Boundary::Stop : Boundary::End);
        if (lastEnergies) output.appendEnergies(e.world_, *lastEnergies);
        return summary;
    }

    // The trial (Engine::startTrial): set-up and warm-up search as run().
    void startTrial() {
        setUp();
        search(SearchKind::Warmup);
        e.backend_.synchronize();
        step = summary.firstStep;
    }

    // The next `count` steps as run()'s loop takes them, searches included.
    void advanceTrial(int count) {
        const std::int64_t first = summary.firstStep;
        const std::int64_t nstlist = e.options_.nstlist;
        const std::int64_t end = step + count;
        while (step < end) {
            if ((step - first) % nstlist == 0) {
                search(step == first ? SearchKind::First : SearchKind::Regular);
                e.backend_.runSteps(e.halo_, 1, false);
                ++step;
                continue;
            }
            const std::int64_t nextSearch = first + ((step - first) / nstlist + 1) * nstlist;
            const std::int64_t chunkEnd = std::min(end, nextSearch);
            e.backend_.runSteps(e.halo_, static_cast<int>(chunkEnd - step), false);
            step = chunkEnd;
        }
        e.backend_.synchronize();
        e.transport_.checkForFailure();
    }

    // --steps 0, mdrun's single-point evaluation: the first step's forces
    // and energies, nothing advanced (no checkpoint; a trajectory gets the
    // start's frame). The backends expose no forces; the step's leapfrog
    // update v(t+dt/2) = lambda v(t-dt/2) + F dt/m, in the backends' float,
    // gives them back to its rounding (~1e-4 relative; both backends update so).
    void singlePoint(RunOutput& output) {
        writeOutput(output, true, Boundary::Step);
        const std::vector<AtomRecord> before = gatherAtomsOnRoot(home, e.world_);
        const auto lambda = static_cast<float>(pendingVelocityScale());
        const auto t0 = Clock::now();
        search(SearchKind::First);
        auto tStep = Clock::now();
        e.backend_.runSteps(e.halo_, 1, true);
        e.backend_.synchronize();
        e.transport_.checkForFailure();
        phase("step", tStep);
        summary.searchSeconds += seconds(t0, tStep);
        ++summary.searchSteps;
        recordEnergies(step);
        e.backend_.getHome(e.halo_, home);
        const std::vector<AtomRecord> after = gatherAtomsOnRoot(home, e.world_);
        if (!isRoot()) return;
        HALOEX_ASSERT(before.size() == after.size(), "single point: atoms lost in the step");
        RunSummary::SinglePoint& sp = summary.singlePoint;
        sp.evaluated = true;
        sp.step = step;
        double sumSquares = 0.0;
        const double massPerDt = ff.mass / e.options_.dt;
        for (std::size_t i = 0; i < after.size(); ++i) {
            HALOEX_ASSERT(before[i].globalId == after[i].globalId, "single point: atoms out of order");
            double f2 = 0.0;
            for (int d = 0; d < 3; ++d) {
                const double vOld = static_cast<float>(before[i].velocity[d]) * lambda;
                const double f = (after[i].velocity[d] - vOld) * massPerDt;
                f2 += f * f;
            }
            sumSquares += f2;
            if (f2 > sp.maxForce * sp.maxForce) {
                sp.maxForce = std::sqrt(f2);
                sp.maxForceAtom = after[i].globalId;
            }
        }
        sp.rmsForce = after.empty() ? 0.0 : std::sqrt(sumSquares / static_cast<double>(after.size()));
    }

    std::int64_t hostSyncs() const { return e.backend_.hostSyncsInSteps() + e.halo_.counters().hostSyncs; }

    // Every rank's transport notes (e.g. the nvshmem path per peer), a line
    // that several ranks report once, with the ranks it applies to.
    std::vector<std::string> gatherNotes(const std::vector<std::string>& mine) const {
        std::string joined;
        for (const auto& line : mine) joined += line + '\n';
        joined += '\0';  // ends this rank's lines
        std::vector<std::vector<char>> toAll(e.world_.size(), std::vector<char>(joined.begin(), joined.end()));
        const std::vector<char> all = e.world_.allToAll(toAll);  // in rank order
        std::vector<std::vector<std::string>> byRank(1);
        std::string line;
        for (char c : all) {
            if (c == '\0') {
                byRank.emplace_back();
            } else if (c == '\n') {
                byRank.back().push_back(line);
                line.clear();
            } else {
                line += c;
            }
        }
        byRank.pop_back();  // after the last rank's terminator
        return groupRankNotes(byRank);
    }

    // Minimum, average and maximum over the ranks of this rank's wall-time
    // parts (collective). The search-step parts join when every rank has the
    // same ones.
    std::vector<RankSpread> rankSpread() const {
        std::vector<std::string> names{"steps without search (s)", "search steps (s)", "start-up (s)"};
        std::vector<double> values{summary.normalSeconds, summary.searchSeconds, summary.startupSeconds};
        // Where a step's time goes on this rank (timeline medians: the device's
        // on the GPU, the host clock around the exchanges on the CPU): its own
        // compute, the halo exchange its local work did not hide (on the CPU,
        // all of it, waits for slower neighbours included), and its share of
        // the search steps. The wall-time rows above are equal on every rank
        // (the ranks synchronise); imbalance shows here.
        const StepTimings timeline = e.backend_.timings();
        const bool sampled = timeline.samples > 0;
        if (e.world_.allReduceValue(static_cast<std::int64_t>(sampled ? 1 : 0), runtime::ReduceOp::Min) == 1) {
            // Local compute: the local kernel, and the update where --timeline-parts timed it.
            names.insert(names.end(), {"step: local compute (us)", "step: exposed halo exchange (us)",
                                       "step: search, amortised (us)"});
            values.insert(values.end(),
                          {describeSamples(timeline.localUs).median + describeSamples(timeline.updateUs).median,
                           describeSamples(timeline.nonoverlapUs).median,
                           summary.steps > 0 ? 1e6 * summary.searchSeconds / static_cast<double>(summary.steps) : 0.0});
        }
        const auto partCount = static_cast<std::int64_t>(summary.searchPhasesMs.size());
        if (e.world_.allReduceValue(partCount, runtime::ReduceOp::Min) ==
            e.world_.allReduceValue(partCount, runtime::ReduceOp::Max)) {
            for (const auto& [name, ms] : inStepOrder(summary.searchPhasesMs)) {
                names.push_back("search: " + name + " (ms)");
                values.push_back(ms);
            }
        }
        std::vector<double> low = values, sum = values, high = values;
        e.world_.allReduce(std::span(low), runtime::ReduceOp::Min);
        e.world_.allReduce(std::span(sum), runtime::ReduceOp::Sum);
        e.world_.allReduce(std::span(high), runtime::ReduceOp::Max);
        std::vector<RankSpread> spread;
        for (std::size_t k = 0; k < names.size(); ++k) {
            spread.push_back({names[k], low[k], sum[k] / e.world_.size(), high[k]});
        }
        return spread;
    }

    void finishSummary() {
        summary.rankSpread = rankSpread();
        // The slowest rank sets the pace.
        auto slowest = [&](double v) { return e.world_.allReduceValue(v, runtime::ReduceOp::Max); };
        summary.startupSeconds = slowest(summary.startupSeconds);
        summary.totalSeconds = slowest(summary.totalSeconds);
        summary.normalSeconds = slowest(summary.normalSeconds);
        summary.searchSeconds = slowest(summary.searchSeconds);
        const double psPerStep = e.options_.dt;  // dt is in ps
        const auto nsPerDay = [&](std::int64_t steps, double wall) {
            return wall > 0 ? (steps * psPerStep * 1e-3) / (wall / 86400.0) : 0.0;
        };
        if (summary.steps > 0 && summary.totalSeconds > 0) {
            summary.usPerStep = 1e6 * summary.totalSeconds / summary.steps;
            summary.nsPerDay = nsPerDay(summary.steps, summary.totalSeconds);
        }
        if (summary.normalSteps > 0 && summary.normalSeconds > 0) {
            summary.usPerStepSteady = 1e6 * summary.normalSeconds / summary.normalSteps;
            summary.nsPerDaySteady = nsPerDay(summary.normalSteps, summary.normalSeconds);
        }
        if (summary.searchSteps > 0) summary.searchStepMs = 1e3 * summary.searchSeconds / summary.searchSteps;
        // Host synchronisations inside normal steps (search steps excluded).
        summary.hostSyncsPerStep = summary.normalSteps > 0 ? double(normalStepSyncs) / summary.normalSteps : 0.0;
        summary.apiSyncsCounted = e.backend_.apiSyncsCounted();
        if (summary.apiSyncsCounted) {
            summary.apiSyncsByFunction = e.backend_.apiSyncs();
            std::int64_t mine = 0;
            for (const auto& [name, n] : summary.apiSyncsByFunction) mine += n;
            summary.apiSyncsInNormalSteps =
                static_cast<std::int64_t>(e.world_.allReduceValue(static_cast<double>(mine), runtime::ReduceOp::Max));
        }
        const std::vector<EnergySample> fitted = samplesFrom(summary.energies, e.options_.driftFromPs);
        summary.conservedDrift = conservedDriftPerAtom(fitted, totalAtoms);
        summary.driftSamples = fitted.size();
        summary.driftSpanPs = fitted.size() >= 2 ? fitted.back().time - fitted.front().time : 0.0;
        summary.transportNotes = gatherNotes(e.halo_.describe());
        summary.graphs = e.backend_.graphsActive();
        summary.stepGraphNodes = e.backend_.stepGraphNodes();
        summary.stepsInMultiStepGraphs = e.backend_.stepsInMultiStepGraphs();
        summary.exchangeNotes = e.backend_.exchangeNotes();
        summary.timings = e.backend_.timings();
    }
};

std::string driftSpanNote(double spanPs) {
    if (spanPs >= kMeaningfulDriftSpanPs) return {};
    return fmt::format("; over only {:.3g} ps: too short to mean much, fluctuations dominate; fit {:g} ps or more",
                       spanPs, kMeaningfulDriftSpanPs);
}

std::vector<std::pair<std::string, double>> inStepOrder(const std::map<std::string, double>& parts) {
    // Start-up's own parts first, then a search step's in the order it runs them.
    static const std::vector<std::string> kOrder{"transport",        "set-up",      "upload",      "download",
                                                 "buffer check",     "migrate",     "cell order",  "plan",
                                                 "transport set-up", "positions",   "static data", "pair search",
                                                 "count check",      "synchronise", "step"};
    std::vector<std::pair<std::string, double>> out;
    for (const std::string& name : kOrder) {
        if (const auto it = parts.find(name); it != parts.end()) out.emplace_back(*it);
    }
    for (const auto& part : parts) {
        if (std::find(kOrder.begin(), kOrder.end(), part.first) == kOrder.end()) out.emplace_back(part);
    }
    return out;
}

Engine::Engine(MdOptions options, runtime::World& world, transport::BlockTransport& transport, RankBackend& backend)
    : options_(std::move(options)), world_(world), transport_(transport), halo_(transport), backend_(backend) {}

Engine::~Engine() = default;

RunSummary Engine::run() {
    requireOption(!trial_, "Engine::run after startTrial: an Engine runs a trial or the run, not both");
    requireOption(!options_.alreadyComplete, alreadyCompleteNote(options_));
    Impl impl(*this);
    return impl.run();
}

void Engine::startTrial() {
    requireOption(!trial_, "Engine::startTrial called twice");
    // Nothing written, printed or recounted: the trial only measures.
    options_.quiet = true;
    options_.logFile = "none";
    options_.jsonFile.clear();
    options_.trajFile.clear();
    options_.energyFile.clear();
    options_.checkpointFile.clear();
    options_.checkpointEvery = 0;
    options_.writeGromacsDir.clear();
    options_.measureBuffer = false;
    options_.countApiSyncs = false;
    options_.maxHours = 0.0;
    trial_ = std::make_unique<Impl>(*this);
    trial_->startTrial();
}

void Engine::advanceTrial(int steps) {
    requireOption(trial_ != nullptr, "Engine::advanceTrial before startTrial");
    requireOption(steps >= 0, fmt::format("Engine::advanceTrial({}): the step count cannot be negative", steps));
    trial_->advanceTrial(steps);
}

void addStartupPart(RunSummary& summary, const std::string& name, double seconds) {
    summary.startupSeconds += seconds;
    summary.startupPhasesMs[name] += 1e3 * seconds;
}

}  // namespace haloex::md
