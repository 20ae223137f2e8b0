// Backend::Auto that measures (halo/auto_select.hpp): the candidates, the
// timing inside the caller's steps, the collective decision and the caches.
#include "haloex/halo/auto_select.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <span>

#include "auto_cache.hpp"
#include "haloex/build_info.hpp"
#include "haloex/core/error.hpp"
#include "haloex/detail/core/safe_file.hpp"

namespace haloex {
namespace {

using transport::MemorySpace;

// Choices measured in this process, by key. Rank 0 alone reads and writes
// it and broadcasts what it found, so the ranks of a thread world (which
// share it) and the processes of an MPI job (which do not) agree alike.
std::mutex cacheMutex;
std::map<std::string, AutoRecord>& processCache() {
    static std::map<std::string, AutoRecord> cache;
    return cache;
}

std::string broadcastString(runtime::World& world, std::string text, int root) {
    auto size = static_cast<std::int64_t>(text.size());
    world.broadcastBytes(std::as_writable_bytes(std::span(&size, 1)), root);
    text.resize(static_cast<std::size_t>(size));
    if (size > 0) world.broadcastBytes(std::as_writable_bytes(std::span(text.data(), text.size())), root);
    return text;
}

// The lowest rank's non-empty `mine` on every rank ("" when no rank has
// one), and how many ranks had one. Collective.
std::string agreedReason(runtime::World& world, const std::string& mine, int& ranksWithReason) {
    ranksWithReason =
        static_cast<int>(world.allReduceValue<std::int64_t>(mine.empty() ? 0 : 1, runtime::ReduceOp::Sum));
    if (ranksWithReason == 0) return {};
    const auto first = static_cast<int>(
        world.allReduceValue<std::int64_t>(mine.empty() ? world.size() : world.rank(), runtime::ReduceOp::Min));
    return broadcastString(world, world.rank() == first ? mine : std::string(), first);
}

// Runs `check` on rank 0; its error is thrown on every rank (InvalidInput). Collective.
void checkOnRoot(runtime::World& world, const std::function<void()>& check) {
    std::string message;
    if (world.rank() == 0) {
        try {
            check();
        } catch (const std::exception& e) {
            message = e.what();
        }
    }
    message = broadcastString(world, message, 0);
    if (!message.empty()) throwError(ErrorKind::InvalidInput, message);
}

// Why `backend` cannot hold arrays in `space` in this kind of world; "" when it can.
std::string unsuitableReason(Backend backend, const runtime::World& world, MemorySpace space) {
    const bool host = space == MemorySpace::Host;
    if (backend == Backend::Reference) {
        if (!host) return "it keeps its arrays in host memory, and these are in device memory";
        if (world.kind() != "threads" && world.kind() != "single") {
            return fmt::format("it is the in-process oracle (ranks as threads of one process); this is an {} world",
                               world.kind());
        }
        return {};
    }
    if (backend == Backend::Staged) return {};
    return host ? "it keeps its arrays in device memory, and these are in host memory" : "";
}

void requireOptions(const AutoSelectOptions& o) {
    const auto refuse = [](const std::string& message) {
        throwError(ErrorKind::InvalidInput, "selectBackend: " + message);
    };
    if (o.warmupSteps < 0) refuse(fmt::format("warmupSteps {}: use 0 or more warm-up steps", o.warmupSteps));
    if (o.stepsPerRepeat < 1)
        refuse(fmt::format("stepsPerRepeat {}: use at least 1 step per repeat", o.stepsPerRepeat));
    if (o.repeats < 1) refuse(fmt::format("repeats {}: use at least 1 timed repeat", o.repeats));
    for (Backend b : o.candidates) {
        if (b == Backend::Auto) refuse("Auto among the candidates: list concrete backends (or none for the default)");
    }
}

std::string memoryName(MemorySpace space) { return space == MemorySpace::Host ? "host" : "device"; }

// The shape and the job's facts, the same on every rank. Collective.
std::string cacheKey(const AutoSelectOptions& o, runtime::World& world, const std::vector<Backend>& usable) {
    std::vector<std::string_view> names;
    for (Backend b : usable) names.push_back(toString(b));
    const auto perNode = world.allReduceValue<std::int64_t>(world.localSize(), runtime::ReduceOp::Max);
    return fmt::format("{} | {} world of {} rank(s), at most {} per node, {} memory | candidates {}", o.shapeKey,
                       world.kind(), world.size(), perNode,
                       memoryName(transport::memorySpaceFor(Backend::Auto, o.transport)), fmt::join(names, ","));
}

// "ipc: why; nccl: why", for an error that lists them.
std::string reasonsOf(const std::vector<AutoSkipped>& skipped) {
    std::vector<std::string> reasons;
    for (const AutoSkipped& s : skipped) reasons.push_back(fmt::format("{}: {}", toString(s.backend), s.reason));
    return fmt::format("{}", fmt::join(reasons, "; "));
}

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    const std::size_t n = values.size();
    return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// The candidate's transport, made collectively: nothing (and `reason`) when
// every rank failed to make it; an error on every rank when only some did.
std::unique_ptr<transport::BlockTransport> makeCandidate(runtime::World& world, Backend backend,
                                                         const transport::TransportOptions& options,
                                                         std::string& reason) {
    std::unique_ptr<transport::BlockTransport> made;
    std::string mine;
    try {
        made = makeTransport(backend, world, options);
    } catch (const std::exception& e) {
        mine = e.what();
    }
    int failed = 0;
    reason = agreedReason(world, mine, failed);
    if (failed == 0) return made;
    if (failed == world.size()) return nullptr;
    // `made` is destroyed while this unwinds: transports skip their
    // collective clean-up then, so the ranks that made it do not wait.
    throwError(ErrorKind::Runtime,
               fmt::format("auto selection: the {} transport was made on {} of {} ranks but failed on the others "
                           "(the first: {}); a choice cannot be made collectively: pick a transport explicitly",
                           toString(backend), world.size() - failed, world.size(), reason));
}

// The candidate's figure: warm-up, then each repeat after a barrier, timed
// as the slowest rank's wall time.
AutoCandidateTime measure(runtime::World& world, Backend backend, transport::BlockTransport& made,
                          const AutoSelectOptions& o, const PrepareSteps& prepare,
                          const std::function<double()>& clock) {
    AutoCandidateTime m;
    m.backend = backend;
    {
        const RepresentativeSteps steps = prepare(made, backend);
        if (!steps) {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("selectBackend: the prepare function returned no steps for {}", toString(backend)));
        }
        if (o.warmupSteps > 0) {
            world.barrier();
            steps(o.warmupSteps);
        }
        for (int r = 0; r < o.repeats; ++r) {
            world.barrier();
            const double start = clock();
            steps(o.stepsPerRepeat);
            const double mine = clock() - start;
            const double slowest = world.allReduceValue(mine, runtime::ReduceOp::Max);
            m.repeatSecondsPerStep.push_back(slowest / o.stepsPerRepeat);
        }
    }  // the steps (and what they hold of the transport) go first
    m.secondsPerStep = median(m.repeatSecondsPerStep);
    return m;
}

double steadySeconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Rank 0's lookup in the process cache, then the cache file, as JSON text
// for the broadcast: {"record": record or null, "source": name, "warnings": [...]}.
std::string lookUpOnRoot(const AutoSelectOptions& o, const std::string& key) {
    nlohmann::json out = {{"record", nullptr}, {"source", ""}, {"warnings", nlohmann::json::array()}};
    {
        const std::lock_guard lock(cacheMutex);
        if (const auto it = processCache().find(key); it != processCache().end()) {
            out["record"] = auto_select::recordToJson(it->second);
            out["source"] = toString(AutoSource::ProcessCache);
            return out.dump();
        }
    }
    if (o.cacheFile.empty()) return out.dump();
    auto_select::CacheLookup found = auto_select::readCacheFile(o.cacheFile, key, gitCommit());
    out["warnings"] = found.warnings;
    if (found.record) {
        out["record"] = auto_select::recordToJson(*found.record);
        out["source"] = toString(AutoSource::FileCache);
        const std::lock_guard lock(cacheMutex);
        processCache()[key] = *found.record;
    }
    return out.dump();
}

}  // namespace

std::vector<Backend> autoCandidates(runtime::World& world, MemorySpace space, const std::vector<Backend>& candidates,
                                    std::vector<AutoSkipped>& skipped) {
    std::vector<Backend> asked = candidates.empty() ? knownBackends() : candidates;
    std::vector<Backend> usable;
    for (std::size_t i = 0; i < asked.size(); ++i) {
        const Backend b = asked[i];
        if (std::find(asked.begin(), asked.begin() + static_cast<std::ptrdiff_t>(i), b) !=
            asked.begin() + static_cast<std::ptrdiff_t>(i)) {
            continue;  // listed twice
        }
        // The same on every rank (the world's kind and the space are), so
        // the collective unavailableReason is called by all or none.
        std::string why = unsuitableReason(b, world, space);
        if (why.empty()) why = unavailableReason(b, world);
        int ranks = 0;
        why = agreedReason(world, why, ranks);
        if (why.empty()) {
            usable.push_back(b);
        } else {
            skipped.push_back({b, why});
        }
    }
    return usable;
}

AutoSelection selectBackend(runtime::World& world, const AutoSelectOptions& options, const PrepareSteps& prepare) {
    requireOptions(options);
    // Every candidate in the same memory space: the caller's, or host memory
    // when unset (as makeTransport resolves Auto).
    const MemorySpace space = transport::memorySpaceFor(Backend::Auto, options.transport);
    transport::TransportOptions decided = options.transport;
    decided.memorySpace = space;
    const auto warn = [&](const std::string& warning) {
        if (options.warn) {
            options.warn(warning);
        } else if (world.rank() == 0) {
            fmt::print(stderr, "haloex: warning: {}\n", warning);
        }
    };
    AutoRecord record;  // its step counts stay 0 until something is measured
    record.cacheFile = options.cacheFile;
    const auto made = [&](Backend b) { return makeTransport(b, world, decided); };

    // Nothing to measure: the rule, as resolveAuto has it.
    const bool threads = world.kind() == "threads" && space == MemorySpace::Host;
    if (options.candidates.empty() && (threads || world.size() == 1)) {
        record.chosen = resolveAuto(Backend::Auto, world, space);
        record.key = cacheKey(options, world, {});
        record.reason = fmt::format("by rule, without measuring: {}", autoRuleReason(world, space));
        return {made(record.chosen), record};
    }
    const std::vector<Backend> usable = autoCandidates(world, space, options.candidates, record.skipped);
    record.key = cacheKey(options, world, usable);
    if (usable.empty()) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("auto selection: no candidate backend can run here ({})", reasonsOf(record.skipped)));
    }
    if (usable.size() == 1) {
        record.chosen = usable.front();
        record.reason = "the only candidate that can run here, without measuring";
        return {made(record.chosen), record};
    }

    // A cache file that cannot be written is found before the measurement.
    if (!options.cacheFile.empty()) {
        checkOnRoot(world, [&] { requireWritableOutput("auto-selection cache", options.cacheFile); });
    }
    const nlohmann::json lookup =
        nlohmann::json::parse(broadcastString(world, world.rank() == 0 ? lookUpOnRoot(options, record.key) : "", 0));
    for (const auto& w : lookup["warnings"]) record.warnings.push_back(w.get<std::string>());
    for (const std::string& w : record.warnings) warn(w);
    if (!lookup["record"].is_null()) {
        AutoRecord cached = auto_select::recordFromJson(lookup["record"]);
        cached.source =
            lookup["source"] == toString(AutoSource::FileCache) ? AutoSource::FileCache : AutoSource::ProcessCache;
        cached.cacheFile = options.cacheFile;
        cached.warnings = record.warnings;
        cached.reason = auto_select::selectionReason(cached);
        return {made(cached.chosen), cached};
    }

    // Measure every candidate; keep the fastest's transport so far (the
    // decision is the same on every rank: the figures are maxima over them).
    const std::function<double()> clock = options.clock ? options.clock : steadySeconds;
    record.warmupSteps = options.warmupSteps;
    record.stepsPerRepeat = options.stepsPerRepeat;
    record.repeats = options.repeats;
    std::unique_ptr<transport::BlockTransport> best;
    double bestSeconds = 0.0;
    for (Backend b : usable) {
        std::string why;
        std::unique_ptr<transport::BlockTransport> candidate = makeCandidate(world, b, decided, why);
        if (!candidate) {
            record.skipped.push_back({b, why});
            continue;
        }
        record.measured.push_back(measure(world, b, *candidate, options, prepare, clock));
        const double seconds = record.measured.back().secondsPerStep;
        if (!best || seconds < bestSeconds) {  // a tie keeps the earlier candidate
            best = std::move(candidate);       // the previous best is destroyed, on every rank alike
            bestSeconds = seconds;
            record.chosen = b;
        }
    }
    if (!best) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("auto selection: no candidate transport could be made ({})", reasonsOf(record.skipped)));
    }
    record.source = AutoSource::Measured;
    record.measuredAt = utcTimestamp();
    record.commit = gitCommit();
    record.reason = auto_select::selectionReason(record);

    // Remembered on rank 0; a failed write of the file is a warning, on every rank.
    std::string writeWarning;
    if (world.rank() == 0) {
        {
            const std::lock_guard lock(cacheMutex);
            AutoRecord kept = record;
            kept.warnings.clear();
            processCache()[record.key] = kept;
        }
        if (!options.cacheFile.empty())
            writeWarning = auto_select::writeCacheFile(options.cacheFile, record).value_or("");
    }
    writeWarning = broadcastString(world, writeWarning, 0);
    if (!writeWarning.empty()) {
        record.warnings.push_back(writeWarning);
        warn(writeWarning);
    }
    return {std::move(best), record};
}

void clearAutoSelectionCache() {
    const std::lock_guard lock(cacheMutex);
    processCache().clear();
}

}  // namespace haloex
