#pragma once
// What a timed-out device-side wait leaves for the host watchdog (in mapped,
// page-locked host memory written by the kernel).
#include <cstdint>
#include <string>

namespace haloex::nvshmem_detail {

struct WaitDiagnostics {
    enum Kernel : int { CoordinateKernel = 0, ForceKernel = 1, SearchExchange = 2 };
    enum What : int {
        CoordinateReceive = 0,     // this rank's receive signal of a pulse
        CoordinateDependency = 1,  // an earlier pulse's receive, before packing forwarded atoms
        ForceReady = 2,            // the peer's "halo forces complete" (pull) or its force put
        ForceDependency = 3,       // a later pulse's accumulation on this rank (done-word)
        BlockReceive = 4,          // a search-step block (exchangeBlock) from the peer
    };
    int claimed = 0;  // first timeout wins
    int ready = 0;    // set last, after the fields
    int rank = -1;
    int kernel = 0;
    int what = 0;
    int pulse = -1;
    int peer = -1;
    std::uint64_t expected = 0;
    std::uint64_t seen = 0;
    std::uint64_t waitedNs = 0;
};

// One line for the user: who waited, for what, from whom, and the values.
std::string describeTimeout(const WaitDiagnostics& d, const char* pulseName);

}  // namespace haloex::nvshmem_detail
