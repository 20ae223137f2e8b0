// haloex-md: the MD proxy application (docs/md-engine.md). One process per GPU
// under mpirun/srun; without a launcher, one GPU, or the CPU reference with
// several virtual ranks as threads of one process.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <cstddef>
#include <span>
#include <string_view>
#include <fstream>
#include <array>
#include <charconv>
#include <cstdint>
#include <iostream>
#include <limits>
#include <memory>
#include <new>
#include <optional>

#include "haloex/build_info.hpp"
#include "haloex/config.hpp"
#include "haloex/core/error.hpp"
#include "haloex/detail/core/fnv1a.hpp"
#include "haloex/halo/auto_select.hpp"
#include "haloex/halo/backend.hpp"
#include "haloex/md/cpu_backend.hpp"
#include "haloex/md/engine.hpp"
#include "haloex/md/gpu_backend.hpp"
#include "haloex/md/report.hpp"
#include "haloex/md/run_files.hpp"
#include "haloex/md/run_length.hpp"
#include "haloex/md/run_output.hpp"
#include "haloex/md/run_stop.hpp"
#include "haloex/md/step_kernels.hpp"
#include "haloex/runtime/world.hpp"
#include "haloex/runtime/launched_world.hpp"

namespace {

using namespace haloex;

// A whole number from 0 to 2^64 - 1, checked as text: CLI11 itself turns
// "-1" into 2^64 - 1 and clamps larger values for an unsigned option.
const CLI::Validator kUnsigned64(
    [](std::string& text) -> std::string {
        std::uint64_t value = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec == std::errc() && end == text.data() + text.size()) return {};
        return fmt::format("{} is out of range; use a whole number from 0 to {}", text,
                           std::numeric_limits<std::uint64_t>::max());
    },
    "0..2^64-1");

// A step number from 1 to kMaxStepCount (--until-step), checked as text: -1
// would read as "not given".
const CLI::Validator kStepNumber(
    [](std::string& text) -> std::string {
        std::int64_t value = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec == std::errc() && end == text.data() + text.size() && value >= 1 && value <= md::kMaxStepCount) {
            return {};
        }
        return fmt::format("{}: out of range; use the run's last step, from 1 to {}", text, md::kMaxStepCount);
    },
    "1..10^15");

void addOptions(CLI::App& app, md::MdOptions& o) {
    app.add_option("--atoms", o.atoms,
                   "Atoms of the lattice start (even, >= 1000); 0: 22 500 per GPU rank, 3 000 on the CPU");
    app.add_option("--gro", o.groFile, "Start from this .gro file (POS/P = +q, NEG/N = -q) instead of the lattice");
    app.add_option("--min-distance", o.minDistance,
                   "Refuse a start configuration with two atoms nearer than this (nm) before step 0; 0: no check")
        ->capture_default_str();
    app.add_option("--seed", o.seed, "Random seed of the lattice start and the thermostat")
        ->check(kUnsigned64)
        ->capture_default_str();
    app.add_option("--temperature", o.temperature,
                   "Start temperature (the lattice start, and a --gro without velocities) and thermostat reference "
                   "(K)")
        ->capture_default_str();
    app.add_flag("--gen-vel", o.generateVelocities,
                 "Draw Maxwell-Boltzmann velocities at --temperature for a --gro start even when it has velocities "
                 "(a .gro without velocities always gets them)");
    app.add_option(
        "--steps", o.steps,
        "MD steps to run in this job, from its first step (a --restart's: the checkpoint's): 0 evaluates the "
        "first step only (energies, forces, JSON), -1 runs until stopped (SIGTERM/SIGINT/SIGHUP/SIGUSR1 or "
        "--maxh); without it (and --until-step): 2 000 on GPUs, 200 on the CPU");
    app.add_option("--until-step", o.untilStep,
                   "Run until this step, counted from step 0 across restarts (mdrun's nsteps, LAMMPS's run N upto): "
                   "the same command resubmitted after each stop ends at exactly this step, and once there says the "
                   "run is complete and exits 0; not with --steps")
        ->check(kStepNumber);
    app.add_option("--dt", o.dt, "Time step (ps)")->capture_default_str();
    app.add_option("--rc", o.rc, "Interaction cutoff (nm)")->capture_default_str();
    app.add_option("--rlist", o.rlist,
                   "Pair-list cutoff = halo distance (nm); 0: the smallest whose estimated drift is within "
                   "--buffer-tolerance");
    app.add_option("--nstlist", o.nstlist,
                   "Steps between pair searches and repartitioning; 0: chosen by a cost model on GPUs "
                   "(docs/md-engine.md, \"Choosing nstlist\"), 50 on the CPU");
    app.add_option("--buffer-tolerance", o.bufferTolerance,
                   "Energy drift allowed by the pair-list buffer (kJ/mol/ps per atom, the ballistic estimate); a GPU "
                   "list that lives under 0.12 ps is held to a fifth of it")
        ->capture_default_str();
    auto* pruneParts = app.add_option(
        "--prune-parts", o.pruneParts,
        "GPU dynamic pair-list pruning (GROMACS's rolling prune): every step re-prunes 1/N of the list to "
        "--rlist-inner, so each part's inner list lives N steps; 0: off; -1: auto (8 on GPUs, off on the CPU)");
    pruneParts->capture_default_str();
    app.add_flag_callback(
           "--no-prune", [&o] { o.pruneParts = 0; }, "Same as --prune-parts 0")
        ->excludes(pruneParts);
    app.add_option("--rlist-inner", o.rlistInner,
                   "Radius of the pruned inner list (nm, between --rc and --rlist); 0: the smallest whose estimated "
                   "drift over --prune-parts steps is within a twentieth of --buffer-tolerance (0.92 nm at the "
                   "defaults)");
    app.add_option("--thermostat", o.thermostat, "none or v-rescale (coupled on energy steps)")->capture_default_str();
    app.add_option("--tau-t", o.tauT, "Thermostat coupling time (ps)")->capture_default_str();
    app.add_option("--grid", o.grid, "Rank grid NXxNYxNZ, or auto (smallest halo volume)")->capture_default_str();
    app.add_option("--ranks", o.virtualRanks,
                   "CPU runs without mpirun: virtual ranks (threads of this process); 0: 4. Under mpirun/srun the "
                   "launcher's count applies (a different --ranks is refused)");
    app.add_option("--device", o.device, "auto (GPU when there is one), cpu or gpu")->capture_default_str();
    app.add_option("--transport", o.transport,
                   "Halo exchange: auto (several GPU ranks: times every transport that can run here inside "
                   "--auto-steps MD steps of this run and takes the fastest), auto:rule (the fixed rule: nvshmem "
                   "where built, else ipc), reference (CPU, in-process), staged, ipc, nccl, nvshmem, nccl-device (the "
                   "fused kernels over NCCL 2.28's windows; one process per GPU)")
        ->capture_default_str();
    app.add_option("--auto-steps", o.autoSteps,
                   fmt::format("--transport auto: timed MD steps per repeat ({} repeats per candidate after {} "
                               "untimed steps; the median counts)",
                               md::kAutoRepeats, md::kAutoWarmupSteps))
        ->capture_default_str();
    app.add_option("--auto-cache", o.autoCacheFile,
                   "--transport auto: keep the measured choice in this JSON file, per system and rank count, and "
                   "reuse it in later runs instead of measuring (a stale or corrupt file is measured again)");
    app.add_option("--nvshmem-path", o.nvshmemPath,
                   "nvshmem transport path per peer: auto, direct (NVLink stores), tma (NVLink bulk copies) or put "
                   "(put-with-signal, what InfiniBand needs)")
        ->capture_default_str();
    app.add_option("--nvshmem-launch", o.nvshmemLaunch,
                   "nvshmem transport launches: fused (one kernel per exchange moves every pulse) or per-pulse (the "
                   "same kernel once per pulse, stream-ordered: the ablation that measures fusion)")
        ->check(CLI::IsMember({"fused", "per-pulse"}))
        ->capture_default_str();
    app.add_flag("--allow-shared-gpus", o.allowSharedGpus,
                 "Allow more ranks than GPUs on a node (start MPS first; for correctness runs)");
    app.add_option("--cuda-graphs", o.cudaGraphs,
                   "Capture the MD step in a CUDA graph where the transport allows (nccl: only when given as 1), "
                   "and the search step's grid and count passes; 0 or 1")
        ->check(CLI::IsMember({"0", "1"}))
        ->capture_default_str();
    app.add_option("--steps-per-graph", o.stepsPerGraph,
                   "GPU, with CUDA graphs: launch the normal steps as graphs of this many steps (each step then "
                   "starts behind an edge of the graph, not a graph launch: on several ranks a launch leaves "
                   "several us between steps; the steps between two searches or energy steps that do not fill "
                   "one run one by one); 0 (automatic: 4 on the GPU with CUDA graphs, else 1) or 1 to 64 (checked with "
                   "the other ranges)")
        ->capture_default_str();
    // auto | 0 | 1 (md::Toggle): auto is decided at set-up (step_kernels.hpp).
    const auto addToggle = [&app](const char* name, md::Toggle& target, const std::string& help) {
        app.add_option_function<std::string>(
               name,
               [&target](const std::string& v) {
                   target = v == "auto" ? md::Toggle::Auto : v == "1" ? md::Toggle::On : md::Toggle::Off;
               },
               help)
            ->check(CLI::IsMember({"auto", "0", "1"}))
            ->type_name("TEXT")
            ->default_str("auto");
    };
    addToggle("--fuse-update", o.fuseUpdate,
              fmt::format("GPU: sum each home atom's forces, move the atoms and gather their new positions for the "
                          "next step in one kernel instead of three (one rank: the same results bit for bit; with "
                          "several ranks, within float rounding); auto (on for GPU ranks searching on the device "
                          "with at most {} atoms per rank, where it measured faster; with several ranks only "
                          "together with --sort-atoms), 0 or 1",
                          md::kFuseUpdateMaxAtoms));
    addToggle("--sort-atoms", o.sortAtoms,
              "GPU, device search: at every search put the home atoms (velocities, types, ids with them) in the pair "
              "search's cell order, so that the step's moves between atom and cluster order, and the halo packing, "
              "read and write in runs (results agree within float rounding); auto (on for GPU ranks searching on "
              "the device, where it measured faster; with several ranks only together with --fuse-update), 0 or 1");
    app.add_flag("--count-api-syncs", o.countApiSyncs,
                 "GPU: count with CUPTI the CUDA calls that block the host inside the steps without search "
                 "(every library's; reported in the summary and the JSON)");
    app.add_flag("--timeline-parts", o.timelineParts,
                 "GPU: time the step's parts on the device too (forward x, non-local F, reverse f, update, the whole "
                 "step: three more events a step, on its critical path), and with nvshmem or nccl-device the "
                 "exchange kernels from timestamps inside them: the summary's timeline, the JSON and md.log's "
                 "per-rank split");
    app.add_option("--search", o.search,
                   "Where search steps run: device (atoms stay on the GPU: migration, halo plan, static data and pair "
                   "lists built there), host (atoms downloaded and repartitioned on the CPU: the oracle path), or auto "
                   "(device on GPUs)")
        ->capture_default_str();
    app.add_option("--wait-timeout", o.waitTimeoutSeconds,
                   "Seconds a device-side wait may take before the job is aborted with a diagnostic; 0: default");
    app.add_option("--maxh", o.maxHours,
                   "Stop cleanly (checkpoint, trajectory, JSON; exit status 75) at the first search step after 0.99 "
                   "x this many hours of wall-clock time, as mdrun -maxh; 0: no limit")
        ->capture_default_str();
    app.add_option("--thermo-every", o.thermoEvery,
                   "Steps between energy steps (energies, thermostat coupling, log and --energy rows); 0: steps/10. "
                   "A --restart keeps the checkpoint's unless given");
    app.add_option("--drift-from", o.driftFromPs,
                   "Fit the reported conserved-energy drift over the energy steps from this time on (ps), e.g. after "
                   "a lattice start has relaxed; 0: the whole run, as mdrun")
        ->capture_default_str();
    app.add_option("--traj", o.trajFile,
                   "Write a trajectory to this file: H5MD when it ends in .h5 or .h5md (float32 positions, read by "
                   "MDAnalysis; needs a build with HDF5, see --version), multi-frame .gro otherwise");
    app.add_option("--traj-every", o.trajEvery,
                   "Steps between trajectory frames; 0: --thermo-every. A --restart keeps the checkpoint's spacing "
                   "(a different one only for a new --traj file)");
    app.add_option("--log", o.logFile,
                   "The run log (settings with their reasons, energies, averages, per-rank timing); an existing one "
                   "is backed up to #NAME.N#, a --restart continues it; none: no log")
        ->capture_default_str();
    app.add_option("--energy", o.energyFile,
                   "Write every energy step's terms (LJ, Coulomb, potential, kinetic, total, conserved, temperature, "
                   "pressure; a row every --thermo-every steps) to this .xvg file, continued exactly by --restart");
    app.add_option("--cpt", o.checkpointFile,
                   "Write checkpoints to this file (atomically; the one it replaces kept as FILE.prev): at the end, "
                   "at a stop and every --cpt-every steps / --cpt-minutes. Without it a signal or --maxh stop still "
                   "writes state.cpt, and a --restart writes its checkpoints back into the --restart file");
    app.add_option("--cpt-every", o.checkpointEvery, "Steps between checkpoints (rounded up to a search step)");
    app.add_option("--cpt-minutes", o.checkpointMinutes,
                   "Also write a checkpoint at the first search step after this many minutes of wall time since the "
                   "last one, as mdrun -cpt; 0: none")
        ->capture_default_str();
    app.add_option("--restart", o.restartFile,
                   "Continue the run stored in this checkpoint, and the outputs it recorded (trajectory, energy file, "
                   "log) unless others are named; its checkpoints go to --cpt, or back into this file");
    app.add_option("--deffnm", o.defaultName,
                   "Base name of every output not named on its own, as mdrun -deffnm: NAME.log, NAME.xvg (energies), "
                   "NAME.cpt (checkpoints), NAME.json, and NAME.gro with --traj-every");
    app.add_option("--write-gromacs", o.writeGromacsDir,
                   "Write conf.gro, topol.top and md.mdp for the same system into this directory");
    app.add_option("--json", o.jsonFile, "Write the run summary (performance, energies, settings) as JSON");
    app.add_flag("--quiet", o.quiet, "Print only the final summary");
    app.add_flag("--measure-buffer", o.measureBuffer,
                 "At every search step, recount exactly the pairs within rc that the previous pair list could not "
                 "hold, and report their energy per atom and ps (the pair-list buffer's error); with pruning also "
                 "those the pruned inner list dropped (positions of the oldest prune, --prune-parts steps back)");
}

bool wantGpu(const md::MdOptions& o) {
    const int gpus = md::visibleGpuCount();
    if (o.device == "gpu") {
        if (!HALOEX_HAVE_CUDA) {
            throwError(ErrorKind::InvalidInput, "--device gpu: this haloex was built without CUDA");
        }
        if (gpus == 0) throwError(ErrorKind::InvalidInput, "--device gpu: no GPU is visible to this process");
        return true;
    }
    if (o.device == "cpu") return false;
    if (o.device != "auto") {
        throwError(ErrorKind::InvalidInput, fmt::format("--device '{}': use auto, cpu or gpu", o.device));
    }
    return gpus > 0;
}

// --transport: a backend's name, auto or auto:rule; --auto-steps and
// --auto-cache only with auto (they would be ignored otherwise).
void requireTransportOptions(const md::MdOptions& o, bool autoOptionGiven) {
    const bool automatic = o.transport == "auto" || o.transport == "auto:rule";
    const std::optional<Backend> backend = backendFromString(o.transport);
    const auto known = knownBackends();
    if (!automatic && (!backend || std::find(known.begin(), known.end(), *backend) == known.end())) {
        std::string names;
        for (Backend b : known) names += fmt::format(", {}", toString(b));
        throwError(ErrorKind::InvalidInput,
                   fmt::format("--transport '{}': use auto (measured inside MD steps), auto:rule (the fixed rule){}",
                               o.transport, names));
    }
    if (autoOptionGiven && o.transport != "auto") {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("--auto-steps and --auto-cache set how --transport auto measures, but this run has "
                               "--transport {}: drop them, or use --transport auto",
                               o.transport));
    }
}

// One rank's compute: the GPU backend or the CPU reference.
std::unique_ptr<md::RankBackend> makeRankBackend(bool gpu, const md::MdOptions& o) {
    if (!gpu) return md::makeCpuBackend();
    md::GpuBackendOptions gpuOptions;
    gpuOptions.countApiSyncs = o.countApiSyncs;
    gpuOptions.timelineParts = o.timelineParts;
    return md::makeGpuBackend(gpuOptions);
}

// A trial counts no CUDA calls (its steps run as the run's will).
md::MdOptions withoutApiSyncCount(md::MdOptions o) {
    o.countApiSyncs = false;
    return o;
}

// --transport auto: a candidate's representative steps are this run's own
// MD steps on its transport (a trial engine: set-up and warm-up search not
// timed), so the exchange competes with the real force kernels.
struct MdTrial {
    std::unique_ptr<md::RankBackend> backend;
    md::Engine engine;
    MdTrial(const md::MdOptions& o, runtime::World& world, transport::BlockTransport& t, bool gpu)
        : backend(makeRankBackend(gpu, withoutApiSyncCount(o))), engine(o, world, t, *backend) {
        engine.startTrial();
    }
};

// What makes two runs alike for the measured choice: the system and the
// step's settings (selectBackend adds the world, memory and candidates).
// An input file by its contents (FNV-1a of its bytes and its size), so an
// edited file with the same name is measured again and a copy under another
// name is not; the path where it cannot be read (the run says why later).
// Regular files only: a device or a FIFO (refused later, when the run reads
// its input) is named by its path, never read here.
std::string fileFingerprint(const std::string& path) {
    std::error_code error;
    if (!std::filesystem::is_regular_file(path, error)) return path;
    const auto f = fingerprintOfFile(path);
    return f ? fmt::format("{:016x} ({} bytes)", f->hash, f->bytes) : path;
}

// byContents: the input file named by its contents (what a cache needs),
// else by its path.
std::string autoShapeKey(const md::MdOptions& o, bool byContents) {
    const auto input = [&](const std::string& path) { return byContents ? fileFingerprint(path) : path; };
    const std::string start = !o.restartFile.empty() ? "restart " + input(o.restartFile)
                              : !o.groFile.empty()   ? "gro " + input(o.groFile)
                                                     : fmt::format("lattice of {} atoms", o.atoms);
    return fmt::format("haloex-md {}, rc {} rlist {:.6g} nstlist {} prune {}/{:.6g}, grid {}, search {}, graphs {}, "
                       "nvshmem {}/{}",
                       start, o.rc, o.rlist, o.nstlist, o.pruneParts, o.rlistInner, o.grid, o.search,
                       o.cudaGraphs ? (o.cudaGraphsGiven ? "given" : "on") : "off", o.nvshmemPath, o.nvshmemLaunch);
}

// The run's transport, with the reason in o.transportReason (and for
// --transport auto the record of what was measured).
std::unique_ptr<transport::BlockTransport> makeTransportFor(md::MdOptions& o, runtime::World& world, bool gpu) {
    const std::string& name = o.transport;
    transport::TransportOptions options;
    options.memorySpace = gpu ? transport::MemorySpace::Device : transport::MemorySpace::Host;
    options.allowSharedGpus = o.allowSharedGpus;
    options.nvshmemPath = o.nvshmemPath;
    options.nvshmemLaunch = o.nvshmemLaunch;
    options.waitTimeoutSeconds = o.waitTimeoutSeconds;
    if (world.kind() == "threads") {
        if (name != "auto" && name != "auto:rule" && name != "reference") {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("--transport {}: virtual ranks in one process use the reference transport; "
                                   "launch with mpirun for {}",
                                   name, name));
        }
        options.memorySpace = transport::MemorySpace::Host;
    }
    if (name == "auto:rule") {
        o.transportReason = "auto:rule: " + autoRuleReason(world, *options.memorySpace);
        return makeTransport(Backend::Auto, world, options);
    }
    if (name != "auto") {
        o.transportReason =
            world.kind() == "threads" ? autoRuleReason(world, *options.memorySpace) : "set by --transport";
        return makeTransport(parseBackend(name), world, options);
    }
    AutoSelectOptions select;
    // The key names the input by its contents: read only where something may
    // be measured or cached (several ranks; one rank is decided by rule).
    select.shapeKey = autoShapeKey(o, /*byContents=*/world.size() > 1);
    select.transport = options;
    select.warmupSteps = md::kAutoWarmupSteps;
    select.stepsPerRepeat = o.autoSteps;
    select.repeats = md::kAutoRepeats;
    select.cacheFile = o.autoCacheFile;
    select.warn = [&world](const std::string& warning) {
        if (world.rank() == 0) fmt::print(stderr, "haloex-md: warning: {}\n", warning);
    };
    const md::MdOptions trialOptions = o;
    AutoSelection chosen =
        selectBackend(world, select, [&](transport::BlockTransport& t, Backend) -> RepresentativeSteps {
            auto trial = std::make_shared<MdTrial>(trialOptions, world, t, gpu);
            return [trial](int steps) { trial->engine.advanceTrial(steps); };
        });
    o.transportReason = "auto: " + chosen.record.reason;
    o.autoSelectionJson = chosen.record.toJson();
    if (chosen.record.source != AutoSource::Rule) {
        o.autoSelectionLines = chosen.record.describe();
        o.autoSelectionLines.erase(o.autoSelectionLines.begin());  // its reason is transportReason
        if (world.rank() == 0 && !o.quiet) {
            fmt::print("Transport {}: {}\n", toString(chosen.record.chosen), o.transportReason);
            for (const std::string& line : o.autoSelectionLines) fmt::print("{}\n", line);
            std::fflush(stdout);
        }
    }
    return std::move(chosen.transport);
}

// One rank's run and its options as the run resolved them (the transport's
// reason, what auto measured); rank 0 reports.
struct RankRun {
    md::RunSummary summary;
    md::MdOptions options;
};
RankRun runRank(const md::MdOptions& resolvedOptions, runtime::World& world, bool gpu) {
    md::MdOptions resolved = resolvedOptions;
    if (!gpu && resolved.countApiSyncs) {
        throwError(ErrorKind::InvalidInput,
                   "--count-api-syncs counts the CUDA calls of the GPU backend, but this run uses the CPU "
                   "reference (--device cpu, or no GPU): drop the option or run on a GPU");
    }
    // A bad output path stops the run before the transports are measured.
    md::runOnRoot(world, [&] {
        md::checkRunFiles(resolved);
        for (const std::string& stale : md::removeStaleRunTemporaries(resolved)) {
            if (!resolved.quiet) fmt::print("Removed {}: the temporary of a write a killed run left\n", stale);
        }
    });
    // One-time work before the engine's own start-up: the transport's
    // creation and, for --transport auto, the measurement of every candidate
    // inside MD steps. It counts as start-up (reported apart), never in Time.
    const auto transportBegin = std::chrono::steady_clock::now();
    auto transport = makeTransportFor(resolved, world, gpu);
    const double transportSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - transportBegin).count();
    resolved.deviceReason = resolved.device != "auto" ? "set by --device"
                            : gpu                     ? "auto: a GPU is visible"
                                                      : "auto: no GPU visible, the CPU reference";
    resolved.device = gpu ? "gpu" : "cpu";  // as resolved: the log and the JSON say which
    const std::unique_ptr<md::RankBackend> backend = makeRankBackend(gpu, resolved);
    md::Engine engine(resolved, world, *transport, *backend);
    md::RunSummary summary = engine.run();
    md::addStartupPart(summary, resolved.autoSelectionLines.empty() ? "transport" : "transport (auto measured)",
                       transportSeconds);
    return {std::move(summary), resolved};
}

// --ranks sets the virtual ranks of a CPU run without a launcher; elsewhere
// the rank count is the launcher's (or one GPU), and a different --ranks
// would be silently ignored.
void requireRanksOption(const md::MdOptions& o, int launchedRanks, bool launched) {
    if (o.virtualRanks == 0 || o.virtualRanks == launchedRanks) return;
    throwError(ErrorKind::InvalidInput,
               launched ? fmt::format("--ranks {}: the launcher started {} rank(s), and --ranks only sets the "
                                      "virtual ranks of a run without a launcher; drop --ranks, or launch {} "
                                      "(mpirun -np {})",
                                      o.virtualRanks, launchedRanks, o.virtualRanks, o.virtualRanks)
                        : fmt::format("--ranks {}: virtual ranks are threads of the CPU reference (--device cpu); "
                                      "on GPUs launch one process per GPU: mpirun -np {} haloex-md",
                                      o.virtualRanks, o.virtualRanks));
}

// Rank 0: the summary and JSON (none after a stop during start-up: nothing
// was run), and what stopped the run. Returns the exit status.
int report(const md::RunSummary& summary, const md::MdOptions& o) {
    const md::StopRecord& stop = summary.stop;
    if (stop.beforeStart) {
        fmt::print(stderr,
                   "haloex-md: stopped by {} during start-up, before step {}: nothing was run, and no checkpoint, "
                   "trajectory or JSON was written\n",
                   stop.reason, stop.step);
        return stop.exitStatus;
    }
    if (summary.singlePoint.evaluated) {
        // --steps 0: no performance to speak of; the evaluation instead.
        const auto& sp = summary.singlePoint;
        fmt::print("\nSingle-point evaluation of step {}: maximum force {:.6g} kJ/mol/nm on atom {} (global id), RMS "
                   "force {:.6g} kJ/mol/nm; energies above and in --json; nothing was advanced\n",
                   sp.step, sp.maxForce, sp.maxForceAtom, sp.rmsForce);
    } else {
        md::printPerformanceSummary(std::cout, summary, o);
    }
    if (!o.jsonFile.empty()) {
        md::writeSummaryJson(o.jsonFile, summary, o);
        fmt::print("Wrote {}\n", o.jsonFile);
    }
    if (stop.stopped()) {
        const std::string why =
            stop.reason == "maxh" ? fmt::format("--maxh {} (0.99 of it passed)", o.maxHours) : stop.reason;
        const std::string& file = o.checkpointFile.empty() ? o.stopCheckpointFile : o.checkpointFile;
        const std::string checkpoint =
            file.empty()
                ? std::string("no checkpoint was written (no --cpt)")
                : fmt::format("checkpoint {} written at step {}{}; continue with --restart {}", file, stop.step,
                              o.checkpointFile.empty() ? " (no --cpt: the default name)" : "", file);
        fmt::print("Stopped by {} at step {} ({}), after {} of {} steps; {}. Exit status {}.\n", why, stop.step,
                   stop.searchStep ? "a search step" : "a step between searches", summary.steps, summary.requestedSteps,
                   checkpoint, stop.exitStatus);
        std::fflush(stdout);
    }
    return stop.exitStatus;
}

// --until-step reached already: nothing to run, and a job chain ends (exit status 0).
int reportComplete(const md::MdOptions& resolved) {
    fmt::print("{}\n", md::alreadyCompleteNote(resolved));
    return 0;
}

// An exception's message for the user: std::bad_alloc alone says nothing
// of why (--atoms 1000000000 ended in just "std::bad_alloc").
std::string describe(const std::exception& e, const md::MdOptions& o) {
    if (dynamic_cast<const std::bad_alloc*>(&e) == nullptr) return e.what();
    const std::string system = !o.groFile.empty()       ? "the system of --gro " + o.groFile
                               : !o.restartFile.empty() ? "the system of --restart " + o.restartFile
                               : o.atoms > 0            ? fmt::format("a system of {} atoms (--atoms)", o.atoms)
                                                        : std::string("the system");
    return fmt::format("out of memory ({}): {} does not fit in this machine's memory (every rank, each virtual "
                       "rank too, builds the whole start configuration); give fewer atoms, fewer --ranks on the CPU, "
                       "or run on more nodes",
                       e.what(), system);
}

int run(const md::MdOptions& o, bool autoOptionGiven) {
    const bool gpu = wantGpu(o);
    // Under mpirun/srun: one rank per process (refused by a build without MPI).
    if (const std::unique_ptr<runtime::LaunchedWorld> launched = runtime::startLaunchedWorld()) {
        md::installStopSignalHandlers();  // after MPI's initialisation, which may install its own
        runtime::World& world = launched->world();
        int status = 0;
        try {
            requireRanksOption(o, world.size(), true);
            requireTransportOptions(o, autoOptionGiven);
        } catch (const haloex::Error& e) {  // every rank sees it: rank 0 says it, all end
            if (world.rank() == 0) fmt::print(stderr, "haloex-md: {} error: {}\n", toString(e.kind()), e.what());
            return 1;
        }
        try {
            if (gpu) md::selectGpuForRank(world, o.allowSharedGpus);
            const md::MdOptions resolved = md::resolveOptions(o, world.size(), gpu);
            if (resolved.alreadyComplete) {  // every rank resolved the same
                if (world.rank() == 0) fmt::print("{}\n", md::alreadyCompleteNote(resolved));
                return 0;
            }
            const RankRun mine = runRank(resolved, world, gpu);
            // Every rank agreed on the stop, so every rank exits with the
            // same status, once rank 0 has written the summary.
            if (world.rank() == 0) report(mine.summary, mine.options);
            status = mine.summary.stop.exitStatus;
            world.barrier();
        } catch (const std::exception& e) {
            // One rank's error: end the whole job so no rank waits forever.
            world.abort(describe(e, o));
        }
        return status;
    }
    requireTransportOptions(o, autoOptionGiven);
    md::installStopSignalHandlers();
    if (gpu) {
        requireRanksOption(o, 1, false);
        runtime::World& world = runtime::singleRankWorld();
        const md::MdOptions resolved = md::resolveOptions(o, 1, true);
        if (resolved.alreadyComplete) return reportComplete(resolved);
        const RankRun mine = runRank(resolved, world, true);
        return report(mine.summary, mine.options);
    }
    const int ranks = o.virtualRanks > 0 ? o.virtualRanks : 4;
    const md::MdOptions resolved = md::resolveOptions(o, ranks, false);
    if (resolved.alreadyComplete) return reportComplete(resolved);
    std::optional<RankRun> root;
    runtime::runInProcess(ranks, [&](runtime::World& world) {
        RankRun mine = runRank(resolved, world, false);
        if (world.rank() == 0) root = std::move(mine);
    });
    return report(root->summary, root->options);
}

}  // namespace

// What throws outside main's own try (CLI11's set-up, starting MPI) ends the
// program through std::terminate, with the exception's message: as intended.
// NOLINTNEXTLINE(bugprone-exception-escape)
int main(int argc, char** argv) {
    md::MdOptions options;
    options.defaultLogFile = "md.log";         // mdrun's default; the library's is none
    options.stopCheckpointFile = "state.cpt";  // mdrun's -cpo default; the library writes none without --cpt
    options.continueRecordedOutputs = true;    // mdrun -cpi's; the library's restarts write only what they are told
    CLI::App app{"haloex-md: molecular dynamics of a charged Lennard-Jones liquid (docs/md-engine.md) with a "
                 "domain-decomposed, GPU-initiated halo exchange.\n"
                 "Launch with mpirun/srun for one rank per GPU; without a launcher it uses one GPU, or the CPU "
                 "reference with --ranks virtual ranks when there is no GPU."};
    addOptions(app, options);
    app.set_version_flag(
        "--version", [] { return haloex::buildDescription("haloex-md"); },
        "Print the version and the build (commit, CUDA with its GPU architectures, MPI, NCCL, NVSHMEM, H5MD) and "
        "exit");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    }
    options.cudaGraphsGiven = app.count("--cuda-graphs") > 0;
    // A file option given an empty name ("--gro $UNSET") used to be taken
    // for "not given": --gro "" ran the lattice start without a word.
    for (const char* name : {"--gro", "--restart", "--cpt", "--traj", "--energy", "--json", "--write-gromacs",
                             "--auto-cache", "--log", "--deffnm"}) {
        if (app.count(name) > 0 && app.get_option(name)->as<std::string>().empty()) {
            fmt::print(stderr, "haloex-md: invalid input error: {} \"\": the file name is empty; give a file name{}\n",
                       name, std::string_view(name) == "--log" ? " (or none for no log)" : ", or leave the option out");
            return 1;
        }
    }
    for (int i = 0; i < argc; ++i) {
        const std::string arg = argv[i];
        const bool quote = arg.empty() || arg.find_first_of(" \t'\"") != std::string::npos;
        options.commandLine += (i > 0 ? " " : "") + (quote ? "'" + arg + "'" : arg);
    }
    // A restart adopts the checkpoint's settings except those given here.
    // And whether --steps was given (--steps 0 is a single-point evaluation, no --steps the default).
    for (const char* name : {"rc", "rlist", "nstlist", "dt", "seed", "temperature", "thermostat", "tau-t", "steps",
                             "traj-every", "thermo-every", "buffer-tolerance"}) {
        if (app.count(std::string("--") + name) > 0) options.explicitOptions.emplace_back(name);
    }
    try {
        return run(options, app.count("--auto-steps") + app.count("--auto-cache") > 0);
    } catch (const haloex::Error& e) {
        fmt::print(stderr, "haloex-md: {} error: {}\n", haloex::toString(e.kind()), e.what());
        return 1;
    } catch (const std::exception& e) {
        fmt::print(stderr, "haloex-md: error: {}\n", describe(e, options));
        return 1;
    }
}
