#pragma once
// NCCL point-to-point between the benchmark's ranks, or why there is none
// (nccl_pair.cpp with NCCL: the library's communicator; nccl_pair_unavailable.cpp
// without: the configure-time reason). Plain C++ and the CUDA runtime: the
// measurements need no NCCL header and no #if.
#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <string>

#include "haloex/runtime/world.hpp"

namespace haloex::commbench {

class NcclPair {
public:
    virtual ~NcclPair() = default;
    // Stream-ordered ncclSend / ncclRecv of `bytes` bytes; throw Error(Nccl) on failure.
    virtual void send(const void* data, std::size_t bytes, int peer, cudaStream_t stream) = 0;
    virtual void recv(void* data, std::size_t bytes, int peer, cudaStream_t stream) = 0;
};

// Collective, on the ranks' current GPUs. Null, with `why` set, where NCCL
// cannot run: a build without NCCL, or two ranks on one GPU (NCCL refuses it).
std::unique_ptr<NcclPair> connectNccl(runtime::World& world, std::string& why);

}  // namespace haloex::commbench
