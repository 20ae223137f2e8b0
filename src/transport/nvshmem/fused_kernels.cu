// The NVSHMEM instantiation of the fused exchange kernels
// (fused_exchange.cuh): coordinates forward (fusedForward) and forces back
// (fusedReverse) as Vec3f, with NVSHMEM as the peer access -- its peer
// pointers for the direct and bulk paths, and put-with-signal for the put
// path. This translation unit is relocatable device code (NVSHMEM's device
// library); the kernels themselves are shared with any load/store policy.
#include <nvshmem.h>
#include <nvshmemx.h>

#include "fused_exchange.cuh"
#include "fused_kernels.hpp"
#include "haloex/cuda/check.hpp"
#include "haloex/detail/cuda/dependent_launch.cuh"

namespace haloex::nvshmem_detail {
namespace {

// NVSHMEM's peer access: load/store pointers (nvshmem_ptr) on NVLink, and a
// block-wide put-with-signal where the peer is reached through the proxy or
// a NIC.
struct NvshmemPeers {
    static constexpr bool kCanPut = true;
    template <class T>
    __device__ static void putWithSignal(T* dst, const T* src, std::size_t bytes, std::uint64_t* signal,
                                         std::uint64_t value, int pe) {
        nvshmemx_putmem_signal_nbi_block(dst, src, bytes, signal, value, NVSHMEM_SIGNAL_SET, pe);
    }
    __device__ static void signal(std::uint64_t* signal, std::uint64_t value, int pe) {
        nvshmemx_signal_op(signal, value, NVSHMEM_SIGNAL_SET, pe);
    }
};

constexpr auto fusedPackCommX = fusedForward<Vec3f, NvshmemPeers>;
constexpr auto fusedCommUnpackF = fusedReverse<Vec3f, NvshmemPeers>;

}  // namespace

void launchFusedPackCommX(const FusedArgs& args, int blocksPerPulse, cudaStream_t stream, cudaEvent_t launched) {
    const dim3 grid(blocksPerPulse, args.numPulses);
    cuda::launchDependentSignalling(launched, fusedPackCommX, grid, kFusedThreads, 0, stream, args);
}

void launchFusedCommUnpackF(const FusedArgs& args, int blocksPerPulse, cudaStream_t stream) {
    const dim3 grid(blocksPerPulse, args.numPulses);
    cuda::launchDependent(fusedCommUnpackF, grid, kFusedThreads, 0, stream, args);
}

// The ablation: the same kernels, one launch per pulse in stream order. Each
// launch waits for its own receive before it ends, so a pulse's forwarded
// atoms are home before the next launch packs them (its dependency waits are
// then already satisfied); only the last launch advances the counter.
void launchPackCommXPerPulse(FusedArgs args, int blocksPerPulse, cudaStream_t stream) {
    const dim3 grid(blocksPerPulse, 1);
    for (int p = 0; p < args.numPulses; ++p) {
        args.firstPulse = p;
        args.completesExchange = p == args.numPulses - 1;
        cuda::launchDependent(fusedPackCommX, grid, kFusedThreads, 0, stream, args);
    }
}

void launchCommUnpackFPerPulse(FusedArgs args, int blocksPerPulse, cudaStream_t stream) {
    const dim3 grid(blocksPerPulse, 1);
    for (int p = args.numPulses - 1; p >= 0; --p) {
        args.firstPulse = p;
        args.completesExchange = p == 0;
        cuda::launchDependent(fusedCommUnpackF, grid, kFusedThreads, 0, stream, args);
    }
}

int maxResidentFusedBlocks() { return maxResidentFusedBlocksOf<Vec3f, NvshmemPeers>(); }

}  // namespace haloex::nvshmem_detail
