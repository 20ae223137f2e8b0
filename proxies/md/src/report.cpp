#include "haloex/md/report.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <ostream>

#include "haloex/build_info.hpp"
#include "haloex/core/error.hpp"
#include "haloex/detail/core/safe_file.hpp"
#include "haloex/md/distribution.hpp"

namespace haloex::md {
namespace {

Distribution describe(const std::vector<double>& v) { return describeSamples(v); }

nlohmann::json toJson(const Distribution& d) {
    return {{"mean", d.mean}, {"median", d.median}, {"p10", d.p10}, {"p90", d.p90}, {"min", d.min}, {"max", d.max}};
}

// "2 kernel, 1 memset": the normal step graph's nodes by type.
std::string graphNodeList(const RunSummary& s) {
    std::string out;
    for (const auto& [type, n] : s.stepGraphNodes) out += fmt::format("{}{} {}", out.empty() ? "" : ", ", n, type);
    return out;
}

}  // namespace

void printPerformanceSummary(std::ostream& out, const RunSummary& s, const MdOptions& o) {
    fmt::print(out, "\nRun: {} atoms, {} rank(s) on grid {}, transport {}, compute {}, search on the {}\n", s.atoms,
               s.ranks, s.grid, s.transport, s.backend, s.search);
    fmt::print(out,
               "     rc {:.4g} nm, rlist {:.4g} nm, nstlist {} (estimated buffer drift {:.2g} kJ/mol/ps per atom), "
               "dt {:.4g} ps\n",
               s.rc, s.rlist, s.nstlist, s.estimatedBufferDrift, s.dt);
    if (!o.nstlistReason.empty()) fmt::print(out, "     nstlist: {}\n", o.nstlistReason);
    for (const auto& adjusted : o.adjustments) fmt::print(out, "     adjusted: {}\n", adjusted);
    if (s.onDevice) {
        const StepKernelChoice& k = s.stepKernels;
        fmt::print(out, "     step: fused update {}, atoms in cell order {}\n",
                   describeStepKernel(k.fuseUpdate, k.fuseUpdateReason),
                   describeStepKernel(k.sortAtoms, k.sortAtomsReason));
    }
    if (s.pruneParts > 0) {
        fmt::print(out,
                   "     dynamic pruning: inner list rlist-inner {:.4g} nm, each part re-pruned every {} steps "
                   "(rolling, 1/{} of the list per step; estimated drift {:.2g} kJ/mol/ps per atom)\n",
                   s.rlistInner, s.pruneParts, s.pruneParts, s.estimatedPruneDrift);
    } else if (s.onDevice) {  // a GPU-backend feature: nothing to say on the CPU
        fmt::print(out, "     dynamic pruning: off\n");
    }
    for (const auto& note : s.transportNotes) fmt::print(out, "     {}\n", note);
    for (const auto& note : s.exchangeNotes) fmt::print(out, "     exchange: {}\n", note);
    if (!o.autoSelectionLines.empty()) {
        fmt::print(out, "     transport {}: {}\n", s.transport, o.transportReason);
        for (const auto& line : o.autoSelectionLines) fmt::print(out, "     {}\n", line);
    }
    if (!s.bufferSamples.empty()) {
        fmt::print(out,
                   "     buffer check ({} lists recounted): missed pairs cost {:.2g} kJ/mol/ps per atom "
                   "({:.2g} without cancellation; estimate {:.2g}, tolerance {})\n",
                   s.bufferSamples.size(), s.measuredBufferDrift, s.measuredBufferDriftAbsolute, s.estimatedBufferDrift,
                   o.bufferTolerance);
        if (s.pruneParts > 0) {
            fmt::print(out,
                       "     pairs the pruned inner list dropped (per atom pair, oldest part: an upper bound) "
                       "cost another {:.2g} kJ/mol/ps per atom ({:.2g} without cancellation; estimate {:.2g}); "
                       "together {:.2g}\n",
                       s.measuredPruneDrift, s.measuredPruneDriftAbsolute, s.estimatedPruneDrift,
                       s.measuredBufferDrift + s.measuredPruneDrift);
        }
    }
    // GROMACS's layout: every step counts in "Time" and "Performance";
    // start-up is apart, the steady state is named as such.
    fmt::print(out, "\n               Wall t (s)    steps\n");
    fmt::print(out, "       Time: {:12.3f} {:8}   (every step, the {} search steps included)\n", s.totalSeconds,
               s.steps, s.searchSteps);
    fmt::print(out, "   Start-up: {:12.3f}            (not in Time: transport, input, decomposition, {})\n",
               s.startupSeconds,
               s.onDevice ? "library initialisation, first allocations and graphs" : "first allocations");
    const auto hoursPerNs = [](double nsPerDay) { return nsPerDay > 0 ? 24.0 / nsPerDay : 0.0; };
    fmt::print(out, "                 (ns/day)    (hour/ns)\n");
    fmt::print(out, "Performance: {:12.3f} {:12.3f}   {:.2f} us/step, all steps\n", s.nsPerDay, hoursPerNs(s.nsPerDay),
               s.usPerStep);
    fmt::print(out, "Steady state:{:12.3f} {:12.3f}   {:.2f} us/step, the {} steps without search\n", s.nsPerDaySteady,
               hoursPerNs(s.nsPerDaySteady), s.usPerStepSteady, s.normalSteps);
    if (s.onDevice) {  // the CPU reference has neither
        fmt::print(out, "             host synchronisations per step: {:.2f}; CUDA graphs: {}{}\n", s.hostSyncsPerStep,
                   s.graphs ? "yes" : "no",
                   s.stepGraphNodes.empty() ? "" : " (a normal step: " + graphNodeList(s) + ")");
        if (s.stepsInMultiStepGraphs > 0) {
            fmt::print(out, "             normal steps in graphs of several steps (--steps-per-graph): {} of {}\n",
                       s.stepsInMultiStepGraphs, s.normalSteps);
        }
    }
    if (s.apiSyncsCounted) {
        std::string names;
        for (const auto& [name, n] : s.apiSyncsByFunction) {
            names += fmt::format("{}{} {}", names.empty() ? "" : ", ", name, n);
        }
        fmt::print(out,
                   "             host-blocking CUDA calls in the {} steps without search (CUPTI, any rank): {}{}\n",
                   s.normalSteps, s.apiSyncsInNormalSteps, names.empty() ? "" : " (rank 0: " + names + ")");
    }
    const std::string driftWindow =
        o.driftFromPs > 0 ? fmt::format(" from {:g} ps on (--drift-from)", o.driftFromPs) : "";
    if (s.driftSamples >= 3) {
        fmt::print(out, "Conserved-energy drift: {:.3g} kJ/mol/ps per atom (least squares over {} energy steps{}{})\n",
                   s.conservedDrift, s.driftSamples, driftWindow, driftSpanNote(s.driftSpanPs));
    } else if (s.energies.size() >= 3) {
        fmt::print(out, "Conserved-energy drift: not fitted: {} energy step{}{}, at least 3 needed\n", s.driftSamples,
                   s.driftSamples == 1 ? "" : "s", driftWindow);
    }
    // In the order a search step runs them, in ms to the microsecond.
    const auto joined = [](const auto& ordered, double divisor) {
        std::string text;
        for (const auto& [name, ms] : ordered) text += fmt::format(" {} {:.3f},", name, ms / divisor);
        if (!text.empty()) text.pop_back();
        return text;
    };
    const auto parts = [&](const std::map<std::string, double>& phases, double divisor) {
        return joined(inStepOrder(phases), divisor);
    };
    if (s.searchSteps > 0) {
        fmt::print(out, "Search step: {:.3g} ms (rank 0, mean of {}:{})\n", s.searchStepMs, s.searchSteps,
                   parts(s.searchPhasesMs, static_cast<double>(s.searchSteps)));
    }
    // The phases' own parts, where a phase has several (one rank's migrate
    // and plan have one each).
    for (const auto& phaseTotal : inStepOrder(s.searchPhasesMs)) {
        const auto it = s.searchPhasePartsMs.find(phaseTotal.first);
        if (it == s.searchPhasePartsMs.end() || it->second.size() < 2 || s.searchSteps == 0) continue;
        fmt::print(out, "             of its {} (ms):{}\n", phaseTotal.first,
                   joined(it->second, static_cast<double>(s.searchSteps)));
    }
    if (!s.startupPhasesMs.empty()) {
        fmt::print(out, "Start-up parts (ms, rank 0):{}\n", parts(s.startupPhasesMs, 1.0));
    }
    if (s.timings.samples > 0) {
        const auto local = describe(s.timings.localUs), nonlocal = describe(s.timings.nonlocalUs),
                   overlap = describe(s.timings.nonoverlapUs);
        const bool host = s.timings.clock == "host";
        fmt::print(out,
                   "{} (us, {} steps; mean / median / p90): local {:.1f} / {:.1f} / {:.1f}, "
                   "{} {:.1f} / {:.1f} / {:.1f}, non-overlap {:.1f} / {:.1f} / {:.1f}\n",
                   host ? "Host timeline, rank 0" : "Device timeline", s.timings.samples, local.mean, local.median,
                   local.p90, host ? "exchanges" : "non-local", nonlocal.mean, nonlocal.median, nonlocal.p90,
                   overlap.mean, overlap.median, overlap.p90);
        if (!s.timings.stepUs.empty()) {
            fmt::print(out,
                       "                 of it (us, median): forward x {:.1f}, non-local F {:.1f}, reverse f {:.1f}; "
                       "update {:.1f}; the whole step {:.1f}\n",
                       describe(s.timings.forwardUs).median, describe(s.timings.nonlocalForceUs).median,
                       describe(s.timings.reverseUs).median, describe(s.timings.updateUs).median,
                       describe(s.timings.stepUs).median);
        }
        for (const char* kind : {"forward", "reverse"}) {
            // "forward kernel 6.1; p0 stores 1.2, signal 0.6, ..." from "forward p0 stores" and the like.
            std::string line, pulse;
            for (const auto& [name, values] : s.timings.exchangeKernelUs) {
                if (name.rfind(kind, 0) != 0) continue;
                std::string rest = name.substr(std::string(kind).size() + 1);
                std::string part = rest;
                if (const auto space = rest.find(' '); rest[0] == 'p' && space != std::string::npos) {
                    const std::string thisPulse = rest.substr(0, space);
                    part = (thisPulse != pulse ? "; " + thisPulse + " " : ", ") + rest.substr(space + 1);
                    pulse = thisPulse;
                }
                if (line.empty() && part.rfind("; ", 0) == 0) part.erase(0, 2);
                line += fmt::format("{}{:.1f}", part + " ", describe(values).median);
            }
            if (!line.empty()) fmt::print(out, "                 inside the {} kernel (us, median): {}\n", kind, line);
        }
    }
}

std::string summaryToJson(const RunSummary& s, const MdOptions& o) {
    nlohmann::json j;
    j["program"] = "haloex-md";
    j["commit"] = gitCommit();
    j["transport"] = s.transport;
    j["transport_reason"] = o.transportReason;
    // --transport auto that measured (or reused a measurement): every
    // candidate's time per step, the skipped ones and why (null otherwise).
    j["auto_selection"] =
        o.autoSelectionJson.empty() ? nlohmann::json(nullptr) : nlohmann::json::parse(o.autoSelectionJson);
    j["backend"] = s.backend;
    j["search"] = s.search;
    j["ranks"] = s.ranks;
    j["grid"] = s.grid;
    j["atoms"] = s.atoms;
    j["steps"] = s.steps;
    j["requested_steps"] = s.requestedSteps;
    j["first_step"] = s.firstStep;
    // Whether the run did all its steps; when not, what stopped it and at
    // which step (the checkpoint's: the next step to run).
    j["completed"] = !s.stop.stopped();
    if (s.stop.stopped()) {
        j["stop"] = {{"reason", s.stop.reason},
                     {"step", s.stop.step},
                     {"search_step", s.stop.searchStep},
                     {"exit_status", s.stop.exitStatus}};
    } else {
        j["stop"] = nullptr;
    }
    if (s.singlePoint.evaluated) {
        j["single_point"] = {{"step", s.singlePoint.step},
                             {"max_force", s.singlePoint.maxForce},
                             {"max_force_atom", s.singlePoint.maxForceAtom},
                             {"rms_force", s.singlePoint.rmsForce}};
    }
    j["search_steps"] = s.searchSteps;
    // Schema 2: ns_per_day / us_per_step count every step (search steps
    // included, start-up apart); schema 1 (no schema_version) meant the
    // steady state by them. Readers check the version (bench/bench_common.py).
    j["schema_version"] = kSummarySchemaVersion;
    j["ns_per_day"] = s.nsPerDay;
    j["us_per_step"] = s.usPerStep;
    j["ns_per_day_steady"] = s.nsPerDaySteady;
    j["us_per_step_steady"] = s.usPerStepSteady;
    j["startup_seconds"] = s.startupSeconds;
    j["wall_seconds"] = s.totalSeconds;
    j["normal_steps"] = s.normalSteps;
    j["search_step_ms"] = s.searchStepMs;
    j["conserved_drift_per_atom"] = s.conservedDrift;
    j["conserved_drift_span_ps"] = s.driftSpanPs;
    j["conserved_drift_too_short"] = s.driftSamples >= 3 && !driftSpanNote(s.driftSpanPs).empty();
    j["conserved_drift_samples"] = s.driftSamples;
    j["host_syncs_per_step"] = s.hostSyncsPerStep;
    if (s.apiSyncsCounted) {
        j["api_syncs_in_normal_steps"] = {{"counted_by", "CUPTI callbacks, host-blocking CUDA runtime/driver calls"},
                                          {"total_max_over_ranks", s.apiSyncsInNormalSteps},
                                          {"normal_steps", s.normalSteps},
                                          {"by_function_rank0", s.apiSyncsByFunction}};
    }
    j["cuda_graphs"] = s.graphs;
    if (!s.stepGraphNodes.empty()) j["step_graph_nodes"] = s.stepGraphNodes;
    j["steps_in_multi_step_graphs"] = s.stepsInMultiStepGraphs;
    j["transport_notes"] = s.transportNotes;
    j["exchange_notes"] = s.exchangeNotes;
    j["settings"] = {{"rc", s.rc},
                     {"rlist", s.rlist},
                     {"nstlist", s.nstlist},
                     {"nstlist_reason", o.nstlistReason},
                     {"adjusted", o.adjustments},
                     {"dt", s.dt},
                     {"seed", o.seed},
                     {"temperature", o.temperature},
                     {"thermostat", o.thermostat},
                     {"drift_from_ps", o.driftFromPs},
                     {"estimated_buffer_drift", s.estimatedBufferDrift},
                     {"prune_parts", s.pruneParts},
                     {"rlist_inner", s.rlistInner},
                     {"estimated_prune_drift", s.estimatedPruneDrift},
                     {"device", o.device},
                     {"nvshmem_path", o.nvshmemPath},
                     {"nvshmem_launch", o.nvshmemLaunch},
                     {"steps_per_graph", o.stepsPerGraph},
                     {"fuse_update", s.stepKernels.fuseUpdate},
                     {"fuse_update_reason", s.stepKernels.fuseUpdateReason},
                     {"sort_atoms", s.stepKernels.sortAtoms},
                     {"sort_atoms_reason", s.stepKernels.sortAtomsReason},
                     {"gro", o.groFile},
                     {"until_step",
                      o.untilStep == kNoUntilStep ? nlohmann::json(nullptr) : nlohmann::json(o.untilStep)},
                     {"continued_outputs", o.continuedOutputs}};
    if (!s.energies.empty()) {
        const EnergySample& e = s.energies.back();
        j["energies"] = {{"step", e.step},           {"lj", e.lj},
                         {"coulomb", e.coulomb},     {"potential", e.potential},
                         {"kinetic", e.kinetic},     {"total", e.total},
                         {"conserved", e.conserved}, {"temperature", e.temperature},
                         {"pressure", e.pressure}};
        nlohmann::json series = nlohmann::json::array();
        for (const auto& x : s.energies) {
            series.push_back({x.step, x.time, x.lj, x.coulomb, x.potential, x.kinetic, x.total, x.conserved,
                              x.temperature, x.pressure});
        }
        // The terms of --energy's .xvg (energy_file.hpp), by name: readers look columns up.
        j["energy_series"] = {{"columns",
                               {"step", "time", "lj", "coulomb", "potential", "kinetic", "total", "conserved",
                                "temperature", "pressure"}},
                              {"rows", series}};
    }
    nlohmann::json timing = {{"samples", s.timings.samples}, {"clock", s.timings.clock}};
    if (s.timings.samples > 0) {
        const auto local = describe(s.timings.localUs), nonlocal = describe(s.timings.nonlocalUs),
                   overlap = describe(s.timings.nonoverlapUs);
        timing["local_us"] = local.mean;
        timing["nonlocal_us"] = nonlocal.mean;
        timing["nonoverlap_us"] = overlap.mean;
        timing["local"] = toJson(local);
        timing["nonlocal"] = toJson(nonlocal);
        timing["nonoverlap"] = toJson(overlap);
        // The non-local path's parts, the update and the whole step
        // (--timeline-parts; docs/architecture.md#what-the-timings-mean).
        if (!s.timings.stepUs.empty()) {
            timing["forward"] = toJson(describe(s.timings.forwardUs));
            timing["nonlocal_force"] = toJson(describe(s.timings.nonlocalForceUs));
            timing["reverse"] = toJson(describe(s.timings.reverseUs));
            timing["update"] = toJson(describe(s.timings.updateUs));
            timing["step"] = toJson(describe(s.timings.stepUs));
        }
        // Inside the exchange kernels, from the device's own timer (transport::ExchangeTimestamps).
        if (!s.timings.exchangeKernelUs.empty()) {
            nlohmann::json parts = nlohmann::json::object();
            for (const auto& [name, values] : s.timings.exchangeKernelUs) parts[name] = toJson(describe(values));
            timing["exchange_kernels"] = parts;
        }
    }
    j["timing"] = timing;
    // Per search step (means), and the start-up's parts.
    nlohmann::json perSearch = nlohmann::json::object();
    for (const auto& [name, ms] : s.searchPhasesMs) perSearch[name] = s.searchSteps > 0 ? ms / s.searchSteps : 0.0;
    j["search_phases_ms"] = perSearch;
    j["startup_phases_ms"] = s.startupPhasesMs;
    // "pair_search_parts_ms", "migrate_parts_ms", "plan_parts_ms" (the pair
    // search's always, as before the others were kept).
    j["pair_search_parts_ms"] = nlohmann::json::object();
    for (const auto& [phase, parts] : s.searchPhasePartsMs) {
        nlohmann::json perSearchParts = nlohmann::json::object();
        for (const auto& [name, ms] : parts) perSearchParts[name] = s.searchSteps > 0 ? ms / s.searchSteps : 0.0;
        std::string key = phase;
        std::replace(key.begin(), key.end(), ' ', '_');
        j[key + "_parts_ms"] = perSearchParts;
    }
    if (!s.bufferSamples.empty()) {
        nlohmann::json samples = nlohmann::json::array();
        for (const auto& b : s.bufferSamples) {
            samples.push_back({b.step, b.count, b.energy, b.absoluteEnergy, b.prunedCount, b.prunedEnergy,
                               b.prunedAbsoluteEnergy, b.pruneAge});
        }
        j["buffer_check"] = {{"measured_drift", s.measuredBufferDrift},
                             {"measured_drift_absolute", s.measuredBufferDriftAbsolute},
                             {"estimated_drift", s.estimatedBufferDrift},
                             {"measured_prune_drift", s.measuredPruneDrift},
                             {"measured_prune_drift_absolute", s.measuredPruneDriftAbsolute},
                             {"estimated_prune_drift", s.estimatedPruneDrift},
                             {"tolerance", o.bufferTolerance},
                             {"columns",
                              {"step", "missed_pairs", "energy", "absolute_energy", "pruned_missed_pairs",
                               "pruned_energy", "pruned_absolute_energy", "prune_age_steps"}},
                             {"samples", samples}};
    }
    return j.dump(2);
}

void writeSummaryJson(const std::string& path, const RunSummary& s, const MdOptions& o) {
    // Atomically: a failure never leaves an empty or half-written summary.
    writeFileAtomically(path, summaryToJson(s, o) + '\n', "--json");
}

}  // namespace haloex::md
