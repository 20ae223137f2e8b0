// The search-step blocks' kernels (search_blocks.hpp). The wait is timed:
// NVSHMEM's own nvshmemx_signal_wait_until_on_stream has no time limit; this
// one reports who waited for whom through the transport's watchdog instead of
// hanging.
#include "search_blocks.hpp"

#include <algorithm>

#include "device_sync.cuh"
#include "haloex/cuda/check.hpp"

namespace haloex::nvshmem_detail {
namespace {

constexpr int kCopyThreads = 256;
constexpr int kMaxCopyBlocksPerBlock = 64;  // CTAs per search-step block (blockIdx.x), grid-stride beyond

// blockIdx.y picks the block; its CTAs stride over its bytes, 16 at a time
// where both ends are 16-byte aligned (the slots always are).
__global__ void blockCopyKernel(BlockCopies c) {
    const int b = static_cast<int>(blockIdx.y);
    const auto* from = static_cast<const unsigned char*>(c.from[b]);
    auto* to = static_cast<unsigned char*>(c.to[b]);
    const std::size_t bytes = c.bytes[b];
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    const std::size_t first = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    std::size_t done = 0;
    if (((reinterpret_cast<std::uintptr_t>(from) | reinterpret_cast<std::uintptr_t>(to)) & 15u) == 0) {
        const std::size_t vectors = bytes / 16;
        const auto* in = reinterpret_cast<const uint4*>(from);
        auto* out = reinterpret_cast<uint4*>(to);
        for (std::size_t i = first; i < vectors; i += stride) out[i] = in[i];
        done = vectors * 16;
    }
    for (std::size_t i = done + first; i < bytes; i += stride) to[i] = from[i];
}

__global__ void blockSignalAndWaitKernel(BlockWaitArgs a) {
    // The copies before this kernel on the stream are complete: release them
    // to the peers with their signals.
    if (a.raiseCount > 0) __threadfence_system();
    for (int i = 0; i < a.raiseCount; ++i) releaseStoreSys(a.raise[i], a.expected);
    const WaitContext ctx{a.diagnostics, a.abortFlag, a.timeoutNs, a.myRank, WaitDiagnostics::SearchExchange};
    for (int i = 0; i < a.count; ++i) {
        const int b = a.block[i];
        if (!waitSignalGe(a.signals + b, a.expected, ctx, WaitDiagnostics::BlockReceive, b, a.peer[i])) return;
    }
}

}  // namespace

void launchBlockCopies(const BlockCopies& copies, cudaStream_t stream) {
    if (copies.count == 0) return;
    std::size_t largest = 0;
    for (int b = 0; b < copies.count; ++b) largest = std::max(largest, copies.bytes[b]);
    const std::size_t perCta = static_cast<std::size_t>(kCopyThreads) * 16;
    const auto ctas = static_cast<unsigned>(
        std::clamp<std::size_t>((largest + perCta - 1) / perCta, 1, static_cast<std::size_t>(kMaxCopyBlocksPerBlock)));
    blockCopyKernel<<<dim3(ctas, static_cast<unsigned>(copies.count)), kCopyThreads, 0, stream>>>(copies);
    HALOEX_CUDA_CHECK_LAUNCH();
}

void launchBlockSignalAndWait(const BlockWaitArgs& args, cudaStream_t stream) {
    blockSignalAndWaitKernel<<<1, 1, 0, stream>>>(args);
    HALOEX_CUDA_CHECK_LAUNCH();
}

}  // namespace haloex::nvshmem_detail
