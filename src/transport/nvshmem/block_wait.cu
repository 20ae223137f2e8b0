// exchangeBlock's receive wait (block_wait.hpp): NVSHMEM's own
// nvshmemx_signal_wait_until_on_stream has no time limit; this one reports
// who waited for whom through the transport's watchdog instead of hanging.
#include "block_wait.hpp"

#include "device_sync.cuh"
#include "haloex/cuda/check.hpp"

namespace haloex::nvshmem_detail {
namespace {

__global__ void blockWaitKernel(BlockWaitArgs a) {
    const WaitContext ctx{a.diagnostics, a.abortFlag, a.timeoutNs, a.myRank, WaitDiagnostics::SearchExchange};
    for (int i = 0; i < a.count; ++i) {
        const int b = a.block[i];
        if (!waitSignalGe(a.signals + b, a.expected, ctx, WaitDiagnostics::BlockReceive, b, a.peer[i])) return;
    }
}

}  // namespace

void launchBlockWait(const BlockWaitArgs& args, cudaStream_t stream) {
    blockWaitKernel<<<1, 1, 0, stream>>>(args);
    HALOEX_CUDA_CHECK_LAUNCH();
}

}  // namespace haloex::nvshmem_detail
