// The load/store instantiation of the fused exchange kernels
// (fused_exchange.cuh): coordinates forward, forces back, through peer
// pointers only. Whole-program compiled: no -rdc, no NVSHMEM.
#include "loadstore_kernels.hpp"

#include "fused_exchange.cuh"
#include "haloex/cuda/check.hpp"
#include "haloex/detail/cuda/dependent_launch.cuh"

namespace haloex::nvshmem_detail {
namespace {

constexpr auto loadStoreForward = fusedForward<Vec3f, LoadStorePeers>;
constexpr auto loadStoreReverse = fusedReverse<Vec3f, LoadStorePeers>;

}  // namespace

void launchLoadStoreForward(const FusedArgs& args, int blocksPerPulse, cudaStream_t stream) {
    cuda::launchDependent(loadStoreForward, dim3(blocksPerPulse, args.numPulses), kFusedThreads, 0, stream, args);
}

void launchLoadStoreReverse(const FusedArgs& args, int blocksPerPulse, cudaStream_t stream) {
    cuda::launchDependent(loadStoreReverse, dim3(blocksPerPulse, args.numPulses), kFusedThreads, 0, stream, args);
}

int maxResidentLoadStoreBlocks() { return maxResidentFusedBlocksOf<Vec3f, LoadStorePeers>(); }

}  // namespace haloex::nvshmem_detail
