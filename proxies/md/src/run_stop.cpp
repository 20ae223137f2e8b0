#include "haloex/md/run_stop.hpp"

#include <array>
#include <atomic>
#include <charconv>
#include <csignal>
#include <fmt/format.h>
#include <string_view>
#include <unistd.h>

#include "haloex/core/error.hpp"
#include "haloex/detail/core/test_hooks.hpp"

namespace haloex::md {
namespace {

// Touched by the signal handler: lock-free atomics only.
std::atomic<int> gSignals{0};
std::atomic<int> gFirstSignal{0};
static_assert(std::atomic<int>::is_always_lock_free, "the stop-signal counters must be lock-free");

// Threads reading the run's inputs now (StartupReadGuard).
std::atomic<int> gReadingInputs{0};
static_assert(std::atomic<int>::is_always_lock_free);

// What a signal during the input's reading says before the process ends
// (write(2) of a constant: async-signal-safe).
void sayStoppedWhileReading(int signal) {
    const char* text = signal == SIGTERM  ? "haloex-md: stopped by SIGTERM during start-up, while reading its input: "
                                            "nothing was run, and no checkpoint, trajectory or JSON was written\n"
                       : signal == SIGINT ? "haloex-md: stopped by SIGINT during start-up, while reading its input: "
                                            "nothing was run, and no checkpoint, trajectory or JSON was written\n"
                       : signal == SIGHUP ? "haloex-md: stopped by SIGHUP during start-up, while reading its input: "
                                            "nothing was run, and no checkpoint, trajectory or JSON was written\n"
                                          : "haloex-md: stopped by SIGUSR1 during start-up, while reading its input: "
                                            "nothing was run, and no checkpoint, trajectory or JSON was written\n";
    std::size_t length = 0;
    while (text[length] != '\0') ++length;
    const ssize_t written = ::write(STDERR_FILENO, text, length);
    (void)written;  // nothing to do about a failed write in a handler
}

extern "C" void onStopSignal(int signal) {
    if (gReadingInputs.load(std::memory_order_relaxed) > 0) {
        // A read that may take very long (a FIFO without a writer blocks in
        // open(), SA_RESTART resumes it; a huge or sparse checkpoint): the
        // run has not started and has written nothing, so it ends now.
        sayStoppedWhileReading(signal);
        ::_exit(exitStatusForSignal(signal));
    }
    const int received = gSignals.fetch_add(1, std::memory_order_relaxed) + 1;
    int none = 0;
    gFirstSignal.compare_exchange_strong(none, signal, std::memory_order_relaxed);
    if (received >= 3) {
        // A third signal: the user insists (a run stuck before its next
        // search step). Default action, at once.
        struct sigaction dfl {};
        dfl.sa_handler = SIG_DFL;
        sigemptyset(&dfl.sa_mask);
        ::sigaction(signal, &dfl, nullptr);
        ::raise(signal);
    }
}

int signalNumber(std::string_view name) {
    if (name.starts_with("SIG")) name.remove_prefix(3);
    if (name == "TERM") return SIGTERM;
    if (name == "INT") return SIGINT;
    if (name == "HUP") return SIGHUP;
    if (name == "USR1") return SIGUSR1;
    return 0;
}

// The stop signals in the order that names a stop when ranks saw different
// ones first (the vote's entries, see RunStop::vote).
constexpr std::array<int, 4> kStopSignals{SIGTERM, SIGINT, SIGHUP, SIGUSR1};

}  // namespace

void installStopSignalHandlers() {
    struct sigaction action {};
    action.sa_handler = onStopSignal;
    sigemptyset(&action.sa_mask);
    // Interrupted system calls (file writes, waits of the host exchange)
    // resume: the stop is handled at the next search step, not by EINTR.
    action.sa_flags = SA_RESTART;
    for (const int signal : kStopSignals) {
        if (::sigaction(signal, &action, nullptr) != 0) {
            throwError(ErrorKind::Internal, fmt::format("cannot install the {} handler", signalName(signal)));
        }
    }
}

StartupReadGuard::StartupReadGuard() { gReadingInputs.fetch_add(1, std::memory_order_relaxed); }
StartupReadGuard::~StartupReadGuard() { gReadingInputs.fetch_sub(1, std::memory_order_relaxed); }

int stopSignalsReceived() { return gSignals.load(std::memory_order_relaxed); }
int firstStopSignal() { return gFirstSignal.load(std::memory_order_relaxed); }

std::string signalName(int signal) {
    if (signal == SIGTERM) return "SIGTERM";
    if (signal == SIGINT) return "SIGINT";
    if (signal == SIGHUP) return "SIGHUP";
    if (signal == SIGUSR1) return "SIGUSR1";
    return fmt::format("signal {}", signal);
}

int exitStatusForSignal(int signal) { return 128 + signal; }

RunStop::RunStop(double maxHours, Clock::time_point start, int rank)
    : maxSeconds_(maxHours > 0 ? 0.99 * maxHours * 3600.0 : 0.0), start_(start) {
    const char* spec = rank == 0 ? testHook("HALOEX_TEST_STOP_SIGNAL") : nullptr;
    if (spec == nullptr) return;
    std::string_view rest(spec);
    while (!rest.empty()) {
        const std::size_t comma = rest.find(',');
        const std::string_view item = rest.substr(0, comma);
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
        const std::size_t at = item.find('@');
        Hook hook;
        hook.signal = signalNumber(item.substr(0, at));
        const std::string_view when = at == std::string_view::npos ? std::string_view() : item.substr(at + 1);
        bool stepOk = false;
        if (when == "start") {
            hook.step = kAtStart;
            stepOk = true;
        } else {
            const auto [end, ec] = std::from_chars(when.data(), when.data() + when.size(), hook.step);
            stepOk = ec == std::errc() && end == when.data() + when.size() && hook.step >= 0;
        }
        if (hook.signal == 0 || !stepOk) {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("HALOEX_TEST_STOP_SIGNAL '{}': use SIGNAL@STEP items separated by commas, SIGNAL "
                                   "TERM, INT, HUP or USR1, STEP a step or 'start' (e.g. TERM@25,INT@start)",
                                   spec));
        }
        hooks_.push_back(hook);
    }
}

void RunStop::fireTestHooks(std::int64_t step) {
    for (Hook& hook : hooks_) {
        const bool due = step == kAtStart ? hook.step == kAtStart : hook.step != kAtStart && hook.step <= step;
        if (hook.fired || !due) continue;
        hook.fired = true;
        // raise(): handled in this thread before it returns, so the vote
        // that follows sees it.
        ::raise(hook.signal);
    }
}

std::array<std::int64_t, RunStop::kVoteSize> RunStop::vote(bool wallClock) const {
    const int first = firstStopSignal();
    const bool late =
        wallClock && maxSeconds_ > 0 && std::chrono::duration<double>(Clock::now() - start_).count() >= maxSeconds_;
    return {first == SIGTERM ? 1 : 0, first == SIGINT ? 1 : 0, stopSignalsReceived() >= 2 ? 1 : 0, late ? 1 : 0,
            first == SIGHUP ? 1 : 0,  first == SIGUSR1 ? 1 : 0};
}

void RunStop::agree(const std::array<std::int64_t, kVoteSize>& summed, std::int64_t step, bool wallClock,
                    bool beforeStart) {
    // Decided from the sums alone, so that every rank records the same.
    std::string reason;
    // Each signal's entry in the vote, in the order of kStopSignals.
    constexpr std::array<std::size_t, kStopSignals.size()> kEntry{0, 1, 4, 5};
    for (std::size_t k = 0; k < kStopSignals.size() && reason.empty(); ++k) {
        if (summed[kEntry[k]] > 0) {
            reason = signalName(kStopSignals[k]);
            record_.exitStatus = exitStatusForSignal(kStopSignals[k]);
        }
    }
    if (reason.empty() && wallClock && summed[3] > 0) {
        reason = "maxh";
        record_.exitStatus = kExitMaxh;
    }
    if (reason.empty()) return;
    record_.reason = reason;
    record_.step = step;
    record_.beforeStart = beforeStart;
}

void RunStop::agreeAtSearch(std::span<const std::int64_t> summed, std::int64_t step, bool beforeStart, bool counts) {
    HALOEX_ASSERT(summed.size() == kVoteSize, "stop vote of the wrong size");
    if (record_.stopped() || (!counts && !beforeStart)) return;
    // Before the start only signals count: --maxh measures the run.
    agree({summed[0], summed[1], summed[2], summed[3], summed[4], summed[5]}, step, !beforeStart, beforeStart);
}

void RunStop::agreeAtEnergyStep(std::span<const double> summed, std::int64_t nextStep) {
    HALOEX_ASSERT(summed.size() == kVoteSize, "stop vote of the wrong size");
    if (record_.stopped() || summed[2] < 0.5) return;  // only a second signal stops between searches
    const auto seen = [&](std::size_t k) -> std::int64_t { return summed[k] > 0.5 ? 1 : 0; };
    agree({seen(0), seen(1), 1, 0, seen(4), seen(5)}, nextStep, false, false);
}

}  // namespace haloex::md
