#pragma once
// The receive side of the nvshmem transport's search-step blocks
// (exchangeBlock(s)): a one-thread kernel that waits, with the transport's
// time limit and diagnostics, for the senders' puts-with-signal of one call.
#include <cuda_runtime.h>

#include <cstdint>

#include "wait_diagnostics.hpp"

namespace haloex::nvshmem_detail {

// Blocks one exchangeBlocks call moves together (each has its own signal and
// staging slot): a grid halo's 26 neighbours fit; a call with more makes one
// exchange per block.
inline constexpr int kMaxBlocksPerCall = 32;

struct BlockWaitArgs {
    const std::uint64_t* signals = nullptr;  // symmetric, one per block of a call; senders set them to `expected`
    std::uint64_t expected = 0;
    int count = 0;                      // blocks this rank receives in the call
    int block[kMaxBlocksPerCall] = {};  // their index in the call (their signal)
    int peer[kMaxBlocksPerCall] = {};   // their senders (for the diagnostic)
    WaitDiagnostics* diagnostics = nullptr;
    int* abortFlag = nullptr;
    std::uint64_t timeoutNs = 0;
    int myRank = 0;
};

void launchBlockWait(const BlockWaitArgs& args, cudaStream_t stream);

}  // namespace haloex::nvshmem_detail
