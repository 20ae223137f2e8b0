#pragma once
// The receive side of the nvshmem transport's search-step blocks
// (exchangeBlock): a one-thread kernel that waits, with the transport's time
// limit and diagnostics, for the sender's put-with-signal.
#include <cuda_runtime.h>

#include <cstdint>

#include "wait_diagnostics.hpp"

namespace haloex::nvshmem_detail {

struct BlockWaitArgs {
    const std::uint64_t* signal = nullptr;  // symmetric; the sender sets it to `expected`
    std::uint64_t expected = 0;
    int peer = -1;  // the sending rank (for the diagnostic)
    WaitDiagnostics* diagnostics = nullptr;
    int* abortFlag = nullptr;
    std::uint64_t timeoutNs = 0;
    int myRank = 0;
};

void launchBlockWait(const BlockWaitArgs& args, cudaStream_t stream);

}  // namespace haloex::nvshmem_detail
