// The `staged` transport in device memory: CPU-orchestrated, host-staged
// (pack on the GPU, copy to pinned host memory, World::sendRecvBytes, copy
// back, unpack). Works with any MPI, CUDA-aware or not.
#include "staged_transport.hpp"

#include <cuda_runtime.h>

#include "halo_kernels.hpp"
#include "haloex/cuda/check.hpp"
#include "haloex/transport/coordinate_force_exchange.hpp"
#include "staged_path.hpp"

namespace haloex::transport {
namespace {

// Message tags of this transport (the World is shared with set-up traffic).
constexpr int kTagForward = 2000;
constexpr int kTagReverse = 3000;

// The MD step's exchange on the caller's arrays: the staged path per pulse.
class StagedCoordinateForceExchange final : public CoordinateForceExchange {
public:
    explicit StagedCoordinateForceExchange(runtime::World& world) : path_(world) {}

    void bind(const plan::ParticleHaloPlan& plan, const SharedArray& coordinates, const SharedArray& forces) override {
        plan_ = plan;
        x_ = static_cast<Vec3f*>(coordinates.data);
        f_ = static_cast<Vec3f*>(forces.data);
        maps_.upload(plan_);
    }
    void forwardCoordinates(const plan::Box& box, StreamHandle stream) override {
        counters_.hostSyncs += path_.forward(plan_, maps_, reinterpret_cast<std::byte*>(x_), sizeof(Vec3f), &box,
                                             static_cast<cudaStream_t>(stream), kTagForward);
        ++counters_.forwardCalls;
    }
    void reverseForces(StreamHandle stream) override {
        counters_.hostSyncs += path_.reverseAdd(plan_, maps_, f_, static_cast<cudaStream_t>(stream), kTagReverse);
        ++counters_.reverseCalls;
    }
    // Peers never touch this rank's memory, so no ordering beyond the stream.
    void clearForces(StreamHandle stream) override {
        if (plan_.numLocal > 0) {
            HALOEX_CUDA_CHECK(cudaMemsetAsync(f_, 0, static_cast<std::size_t>(plan_.numLocal) * sizeof(Vec3f),
                                              static_cast<cudaStream_t>(stream)));
        }
    }
    bool graphCapturable() const override { return false; }
    const TransportCounters& counters() const override { return counters_; }
    std::vector<std::string> describe() const override {
        return {"staged: device memory; per pulse pack kernel, copy to pinned host memory, 1 host sync, "
                "World::sendRecv, copy back"};
    }

private:
    plan::ParticleHaloPlan plan_;
    Vec3f* x_ = nullptr;
    Vec3f* f_ = nullptr;
    cuda::DevicePulseMaps maps_;
    cuda::StagedPath path_;
    TransportCounters counters_;
};

class StagedDeviceTransport final : public BlockTransport {
public:
    explicit StagedDeviceTransport(runtime::World& world) : world_(world), path_(world) {}

    std::string name() const override { return "staged"; }
    MemorySpace memorySpace() const override { return MemorySpace::Device; }
    void exchangeBlocks(std::span<const BlockExchange> blocks, StreamHandle stream) override {
        path_.exchangeBlocks(blocks, static_cast<cudaStream_t>(stream));
    }
    std::unique_ptr<CoordinateForceExchange> makeCoordinateForceExchange() override {
        return std::make_unique<StagedCoordinateForceExchange>(world_);
    }
    std::vector<std::string> describe() const override {
        return {"staged: exchangeBlocks: sends copied out by runs, 1 host sync, one World::sendRecvMany, receives "
                "copied in"};
    }

private:
    runtime::World& world_;
    cuda::StagedPath path_;
};

}  // namespace

std::unique_ptr<BlockTransport> makeStagedDeviceTransport(runtime::World& world) {
    return std::make_unique<StagedDeviceTransport>(world);
}

}  // namespace haloex::transport
