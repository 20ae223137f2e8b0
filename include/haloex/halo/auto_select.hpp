#pragma once
/// @file
/// Backend::Auto that measures (library haloex_transports), as cuDecomp's
/// autotune: each candidate backend is timed inside the caller's own
/// representative steps -- the real exchange with the real compute, because
/// the fused kernels compete with the compute for SMs and an exchange timed
/// alone misleads -- the fastest wins by a collective decision (every rank
/// gets the same answer), and the choice is cached per plan shape: in this
/// process, and in a JSON file when one is named.
///
///   AutoSelectOptions options;
///   options.shapeKey = fmt::format("atoms/rank={} halo={}", n, rlist);
///   options.transport.memorySpace = transport::MemorySpace::Device;
///   AutoSelection s = selectBackend(world, options, [&](transport::BlockTransport& t, Backend) {
///       auto step = std::make_shared<MyStep>(t);            // set-up: not timed
///       return RepresentativeSteps([step](int n) { step->run(n); });  // exchange + compute, finished
///   });
///   // s.transport: the winner's transport, ready; s.record: what was measured.
///
/// Without measuring: a thread world with host memory (Reference) and a single
/// rank (Staged) when the caller left the candidates to the default (the
/// rule of resolveAuto, with its reason), and a job where only one candidate
/// can run.
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "haloex/halo/backend.hpp"
#include "haloex/runtime/world.hpp"
#include "haloex/transport/registry.hpp"
#include "haloex/transport/block_transport.hpp"

namespace haloex {

/// Runs `steps` representative steps on the transport it was set up with: the
/// exchange and the caller's compute, as the real run does them, on every rank
/// (collective). Returns when they are finished (device work synchronised), so
/// their wall time counts them.
using RepresentativeSteps = std::function<void(int steps)>;

/// Sets the representative work up on `transport` (plans, buffers, a first
/// step: none of it timed) and returns its steps. Called on every rank, once
/// per measured candidate; the returned function is destroyed before the
/// next candidate's transport is made, and before `transport` itself.
using PrepareSteps = std::function<RepresentativeSteps(transport::BlockTransport& transport, Backend backend)>;

/// How selectBackend measures and caches.
struct AutoSelectOptions {
    /// What makes two runs alike for the cache: the caller's plan shape (atoms
    /// per rank, halo width, grid...). The cache key adds the world's kind and
    /// size, the most ranks on one node, the memory space and the candidates
    /// that can run. A cache file is meant for one kind of machine.
    std::string shapeKey;
    /// The memory space of the exchanged arrays (unset: host memory, as
    /// makeTransport resolves Auto) and the transports' options.
    transport::TransportOptions transport;
    /// Backends to measure, in order (the first wins a tie). Empty: every
    /// backend of knownBackends() that suits the memory space and can run in
    /// this job (see autoCandidates); a thread world with host memory or a
    /// single rank then gets the rule's backend without measuring.
    std::vector<Backend> candidates;
    int warmupSteps = 10;     ///< per candidate, not timed (>= 0)
    int stepsPerRepeat = 20;  ///< steps per timed repeat (>= 1)
    int repeats = 3;          ///< timed repeats per candidate (>= 1); the median counts
    /// A JSON file that keeps measured choices across runs, keyed like the
    /// in-process cache: read on rank 0 and broadcast, rewritten atomically
    /// after a measurement. A stale or corrupt file is reported through
    /// `warn` and measured again. Empty: this process only.
    std::string cacheFile;
    /// Seconds from any origin, on the calling rank; empty: a steady clock.
    std::function<double()> clock;
    /// Receives each warning on every rank; empty: rank 0 prints them to
    /// stderr as "haloex: warning: ...".
    std::function<void(const std::string&)> warn;
};

/// How the choice was made.
enum class AutoSource {
    Rule,          ///< without measuring (one candidate, a thread world, one rank)
    Measured,      ///< measured now
    ProcessCache,  ///< measured earlier in this process for the same key
    FileCache,     ///< measured by an earlier run, read from the cache file
};
/// "rule", "measured", "process cache", "file cache".
std::string_view toString(AutoSource source);

/// One candidate's measured figure.
struct AutoCandidateTime {
    Backend backend = Backend::Staged;         ///< the candidate
    double secondsPerStep = 0.0;               ///< the median of the repeats
    std::vector<double> repeatSecondsPerStep;  ///< each repeat: the slowest rank's wall time / steps
};

/// A candidate that could not run in this job.
struct AutoSkipped {
    Backend backend = Backend::Staged;  ///< the candidate
    std::string reason;                 ///< why not (unavailableReason, or the error that made it fail)
};

/// What selectBackend decided and why; identical on every rank.
struct AutoRecord {
    Backend chosen = Backend::Staged;         ///< the backend chosen
    AutoSource source = AutoSource::Rule;     ///< how
    std::string reason;                       ///< one line: how it was chosen, with the figures
    std::string key;                          ///< the cache key (shapeKey and the job's facts)
    int warmupSteps = 0;                      ///< the options it was measured with (0 when nothing was)
    int stepsPerRepeat = 0;                   ///< the options it was measured with
    int repeats = 0;                          ///< the options it was measured with
    std::vector<AutoCandidateTime> measured;  ///< in candidate order (from a cache: the figures measured then)
    std::vector<AutoSkipped> skipped;         ///< candidates that could not run here, with the reason
    std::string measuredAt;                   ///< UTC time of the measurement (empty: none)
    std::string commit;                       ///< the haloex commit that measured
    std::string cacheFile;                    ///< the cache file read or written (empty: none)
    std::vector<std::string> warnings;        ///< e.g. a stale or corrupt cache file

    /// Lines for a run's summary: the choice ("chosen by measurement" with
    /// every candidate's figure), each skipped candidate with its reason, and
    /// the warnings.
    std::vector<std::string> describe() const;
    /// The record as a JSON object (what the cache file keeps per key; haloex-md's auto_selection).
    std::string toJson() const;
};

/// What selectBackend returns: the transport and how it was chosen.
struct AutoSelection {
    /// The chosen backend's transport, ready for setPlan (the one that was
    /// measured, when it was).
    std::unique_ptr<transport::BlockTransport> transport;
    AutoRecord record;  ///< how it was chosen (the same on every rank)
};

/// Collective over `world`: every rank calls it with the same options. Makes
/// each candidate's transport (one that cannot be made on any rank is skipped
/// with the reason; one that fails on some ranks only throws on every rank),
/// calls `prepare`, runs warmupSteps, then `repeats` timed calls of
/// stepsPerRepeat steps, each starting after a barrier and timed as the
/// slowest rank's wall time; the candidate's figure is the median. The
/// fastest wins; the losers' transports are destroyed. An error thrown by
/// `prepare` or the steps propagates (as from any step: end the job, e.g. with
/// World::abort, if only some ranks threw). Throws InvalidInput for bad
/// options (Auto or NcclDevice among the candidates, steps or repeats below
/// 1, a cache file that cannot be written) and when no candidate can run.
AutoSelection selectBackend(runtime::World& world, const AutoSelectOptions& options, const PrepareSteps& prepare);

/// Collective: of `candidates` (empty: knownBackends()), those that suit
/// `space` and this world and can run in this job, in order; the others go to
/// `skipped` with the reason (unavailableReason(backend, world), or the memory
/// space, or Reference outside a thread or single-rank world).
std::vector<Backend> autoCandidates(runtime::World& world, transport::MemorySpace space,
                                    const std::vector<Backend>& candidates, std::vector<AutoSkipped>& skipped);

/// Forgets every choice cached in this process (tests; a caller that knows the
/// machine changed). Not while selectBackend runs.
void clearAutoSelectionCache();

}  // namespace haloex
