#include "haloex/md/option_ranges.hpp"

#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <string>

#include "haloex/core/error.hpp"
#include "haloex/detail/core/wait_limit.hpp"
#include "haloex/md/system.hpp"

namespace haloex::md {
namespace {

[[noreturn]] void outOfRange(const char* option, const std::string& value, const std::string& accepted) {
    throwError(ErrorKind::InvalidInput, fmt::format("{} {}: out of range; use {}", option, value, accepted));
}

void requireCount(const char* option, std::int64_t value, std::int64_t low, std::int64_t high,
                  const std::string& accepted) {
    if (value < low || value > high) outOfRange(option, std::to_string(value), accepted);
}

// A finite value with low < value (or low <= value when `closed`) and value <= high.
void requireReal(const char* option, double value, double low, bool closed, double high, const std::string& accepted) {
    const bool above = closed ? value >= low : value > low;
    if (!std::isfinite(value) || !above || value > high) outOfRange(option, fmt::format("{}", value), accepted);
}

}  // namespace

void requireOptionRanges(const MdOptions& o) {
    constexpr double kHuge = std::numeric_limits<double>::max();
    const std::string steps = fmt::format("0 to {} steps", kMaxStepCount);
    constexpr int kMaxLatticeAtoms = std::numeric_limits<int>::max() - 1;
    requireCount("--atoms", o.atoms, 0, kMaxLatticeAtoms,
                 fmt::format("0 (automatic) or an even number of atoms from {} to {}", kMinAtoms, kMaxLatticeAtoms));
    requireCount("--steps", o.steps, kStepsUntilStopped, kMaxStepCount,
                 fmt::format("-1 (until stopped by a signal or --maxh), 0 (a single-point evaluation of the first "
                             "step) or a number of steps up to {}; without --steps: {} on GPUs, {} on the CPU",
                             kMaxStepCount, kDefaultStepsGpu, kDefaultStepsCpu));
    requireReal("--dt", o.dt, 0.0, false, kHuge, "a time step in ps above 0, e.g. 0.002");
    requireReal("--rc", o.rc, 0.0, false, kHuge, "a cutoff in nm above 0, e.g. 0.9");
    requireReal("--rlist", o.rlist, 0.0, true, kHuge, "0 (automatic) or a pair-list radius in nm of at least --rc");
    requireCount("--nstlist", o.nstlist, 0, std::numeric_limits<int>::max(),
                 "0 (automatic: 50) or a positive number of steps");
    requireReal("--buffer-tolerance", o.bufferTolerance, 0.0, false, kHuge,
                "a drift in kJ/mol/ps per atom above 0, e.g. 0.005");
    requireReal("--rlist-inner", o.rlistInner, 0.0, true, kHuge,
                "0 (automatic) or a radius in nm between --rc and the pair-list radius");
    requireReal("--temperature", o.temperature, 0.0, false, 1e9, "a temperature in K above 0, e.g. 300");
    requireReal("--tau-t", o.tauT, 0.0, false, kHuge, "a coupling time in ps above 0, e.g. 0.1");
    requireReal("--min-distance", o.minDistance, 0.0, true, kHuge,
                fmt::format("a distance in nm of at least 0 (0: no check; default {})", kDefaultMinDistance));
    requireCount("--ranks", o.virtualRanks, 0, kMaxVirtualRanks,
                 fmt::format("0 (automatic: 4) or 1 to {} virtual ranks", kMaxVirtualRanks));
    requireReal("--maxh", o.maxHours, 0.0, true, kHuge, "0 (no limit) or a wall-clock limit in hours above 0");
    requireReal("--wait-timeout", o.waitTimeoutSeconds, 0.0, true, kMaxWaitSeconds,
                fmt::format("0 (default) or a number of seconds up to {:g}", kMaxWaitSeconds));
    requireCount("--thermo-every", o.thermoEvery, 0, kMaxStepCount, "0 (automatic: steps/10) or " + steps);
    requireCount("--steps-per-graph", o.stepsPerGraph, 0, kMaxStepsPerGraph,
                 fmt::format("0 (automatic: {} on the GPU with CUDA graphs, else 1), 1 (a graph per step) to {} "
                             "steps per CUDA graph",
                             kAutoStepsPerGraph, kMaxStepsPerGraph));
    requireReal("--drift-from", o.driftFromPs, 0.0, true, kHuge,
                "0 (the whole run) or the time in ps from which the conserved-energy drift is fitted, e.g. 4");
    requireCount("--traj-every", o.trajEvery, 0, kMaxStepCount, "0 (automatic: --thermo-every) or " + steps);
    requireCount("--cpt-every", o.checkpointEvery, 0, kMaxStepCount, "0 (only at the end) or " + steps);
    requireReal("--cpt-minutes", o.checkpointMinutes, 0.0, true, kHuge,
                "0 (none) or the minutes of wall time between checkpoints, above 0, e.g. 15");
    if (o.untilStep != kNoUntilStep) {
        requireCount("--until-step", o.untilStep, 1, kMaxStepCount,
                     fmt::format("the run's last step, from 1 to {}", kMaxStepCount));
    }
    requireCount("--auto-steps", o.autoSteps, 1, kMaxAutoSteps,
                 fmt::format("1 to {} timed MD steps per repeat (default {})", kMaxAutoSteps, kDefaultAutoSteps));
}

}  // namespace haloex::md
