#pragma once
// Launcher of the fused Jacobi kernel (fused_jacobi_kernels.cu).
#include <cuda_runtime.h>

#include "fused_jacobi_args.hpp"

namespace haloex::jacobi::fused {

// `blocks` must not exceed maxResidentJacobiBlocks().
void launchJacobiFused(const JacobiArgs& args, int blocks, cudaStream_t stream);

// Blocks of the fused Jacobi kernel that fit on the current device at once.
int maxResidentJacobiBlocks();

// The default grid: kJacobiDefaultBlocksPerSm per SM, or fewer where fewer fit.
int defaultJacobiBlocks();

// Loads the kernel's code now (CUDA's lazy loading may otherwise synchronise
// the context at the first launch, while a peer's kernel already waits).
void loadJacobiKernel();

}  // namespace haloex::jacobi::fused
