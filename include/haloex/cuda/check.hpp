#pragma once
/// @file
/// Checks every CUDA runtime call: a failure throws haloex::Error(Cuda) naming
/// the call, the file and the line. Include only from code built with CUDA.
#include <cuda_runtime.h>

#include <string>

#include "haloex/core/error.hpp"

namespace haloex::cuda {

/// Throws Error(Cuda) naming the failed `call`, CUDA's error and where (HALOEX_CUDA_CHECK).
[[noreturn]] inline void throwCudaError(cudaError_t status, const char* call, const char* file, int line) {
    throwError(ErrorKind::Cuda, std::string(call) + " failed: " + cudaGetErrorName(status) + " (" +
                                    cudaGetErrorString(status) + ") at " + file + ":" + std::to_string(line));
}

}  // namespace haloex::cuda

/// Calls `call` (a CUDA runtime call) and throws Error(Cuda) unless it returned cudaSuccess.
#define HALOEX_CUDA_CHECK(call)                                                                                       \
    do {                                                                                                              \
        const cudaError_t haloex_status_ = (call);                                                                    \
        if (haloex_status_ != cudaSuccess) ::haloex::cuda::throwCudaError(haloex_status_, #call, __FILE__, __LINE__); \
    } while (0)

/// After a kernel launch: reports launch-configuration errors at once.
#define HALOEX_CUDA_CHECK_LAUNCH() HALOEX_CUDA_CHECK(cudaGetLastError())
