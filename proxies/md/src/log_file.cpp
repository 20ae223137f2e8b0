#include "haloex/md/log_file.hpp"

#include <unistd.h>

#include <array>
#include <chrono>
#include <ctime>
#include <fmt/format.h>
#include <sstream>

#include "haloex/build_info.hpp"
#include "haloex/core/error.hpp"
#include "haloex/md/energy_file.hpp"
#include "haloex/md/report.hpp"
#include "haloex/md/verlet_buffer.hpp"

namespace haloex::md {

bool logEnabled(const MdOptions& o) { return !o.logFile.empty() && o.logFile != "none"; }

namespace {

std::string now() {
    const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm tm{};
    gmtime_r(&t, &tm);
    char text[32];
    std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S UTC", &tm);
    return text;
}

std::string hostName() {
    char name[256] = {};
    return ::gethostname(name, sizeof(name) - 1) == 0 ? std::string(name) : std::string("unknown");
}

std::string orNone(const std::string& s) { return s.empty() ? "(none)" : s; }

}  // namespace

std::string logHeader(const MdOptions& o, const LogContext& c) {
    std::string h = fmt::format("{}\n", std::string(78, '='));
    h += buildDescription("haloex-md") + "\n";
    h += fmt::format("Started {} on {}: {} rank(s), {}, transport {}\n", now(), hostName(), c.ranks, c.backend,
                     c.transport);
    h += fmt::format("{} at step {}\n", c.restarted ? "Restarted from " + o.restartFile : "New run", c.firstStep);
    if (!o.commandLine.empty()) h += "Command line: " + o.commandLine + "\n";
    h += "Settings (resolved):\n";
    const auto row = [&](const char* name, const std::string& value) {
        h += fmt::format("   {:<18} {}\n", name, value);
    };
    row("atoms", std::to_string(c.atoms));
    row("steps", o.untilStep == kNoUntilStep ? std::to_string(o.steps)
                                             : fmt::format("{} (to step {}, --until-step)", o.steps, o.untilStep));
    row("dt", fmt::format("{} ps", o.dt));
    row("temperature", fmt::format("{} K", o.temperature));
    row("thermostat", o.thermostat == "none" ? "none" : fmt::format("{}, tau-t {} ps", o.thermostat, o.tauT));
    row("seed", std::to_string(o.seed));
    row("rc", fmt::format("{} nm", o.rc));
    row("nstlist", fmt::format("{} ({})", o.nstlist, o.nstlistReason.empty() ? "set" : o.nstlistReason));
    const bool held = o.rlistTolerance > 0.0 && o.rlistTolerance < o.bufferTolerance;
    row("rlist", fmt::format("{:.4g} nm (buffer tolerance {} kJ/mol/ps per atom{})", o.rlist, o.bufferTolerance,
                             held ? fmt::format(", held to {:g} for a list living under {:g} ps", o.rlistTolerance,
                                                kShortListLifePs)
                                  : std::string()));
    row("pruning", o.pruneParts > 0 ? fmt::format("{} parts, inner radius {:.4g} nm", o.pruneParts, o.rlistInner)
                                    : std::string("off"));
    const auto because = [](const std::string& value, const std::string& why) {
        return why.empty() ? value : fmt::format("{} ({})", value, why);
    };
    row("device", because(o.device, o.deviceReason));
    row("transport", because(c.transport, o.transportReason));
    for (const std::string& line : o.autoSelectionLines) row("", line);
    row("grid", because(c.grid.empty() ? o.grid : c.grid,
                        o.grid == "auto" ? "auto: the planner's grid with the smallest halo for these ranks"
                                         : "set by --grid"));
    row("search", because(c.search.empty() ? o.search : c.search,
                          o.search == "auto" ? "auto: on the device when the backend and transport allow it"
                                             : "set by --search"));
    if (c.transport == "nvshmem") row("nvshmem", fmt::format("path {}, launch {}", o.nvshmemPath, o.nvshmemLaunch));
    if (o.device != "cpu") {
        row("cuda-graphs", cudaGraphsFor(o, c.transport) ? "on"
                           : o.cudaGraphs                ? "off (nccl: only with --cuda-graphs 1)"
                                                         : "off");
        if (o.stepsPerGraph > 1) row("steps-per-graph", std::to_string(o.stepsPerGraph));
    }
    if (o.device != "cpu") {
        const StepKernelChoice& k = c.stepKernels;
        row("fuse-update", describeStepKernel(k.fuseUpdate, k.fuseUpdateReason));
        row("sort-atoms", describeStepKernel(k.sortAtoms, k.sortAtomsReason));
    }
    row("thermo-every", std::to_string(o.thermoEvery));
    if (o.driftFromPs > 0) row("drift-from", fmt::format("{} ps", o.driftFromPs));
    row("input", o.groFile.empty() ? (o.restartFile.empty() ? "lattice start" : o.restartFile) : o.groFile);
    row("trajectory", o.trajFile.empty() ? "(none)" : fmt::format("{} every {} steps", o.trajFile, o.trajEvery));
    row("energy", orNone(o.energyFile));
    const std::string every = o.checkpointEvery > 0 ? fmt::format(" every {} steps", o.checkpointEvery) : "";
    const std::string minutes =
        o.checkpointMinutes > 0 ? fmt::format("{} every {:g} minutes", every.empty() ? "" : " and", o.checkpointMinutes)
                                : std::string();
    row("checkpoint", !o.checkpointFile.empty()
                          ? fmt::format("{}{}{}, at a stop and at the end", o.checkpointFile, every, minutes)
                      : o.stopCheckpointFile.empty() ? std::string("(none)")
                                                     : fmt::format("(none; {} at a stop)", o.stopCheckpointFile));
    for (const std::string& continued : o.continuedOutputs) row("continued", continued + " (from the checkpoint)");
    row("json", orNone(o.jsonFile));
    if (o.maxHours > 0) row("maxh", fmt::format("{} h", o.maxHours));
    for (const std::string& a : o.adjustments) row("adjusted", a);
    h += fmt::format("{}\n", std::string(78, '='));
    return h;
}

namespace {

// The terms as mdrun's log prints them: names over values, five to a line.
std::string termTable(const std::array<double, std::size(kEnergyTerms)>& values) {
    std::string table, names, numbers;
    for (std::size_t k = 0; k < values.size(); ++k) {
        names += fmt::format("{:>15}", k + 1 == values.size() ? "Pressure (bar)" : kEnergyTerms[k]);
        numbers += fmt::format("{:>15.6e}", values[k]);
        if (k % 5 == 4 || k + 1 == values.size()) {
            table += fmt::format("{}\n{}\n", names, numbers);
            names.clear();
            numbers.clear();
        }
    }
    return table;
}

}  // namespace

std::string logEnergyBlock(const EnergySample& e) {
    return fmt::format("           Step           Time\n{:>15}{:>15.5f}\n\n   Energies (kJ/mol)\n{}\n", e.step, e.time,
                       termTable(energyTerms(e)));
}

std::string logEnd(const RunSummary& s, const MdOptions& o) {
    std::string t =
        "\n   <======  ###############  ==>\n   <====  A V E R A G E S  ====>\n   <==  ###############  ======>\n\n";
    if (!s.energies.empty()) {
        std::array<double, std::size(kEnergyTerms)> mean{};
        for (const EnergySample& e : s.energies) {
            const auto terms = energyTerms(e);
            for (std::size_t k = 0; k < mean.size(); ++k) mean[k] += terms[k];
        }
        for (double& m : mean) m /= static_cast<double>(s.energies.size());
        t += fmt::format("   Averages over {} energy steps ({} to {})\n", s.energies.size(), s.energies.front().step,
                         s.energies.back().step);
        t += termTable(mean);
        if (s.driftSamples >= 3) {
            t += fmt::format("\n   Conserved-energy drift: {:.3g} kJ/mol/ps per atom (over {} energy steps{}{})\n",
                             s.conservedDrift, s.driftSamples,
                             o.driftFromPs > 0 ? fmt::format(" from {:g} ps on", o.driftFromPs) : "",
                             driftSpanNote(s.driftSpanPs));
        }
    }
    if (!s.rankSpread.empty()) {
        t += fmt::format("\n   Per-rank wall time ({} rank(s)): minimum, average, maximum and the load imbalance "
                         "(maximum / average - 1)\n",
                         s.ranks);
        t += fmt::format("   {:<34}{:>12}{:>12}{:>12}{:>12}\n", "part", "min", "avg", "max", "imbalance");
        for (const RankSpread& r : s.rankSpread) {
            t += fmt::format("   {:<34}{:>12.4g}{:>12.4g}{:>12.4g}{:>11.1f}%\n", r.name, r.min, r.avg, r.max,
                             r.avg > 0 ? 100.0 * (r.max / r.avg - 1.0) : 0.0);
        }
    }
    std::ostringstream performance;
    printPerformanceSummary(performance, s, o);
    // Appended in two steps: GCC 12 warns falsely (-Wrestrict) on "\n" + std::string&&.
    t += '\n';
    t += performance.str();
    t += fmt::format("Finished {}{}\n", now(),
                     s.stop.reason.empty() ? "" : fmt::format(" (stopped: {})", s.stop.reason));
    return t;
}

}  // namespace haloex::md
