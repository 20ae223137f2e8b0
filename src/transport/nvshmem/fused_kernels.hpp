#pragma once
// Launchers of the fused exchange kernels (fused_kernels.cu).
#include <cuda_runtime.h>

#include "fused_args.hpp"

namespace haloex::nvshmem_detail {

// Grid (blocksPerPulse, numPulses); every block must be resident at once
// (the caller bounds blocksPerPulse * numPulses by maxResidentFusedBlocks()).
// `launched` (may be null): a launch-completion event of the kernel
// (CoordinateForceExchange::signalForwardLaunched).
void launchFusedPackCommX(const FusedArgs& args, int blocksPerPulse, cudaStream_t stream,
                          cudaEvent_t launched = nullptr);
void launchFusedCommUnpackF(const FusedArgs& args, int blocksPerPulse, cudaStream_t stream);
// The intermediate design, as an ablation: grid (blocksPerPulse, 1) per
// pulse, coordinates in pulse order, forces in reverse; same kernels, same
// signals and exchange counter (docs/nvshmem.md#per-pulse-launches-the-ablation).
void launchPackCommXPerPulse(FusedArgs args, int blocksPerPulse, cudaStream_t stream);
void launchCommUnpackFPerPulse(FusedArgs args, int blocksPerPulse, cudaStream_t stream);

// Blocks of the fused kernels that fit on the current device at once.
int maxResidentFusedBlocks();

}  // namespace haloex::nvshmem_detail
