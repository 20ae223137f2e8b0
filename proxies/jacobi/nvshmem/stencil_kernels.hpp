#pragma once
// Launcher of the fused Jacobi kernel (stencil_kernels.cu).
#include <cuda_runtime.h>

#include "stencil_args.hpp"

namespace haloex::nvshmem_detail {

// `blocks` must not exceed maxResidentJacobiBlocks().
void launchJacobiFused(const JacobiArgs& args, int blocks, cudaStream_t stream);

// Blocks of the fused Jacobi kernel that fit on the current device at once.
int maxResidentJacobiBlocks();

}  // namespace haloex::nvshmem_detail
