#pragma once
// Counts the CUDA calls that block the host on the device -- stream, event
// and device synchronisation, synchronous copies and memsets -- made by one
// host thread while counting is on, through CUPTI's callback API. It sees
// every library's calls (CUB, NCCL, NVSHMEM), not only those haloex counts
// itself (TransportCounters::hostSyncs), so it is the independent check of
// "no host synchronisation inside a step".
//
// CUPTI is loaded at run time (dlopen of libcupti from the CUDA toolkit), so
// nothing links against it; only one CUPTI subscriber may exist per process.
// Runtime calls are counted by their runtime name; a driver call is counted
// only when no runtime call of the same thread is in progress (a runtime
// synchronisation reaches the driver too, and counts once).
#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace haloex::cuda {

class ApiSyncCounter {
public:
    // Subscribes to CUPTI. Throws Error(Cuda) naming the reason when
    // CUPTI cannot be loaded or subscribed (another tool already is).
    ApiSyncCounter();
    ~ApiSyncCounter();
    ApiSyncCounter(const ApiSyncCounter&) = delete;
    ApiSyncCounter& operator=(const ApiSyncCounter&) = delete;

    // Counting on or off, for the calling thread's calls only (other threads,
    // e.g. NVSHMEM's proxy or NCCL's, are not the step's critical path).
    void setCounting(bool on);
    std::int64_t total() const;
    // Calls counted, by API function name (version suffixes removed).
    std::map<std::string, std::int64_t> byFunction() const;

    // Whether `name` (a CUDA runtime or driver API function, suffixes such as
    // _v2 or _ptsz allowed) blocks the host on the device.
    static bool isHostBlocking(const std::string& name);

    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace haloex::cuda
