// NCCL point-to-point over the library's communicator (nccl_pair.hpp).
#include "nccl_pair.hpp"

#include <nccl.h>

#include <fmt/format.h>

#include "haloex/cuda/device_select.hpp"
#include "haloex/detail/nccl/communicator.hpp"

namespace haloex::commbench {
namespace {

class Pair final : public NcclPair {
public:
    explicit Pair(runtime::World& world)
        : comm_(nccl::createCommunicator(world, "the NCCL measurements", "--skip-cpu-orchestrated")) {}
    ~Pair() override { ncclCommDestroy(comm_); }
    Pair(const Pair&) = delete;
    Pair& operator=(const Pair&) = delete;

    void send(const void* data, std::size_t bytes, int peer, cudaStream_t stream) override {
        HALOEX_NCCL_CHECK(ncclSend(data, bytes, ncclChar, peer, comm_, stream));
    }
    void recv(void* data, std::size_t bytes, int peer, cudaStream_t stream) override {
        HALOEX_NCCL_CHECK(ncclRecv(data, bytes, ncclChar, peer, comm_, stream));
    }

private:
    ncclComm_t comm_;
};

}  // namespace

std::unique_ptr<NcclPair> connectNccl(runtime::World& world, std::string& why) {
    const auto gpus = cuda::gatherGpuIdentities(world);
    if (const auto shared = cuda::findSharedGpu(gpus)) {
        why = fmt::format("NCCL refuses two ranks on one GPU (ranks {} and {} share {}); run one rank per GPU",
                          shared->first, shared->second, gpus[static_cast<std::size_t>(shared->first)].busId);
        return nullptr;
    }
    return std::make_unique<Pair>(world);
}

}  // namespace haloex::commbench
