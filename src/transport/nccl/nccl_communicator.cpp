// The NCCL communicator over a World (haloex/detail/nccl/communicator.hpp).
#include "haloex/detail/nccl/communicator.hpp"

#include <fmt/format.h>
#include <span>

#include "haloex/core/error.hpp"
#include "haloex/cuda/device_select.hpp"

namespace haloex::nccl {

void throwNcclError(ncclResult_t status, const char* call, const char* file, int line) {
    throwError(ErrorKind::Nccl, fmt::format("{} failed: {} (NCCL {}) at {}:{}; rerun with NCCL_DEBUG=WARN for "
                                            "NCCL's own explanation",
                                            call, ncclGetErrorString(status), ncclGetLastError(nullptr), file, line));
}

ncclComm_t createCommunicator(runtime::World& world, std::string_view user, std::string_view alternatives) {
    if (const std::string shared = cuda::describeSharedGpu(cuda::gatherGpuIdentities(world)); !shared.empty()) {
        throwError(ErrorKind::Nccl, fmt::format("{} cannot run here: NCCL refuses two ranks on one GPU ({}); run "
                                                "one rank per GPU, or use {}",
                                                user, shared, alternatives));
    }
    ncclUniqueId id{};
    if (world.rank() == 0) HALOEX_NCCL_CHECK(ncclGetUniqueId(&id));
    world.broadcastBytes(std::as_writable_bytes(std::span(&id, 1)), 0);
    ncclComm_t comm = nullptr;
    HALOEX_NCCL_CHECK(ncclCommInitRank(&comm, world.size(), id, world.rank()));
    return comm;
}

}  // namespace haloex::nccl
