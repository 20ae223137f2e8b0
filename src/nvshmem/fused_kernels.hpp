#pragma once
// Launchers of the fused exchange kernels (fused_kernels.cu).
#include <cuda_runtime.h>

#include "fused_args.hpp"

namespace haloex::nvshmem_detail {

inline constexpr int kFusedThreads = 256;

// Grid (blocksPerPulse, numPulses); every block must be resident at once
// (the caller bounds blocksPerPulse * numPulses by maxResidentFusedBlocks()).
void launchFusedPackCommX(const FusedArgs& args, int blocksPerPulse, cudaStream_t stream);
void launchFusedCommUnpackF(const FusedArgs& args, int blocksPerPulse, cudaStream_t stream);

// Blocks of the fused kernels that fit on the current device at once.
int maxResidentFusedBlocks();
int multiprocessorCount();

}  // namespace haloex::nvshmem_detail
