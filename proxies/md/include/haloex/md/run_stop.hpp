#pragma once
// Stopping a run early and cleanly, as mdrun does: SIGTERM, SIGINT, SIGHUP or
// SIGUSR1 (what a batch scheduler, Ctrl-C, a closed terminal or Slurm's
// pre-emption warning, sbatch --signal=USR1@..., sends) and the --maxh
// wall-clock limit stop the
// run at the next search step, a second signal at the next step where the
// ranks already exchange something (a search or energy step), a third ends
// the process at once. The stop is agreed collectively, so every rank stops
// at the same step: each rank's vote (vote()) travels in a reduction the
// engine makes anyway at those steps (the atom-count check of every search,
// the energy sums), so no host synchronisation is added to normal steps.
//
// The signal handlers only count (a lock-free atomic): async-signal-safe.
#include <array>
#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace haloex::md {

// Installs the SIGTERM, SIGINT, SIGHUP and SIGUSR1 handlers (process-wide; idempotent).
void installStopSignalHandlers();
// While one of these lives (the reading of a run's inputs: the start
// configuration, the checkpoint), a stop signal ends the process at once with
// exit status 128 + signal and a line on stderr, instead of being counted:
// such a read can take very long (a huge or sparse checkpoint) or never end
// (a FIFO without a writer), and nothing has been run or written yet.
class StartupReadGuard {
public:
    StartupReadGuard();
    StartupReadGuard(const StartupReadGuard&) = delete;
    StartupReadGuard& operator=(const StartupReadGuard&) = delete;
    ~StartupReadGuard();
};

// Signals received since the handlers were installed, and the first one.
int stopSignalsReceived();
int firstStopSignal();  // 0: none yet
// "SIGTERM", "SIGINT", "SIGHUP", "SIGUSR1" (or "signal N").
std::string signalName(int signal);

// Exit statuses of a run that was stopped (docs/running.md): the shell's
// 128 + signal number for a signal (143 SIGTERM, 130 SIGINT, 129 SIGHUP, 138
// SIGUSR1: the run did not
// complete, but its outputs are whole), EX_TEMPFAIL (75) for --maxh: not
// complete, continue with --restart.
inline constexpr int kExitMaxh = 75;
int exitStatusForSignal(int signal);

// What stopped a run (RunSummary::stop).
struct StopRecord {
    std::string reason;        // "SIGTERM", "SIGINT", "SIGHUP", "SIGUSR1", "maxh"; empty: the run completed
    std::int64_t step = -1;    // the step it stopped at (the next step it would have run)
    bool beforeStart = false;  // during start-up: nothing was run or written
    bool searchStep = false;   // stopped at a search step (a restart from it is bitwise)
    int exitStatus = 0;
    bool stopped() const { return !reason.empty(); }
};

// One rank's side of the agreement (each rank of a run has one).
class RunStop {
public:
    using Clock = std::chrono::steady_clock;
    // `maxHours` (0: no limit) counts from `start`; `rank`: this rank (test
    // hooks act on rank 0 only).
    RunStop(double maxHours, Clock::time_point start, int rank);

    // This rank's vote, to be summed over the ranks in an existing
    // reduction: {SIGTERM seen first, SIGINT seen first, a second signal seen,
    // wall-clock limit reached, SIGHUP seen first, SIGUSR1 seen first}, each 0
    // or 1 (summed, a stop is named by the first of SIGTERM, SIGINT, SIGHUP,
    // SIGUSR1 any rank saw). `wallClock`: whether --maxh counts here.
    static constexpr std::size_t kVoteSize = 6;
    std::array<std::int64_t, kVoteSize> vote(bool wallClock) const;

    // The summed votes of a search step at `step` (`beforeStart`: the
    // start-up's search; `counts`: false at the first step's search, which
    // leaves a signal to the next one so that at least one search interval
    // runs): records a stop there.
    void agreeAtSearch(std::span<const std::int64_t> summed, std::int64_t step, bool beforeStart, bool counts);
    // The summed votes of an energy step (the sums are doubles there): a
    // second signal stops at `nextStep`.
    void agreeAtEnergyStep(std::span<const double> summed, std::int64_t nextStep);

    bool stopRequested() const { return record_.stopped(); }
    const StopRecord& record() const { return record_; }

    // Test hook HALOEX_TEST_STOP_SIGNAL (test builds only): a comma-separated
    // list of SIGNAL@STEP (TERM@25, INT@start; TERM, INT, HUP, USR1) -- rank 0 raises SIGNAL in
    // itself at the first step boundary at or after STEP ("start": during
    // start-up, before the first search). Deterministic stand-in for a
    // scheduler's signal arriving at a chosen time.
    static constexpr std::int64_t kAtStart = -1;
    void fireTestHooks(std::int64_t step);

private:
    void agree(const std::array<std::int64_t, kVoteSize>& summed, std::int64_t step, bool wallClock, bool beforeStart);
    double maxSeconds_ = 0.0;  // 0: no limit
    Clock::time_point start_;
    StopRecord record_;
    struct Hook {
        int signal = 0;
        std::int64_t step = 0;
        bool fired = false;
    };
    std::vector<Hook> hooks_;
};

}  // namespace haloex::md
