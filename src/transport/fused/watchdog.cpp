#include "watchdog.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fmt/format.h>

#include "haloex/detail/core/wait_limit.hpp"

namespace haloex::nvshmem_detail {

std::string describeTimeout(const WaitDiagnostics& d, const char* pulseName) {
    static constexpr const char* kKernel[] = {"coordinate exchange (FusedPackCommX)",
                                              "force exchange (FusedCommUnpackF)",
                                              "search-step exchange (exchangeBlock)"};
    const int kernel = d.kernel >= 0 && d.kernel <= WaitDiagnostics::SearchExchange ? d.kernel : 0;
    const char* what = "a signal";
    std::string subject = pulseName;
    switch (d.what) {
        case WaitDiagnostics::CoordinateReceive: what = "the coordinates of pulse"; break;
        case WaitDiagnostics::CoordinateDependency: what = "the coordinates (needed for forwarding) of pulse"; break;
        case WaitDiagnostics::ForceReady: what = "the halo forces of pulse"; break;
        case WaitDiagnostics::ForceDependency: what = "this rank's own accumulation of pulse"; break;
        case WaitDiagnostics::BlockReceive:
            what = "the block (migrating atoms or halo records) numbered";
            // d.pulse: the block's index in its exchangeBlocks call.
            subject = d.pulse >= 0 ? fmt::format("{} (block {} of its call)", d.expected, d.pulse)
                                   : std::to_string(d.expected);
            break;
    }
    return fmt::format("rank {}: the {} waited {:.3f} s for {} {} from rank {}: signal expected >= {}, seen {}. "
                       "The peer is slower than the wait limit (raise --wait-timeout / HALOEX_WAIT_TIMEOUT), or it "
                       "stopped (look for its error above)",
                       d.rank, kKernel[kernel], d.waitedNs * 1e-9, what, subject, d.peer, d.expected, d.seen);
}

double waitTimeoutSeconds(double option) {
    constexpr double kDefaultSeconds = 120.0;
    if (validWaitSeconds(option, false)) return option;
    if (const char* env = std::getenv("HALOEX_WAIT_TIMEOUT")) {
        const double v = std::atof(env);
        if (validWaitSeconds(v, false)) return v;  // NaN, inf and 1e308 would wrap as nanoseconds
    }
    return kDefaultSeconds;
}

Watchdog::Watchdog(runtime::World& world, const WaitDiagnostics* diagnostics,
                   std::function<std::string(const WaitDiagnostics&)> describe, std::string transport)
    : world_(world), diagnostics_(diagnostics), describe_(std::move(describe)), transport_(std::move(transport)) {
    thread_ = std::thread([this] { run(); });
}

Watchdog::~Watchdog() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    // A timeout recorded just before shutdown still ends the job with its diagnostic.
    const std::string message = pendingTimeout();
    if (!message.empty()) {
        std::fprintf(stderr, "haloex: %s wait timed out: %s\n", transport_.c_str(), message.c_str());
        std::fflush(stderr);
        world_.abort(transport_ + " wait timed out: " + message, 3);
    }
}

std::string Watchdog::pendingTimeout() const {
    const auto* ready = reinterpret_cast<const volatile int*>(&diagnostics_->ready);
    if (!*ready) return {};
    return describe_(*diagnostics_);
}

void Watchdog::run() {
    using namespace std::chrono_literals;
    while (!stop_) {
        const std::string message = pendingTimeout();
        if (!message.empty()) {
            std::fprintf(stderr, "haloex: %s wait timed out: %s\n", transport_.c_str(), message.c_str());
            std::fflush(stderr);
            world_.abort(transport_ + " wait timed out: " + message, 3);
        }
        std::this_thread::sleep_for(20ms);
    }
}

}  // namespace haloex::nvshmem_detail
