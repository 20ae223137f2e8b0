#pragma once
// The fused exchange kernels with the load/store peer access (no put path,
// no NVSHMEM, no relocatable device code), for coordinates and forces as
// Vec3f: what a GPU-initiated transport over peer-mapped memory launches
// (NCCL's LSA windows, CUDA IPC mappings). In haloex_cuda.
#include <cuda_runtime.h>

#include "fused_args.hpp"

namespace haloex::nvshmem_detail {

// Grid (blocksPerPulse, numPulses); every block must be resident at once
// (the caller bounds blocksPerPulse * numPulses by maxResidentLoadStoreBlocks()).
void launchLoadStoreForward(const FusedArgs& args, int blocksPerPulse, cudaStream_t stream);
void launchLoadStoreReverse(const FusedArgs& args, int blocksPerPulse, cudaStream_t stream);
// Blocks of both kernels that fit on the current device at once.
int maxResidentLoadStoreBlocks();

}  // namespace haloex::nvshmem_detail
