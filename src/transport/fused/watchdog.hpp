#pragma once
// The host side of hang-proof waits: a thread that polls the mapped
// diagnostics a timed-out kernel leaves behind, prints them and aborts the
// whole job (World::abort, i.e. MPI_Abort under MPI), so no rank hangs.
#include <atomic>
#include <functional>
#include <string>
#include <thread>

#include "haloex/runtime/world.hpp"
#include "wait_diagnostics.hpp"

namespace haloex::nvshmem_detail {

// The device-side wait limit in seconds: `option` when positive, else
// HALOEX_WAIT_TIMEOUT when set and positive, else 120 s (long enough for
// search and checkpoint steps on the peers).
double waitTimeoutSeconds(double option);

class Watchdog {
public:
    // describe(d) turns a recorded timeout into the message for the user;
    // `transport` names whose wait it was ("nvshmem wait timed out: ...").
    Watchdog(runtime::World& world, const WaitDiagnostics* diagnostics,
             std::function<std::string(const WaitDiagnostics&)> describe, std::string transport = "nvshmem");
    Watchdog(const Watchdog&) = delete;
    Watchdog& operator=(const Watchdog&) = delete;
    ~Watchdog();

    // The message of a timeout that has been recorded, or empty (main thread
    // checks this at synchronisation points to fail with a clean error).
    std::string pendingTimeout() const;

private:
    void run();
    runtime::World& world_;
    const WaitDiagnostics* diagnostics_;
    std::function<std::string(const WaitDiagnostics&)> describe_;
    std::string transport_;
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

}  // namespace haloex::nvshmem_detail
