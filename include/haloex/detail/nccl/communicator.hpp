#pragma once
// The NCCL communicator over a World, and NCCL's errors as haloex errors
// (library haloex_nccl): shared by the nccl transport, the nccl-device
// provider of peer memory and the micro-benchmarks, so all bootstrap alike.
#include <nccl.h>

#include <string_view>

#include "haloex/runtime/world.hpp"

namespace haloex::nccl {

[[noreturn]] void throwNcclError(ncclResult_t status, const char* call, const char* file, int line);

#define HALOEX_NCCL_CHECK(call)                                                             \
    do {                                                                                    \
        const ncclResult_t haloex_nccl_status_ = (call);                                    \
        if (haloex_nccl_status_ != ncclSuccess)                                             \
            ::haloex::nccl::throwNcclError(haloex_nccl_status_, #call, __FILE__, __LINE__); \
    } while (0)

// Collective over `world`, on each rank's current CUDA device: rank 0's
// unique id broadcast over the World, then ncclCommInitRank. NCCL refuses two
// ranks on one GPU, so the ranks' GPUs are compared first: Error(Nccl) names
// the ranks and the bus id, with `user` ("the nccl transport") saying who
// cannot run and `alternatives` what to use instead.
ncclComm_t createCommunicator(runtime::World& world, std::string_view user, std::string_view alternatives);

}  // namespace haloex::nccl
