#pragma once
// The device side of the GPU-initiated transports' search-step blocks
// (slotted_blocks.hpp: block b of a call lands in slot b of the receiver's
// staging and raises the receiver's signal b to the call's sequence number). nvshmem moves a block and
// its signal with one put-with-signal; the load/store transports (nccl-device)
// copy it into the peer's slot (launchBlockCopies), then raise the peer's
// signal. Either way one one-thread kernel (launchBlockSignalAndWait) then
// waits, with the transport's time limit and diagnostics, for the blocks of
// the call this rank receives.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "slotted_blocks.hpp"
#include "wait_diagnostics.hpp"

namespace haloex::nvshmem_detail {

// Blocks one exchangeBlocks call moves together (slotted_blocks.hpp).
inline constexpr int kMaxBlocksPerCall = transport::kMaxSlottedBlocks;

// Copies of one call into the peers' slots (load/store peer pointers).
struct BlockCopies {
    int count = 0;
    const void* from[kMaxBlocksPerCall] = {};
    void* to[kMaxBlocksPerCall] = {};
    std::size_t bytes[kMaxBlocksPerCall] = {};
};

struct BlockWaitArgs {
    // Peers' signals this rank raises to `expected` first (release, system
    // scope: after the copies queued before it), none for nvshmem.
    int raiseCount = 0;
    std::uint64_t* raise[kMaxBlocksPerCall] = {};
    const std::uint64_t* signals = nullptr;  // this rank's, one per block of a call; senders set them to `expected`
    std::uint64_t expected = 0;
    int count = 0;                      // blocks this rank receives in the call
    int block[kMaxBlocksPerCall] = {};  // their index in the call (their signal)
    int peer[kMaxBlocksPerCall] = {};   // their senders (for the diagnostic)
    WaitDiagnostics* diagnostics = nullptr;
    int* abortFlag = nullptr;
    std::uint64_t timeoutNs = 0;
    int myRank = 0;
};

void launchBlockCopies(const BlockCopies& copies, cudaStream_t stream);
void launchBlockSignalAndWait(const BlockWaitArgs& args, cudaStream_t stream);

}  // namespace haloex::nvshmem_detail
