#pragma once
// Everything a haloex-md run can be told. Defaults are the proxy system of
// docs/md-engine.md#the-system-and-its-defaults; "auto" values are resolved by resolveOptions() and reported.
#include <cstdint>
#include <string>
#include <vector>

namespace haloex::md {

// Rolling-prune parts (= steps an inner list lives) when pruning is on by
// default (GPU). Each step the force kernel evaluates one part from the outer
// list and prunes it with the distances it computes anyway (nonbonded.cu), so
// a step costs the inner list plus 1/parts of the extra outer pairs, while
// the inner radius grows with the life: at the full default tolerance
// chooseRlistInner gives rc for 4 steps, rc + 0.005 nm for 8, + 0.015 for 16
// (the default takes a twentieth of it, kPruneToleranceFraction: rc + 0.02
// nm for 8).
// Measured on one H200 (single runs, docs/md-engine.md): us/step against no
// pruning -0.7 / -2.1 / -3.7 % with 4 parts, -2.0 / -5.6 / -7.0 % with 8,
// -3.0 / -6.6 / -7.6 % with 16, at 22 500 / 180 000 / 720 000 atoms. 8 takes
// nearly all of the gain with the smaller inner buffer, and lies in GROMACS's
// range of GPU prune intervals (4-10); --prune-parts changes it.
inline constexpr int kDefaultPruneParts = 8;

// An option the run may decide: auto (step_kernels.hpp says how), 0 or 1.
enum class Toggle { Auto, Off, On };

// Limits of the numeric options (resolveOptions refuses values outside them,
// naming the option and the range). Step counts are 64-bit; 10^15 steps keep
// step * dt exact in a double and every step sum far from overflowing.
inline constexpr std::int64_t kMaxStepCount = 1'000'000'000'000'000;
inline constexpr std::int64_t kStepsUntilStopped = -1;
inline constexpr std::int64_t kNoUntilStep = -1;
inline constexpr std::int64_t kDefaultStepsGpu = 2000;
inline constexpr std::int64_t kDefaultStepsCpu = 200;
// Energy lines of a run until stopped, when --thermo-every is not given.
inline constexpr std::int64_t kDefaultThermoEveryUntilStopped = 1000;
inline constexpr int kMaxVirtualRanks = 1024;
// --steps-per-graph: a graph of more steps gains nothing more and costs its capture after every search.
inline constexpr int kMaxStepsPerGraph = 64;
// --steps-per-graph 0's choice on the GPU with graphs: two ranks under MPS
// 50.16 -> 48.06 us per step, four 87.52 -> 82.18, one 29.67 -> 28.13
// (H100, bench/results/md-ab-steps-per-graph-1xH100-2026-12-06.txt); one
// H200 rank without MPS unchanged (md-steps-per-graph-1xH200-2026-12-05.txt).
inline constexpr int kAutoStepsPerGraph = 4;
// Closest two atoms of a start configuration may be (nm): nearer ones have
// forces that blow the system up at the first step (LJ sigma is 0.2 nm; the
// lattice start keeps neighbours more than 0.2 nm apart). --min-distance
// changes it, 0 turns the check off.
inline constexpr double kDefaultMinDistance = 0.05;
// --transport auto measures each candidate transport in kAutoRepeats timed
// repeats of --auto-steps MD steps (default kDefaultAutoSteps, at most
// kMaxAutoSteps) after kAutoWarmupSteps untimed ones; the median counts.
inline constexpr int kDefaultAutoSteps = 20;
inline constexpr int kMaxAutoSteps = 100'000;
inline constexpr int kAutoWarmupSteps = 10;
inline constexpr int kAutoRepeats = 3;

struct MdOptions {
    // System
    std::int64_t atoms = 0;  // 0: auto (22 500 per GPU rank; 3 000 on the CPU)
    std::string groFile;     // start from a .gro instead of the lattice recipe
    // Start configurations with two atoms nearer than this (nm) are refused
    // before step 0; 0: no check.
    double minDistance = kDefaultMinDistance;
    std::uint64_t seed = 2026;
    double temperature = 300.0;  // K: initial velocities and thermostat reference
    // Draw Maxwell-Boltzmann velocities at `temperature` for a --gro start
    // even when the file has velocities (without them, they are always drawn).
    bool generateVelocities = false;

    // Integration and interactions
    // mdrun's conventions: N > 0 steps; 0 given (explicitOptions holds
    // "steps"): a single-point evaluation of the first step (energies and
    // forces, nothing advanced); kStepsUntilStopped (-1): until a signal or
    // --maxh stops the run; not given: kDefaultStepsGpu / kDefaultStepsCpu.
    // At most kMaxStepCount.
    std::int64_t steps = 0;
    // --until-step N: the whole run's last step (absolute, across restarts, as
    // mdrun's nsteps or LAMMPS's run N upto): resolveOptions sets `steps` to N
    // minus the start's step; a start at N sets `alreadyComplete` (haloex-md
    // then says so and exits 0). kNoUntilStep: not given.
    std::int64_t untilStep = kNoUntilStep;
    bool alreadyComplete = false;
    double dt = 0.002;            // ps
    double rc = 0.9;              // nm
    double rlist = 0.0;           // nm; 0: from the Verlet-buffer estimate for nstlist
    double rlistTolerance = 0.0;  // resolved: the estimated drift an automatic rlist was chosen for (0: given)
    int nstlist = 0;              // steps between searches; 0: auto (nstlist_choice.hpp)
    std::string nstlistReason;    // filled by resolveOptions: why this nstlist
    // Filled by resolveOptions: each value given that it changed, with the new
    // value and why ("--cpt-every 30 rounded up to 50, ...").
    std::vector<std::string> adjustments;
    double bufferTolerance = 0.005;  // kJ/mol/ps per atom, for the rlist estimate
    // Dynamic ("rolling") pruning of the GPU pair list, GROMACS's dual list:
    // every step re-prunes 1/pruneParts of the list's entries to rlistInner,
    // so each entry's inner list lives pruneParts steps. -1: auto (8 on the
    // GPU, see kDefaultPruneParts; off on the CPU backend, which computes
    // exact rc pairs every step); 0: off.
    int pruneParts = -1;
    double rlistInner = 0.0;  // nm; 0: the Verlet-buffer estimate for pruneParts steps (kPruneToleranceFraction)
    std::string thermostat = "none";  // none | v-rescale
    double tauT = 0.1;                // ps

    // Parallel set-up
    std::string grid = "auto";    // NXxNYxNZ or auto
    int virtualRanks = 0;         // CPU: ranks as threads of one process; 0: auto (4), at most kMaxVirtualRanks
    std::string device = "auto";  // auto | cpu | gpu
    // auto (measured inside MD steps: halo/auto_select.hpp) | auto:rule (resolveAuto's fixed rule) |
    // reference | staged | ipc | nccl | nvshmem
    std::string transport = "auto";
    // --transport auto: timed MD steps per repeat when measuring each
    // candidate (kAutoRepeats repeats after kAutoWarmupSteps), and the file
    // that keeps the choice across runs (empty: this run only).
    int autoSteps = kDefaultAutoSteps;
    std::string autoCacheFile;
    std::string nvshmemPath = "auto";     // auto | direct | tma | put
    std::string nvshmemLaunch = "fused";  // fused | per-pulse (the ablation, docs/nvshmem.md)
    bool allowSharedGpus = false;
    bool cudaGraphs = true;
    // GPU, with CUDA graphs: normal steps launched as graphs of this many
    // steps (1: a graph per step). A chunk of normal steps between searches
    // and energy steps takes as many such graphs as fit; the rest one by one.
    // 0 (automatic): kAutoStepsPerGraph on the GPU with graphs, else 1.
    int stepsPerGraph = 0;
    // GPU, one rank: the force scatter, the leapfrog and the next step's
    // gather in one kernel (Nonbonded::updateLocal); results are the same
    // bit for bit. GPU, device search: the home atoms put in the pair
    // search's cell order at every search (gpu::CellOrder), so the
    // permutations between atom and cluster order read and write in runs;
    // results agree within float rounding. Auto: decided at set-up where
    // measured faster (chooseStepKernels; RunSummary::stepKernels holds the
    // choice and why).
    Toggle fuseUpdate = Toggle::Auto;
    Toggle sortAtoms = Toggle::Auto;
    // --cuda-graphs given on the command line: nccl captures only then (its
    // capture is not yet verified on hardware: cudaGraphsFor).
    bool cudaGraphsGiven = false;
    // GPU: count, with CUPTI, the host-blocking CUDA calls made inside the
    // normal steps (every library's, not only haloex's own counters).
    bool countApiSyncs = false;
    bool timelineParts = false;  // --timeline-parts (GPU): the step's finer device timeline
    // Where search steps run: device (the atoms stay on the GPU: migration,
    // plan, static data and pair lists there), host (the oracle path: atoms
    // downloaded, repartitioned and planned on the CPU), or auto (device
    // when the backend and transport allow it).
    std::string search = "auto";
    double waitTimeoutSeconds = 0.0;  // device-side waits; 0: default
    // --maxh: stop cleanly at the first search step after 0.99 x this many
    // hours of wall-clock time from the start of the run (as mdrun -maxh); 0: no limit.
    double maxHours = 0.0;

    // Output
    std::int64_t thermoEvery = 0;  // 0: auto (steps/10, at least 1)
    // --drift-from: the conserved-energy drift is fitted over the energy steps
    // from this time on (ps; as gmx energy -b), e.g. after a lattice start has
    // relaxed; 0: over all of them, as mdrun reports it.
    double driftFromPs = 0.0;
    std::string trajFile;
    std::string energyFile;  // --energy: the energy series as .xvg (a row every thermo-every steps)
    std::string logFile;     // --log (log_file.hpp); empty or "none": no log
    // The log when neither --log nor --deffnm names one and no restart
    // continues a recorded one (haloex-md: md.log; the library's: none).
    std::string defaultLogFile;
    // --deffnm NAME: the base name of every output not named on its own
    // (output_names.hpp): NAME.log, NAME.xvg, NAME.cpt, NAME.json, and NAME.gro
    // when --traj-every is given.
    std::string defaultName;
    std::string commandLine;  // as typed, for the log's header
    // Why the application chose the device and transport it did (the log's header).
    std::string deviceReason, transportReason;
    // When --transport auto measured (or took a measured choice from its
    // cache): the record's lines after its first (AutoRecord::describe: every
    // candidate's figure, the skipped ones, warnings; the first line's reason
    // is transportReason) for the summary and the log, and the record as JSON
    // (AutoRecord::toJson) for the report's auto_selection. Empty otherwise.
    std::vector<std::string> autoSelectionLines;
    std::string autoSelectionJson;
    std::int64_t trajEvery = 0;
    std::string checkpointFile;
    std::int64_t checkpointEvery = 0;
    // --cpt-minutes: a checkpoint at the first search step after this many
    // minutes of wall time since the last one (as mdrun -cpt); 0: none.
    double checkpointMinutes = 0.0;
    // Where a stop (signal, --maxh) writes its checkpoint when there is no
    // --cpt (haloex-md: state.cpt, as mdrun's -cpo; the library's: none, and a
    // stop without --cpt writes no checkpoint).
    std::string stopCheckpointFile;
    std::string restartFile;
    // Whether a restart continues the outputs its checkpoint recorded that no
    // name was given for, and writes its checkpoints into the --restart file
    // without --cpt (output_names.hpp): haloex-md's default, as mdrun -cpi;
    // the library's restarts write only what they are told.
    bool continueRecordedOutputs = false;
    // The outputs a --restart continues because the checkpoint recorded them
    // and no other name was given ("--traj traj.gro"; output_names.hpp).
    std::vector<std::string> continuedOutputs;
    // Options the user set explicitly, by name without dashes ("dt", "rc"):
    // with --restart, a given rc/rlist/nstlist/dt that differs from the
    // checkpoint's is refused, and settings not given are adopted from it.
    // (Values other than the defaults count as given too.)
    std::vector<std::string> explicitOptions;
    std::string writeGromacsDir;
    std::string jsonFile;
    bool quiet = false;
    // Recount, at every search step, the pairs within rc that the previous
    // list could not hold (beyond rlist when it was built): the buffer's error.
    bool measureBuffer = false;
};

// Whether steps are captured in CUDA graphs with `transport` (where the
// transport allows it): --cuda-graphs, except that nccl captures only when
// --cuda-graphs 1 is given (NCCL's capture with the in-place graph updates of
// the search steps has not run on two GPUs yet; docs/transports.md).
inline bool cudaGraphsFor(const MdOptions& o, const std::string& transport) {
    return o.cudaGraphs && (o.cudaGraphsGiven || transport != "nccl");
}

}  // namespace haloex::md
