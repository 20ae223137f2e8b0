// The `staged` transport in device memory: CPU-orchestrated, host-staged
// (pack on the GPU, copy to pinned host memory, World::sendRecvBytes, copy
// back, unpack). Works with any MPI, CUDA-aware or not.
#include "haloex/transport/staged.hpp"

#include "halo_kernels.hpp"
#include "staged_path.hpp"

namespace haloex::transport {
namespace {

// Message tags of this transport (the World is shared with set-up traffic).
constexpr int kTagForward = 2000;
constexpr int kTagReverse = 3000;
constexpr int kTagBytes = 4000;

class StagedDeviceTransport final : public ParticleTransport {
public:
    explicit StagedDeviceTransport(runtime::World& world) : path_(world) {}

    std::string name() const override { return "staged"; }
    MemorySpace memorySpace() const override { return MemorySpace::Device; }

    void setPlan(const plan::ParticleHaloPlan& plan) override {
        plan_ = plan;
        const auto n = static_cast<std::size_t>(plan_.numLocal);
        x_.resizeZeroedWhenGrown(n);
        f_.resizeZeroedWhenGrown(n);
        maps_.upload(plan_);
    }
    const plan::ParticleHaloPlan& plan() const override { return plan_; }
    Vec3f* coordinates() override { return x_.data(); }
    Vec3f* forces() override { return f_.data(); }

    void forwardCoordinates(const plan::Box& box, StreamHandle stream) override {
        counters_.hostSyncs += path_.forward(plan_, maps_, reinterpret_cast<std::byte*>(x_.data()), sizeof(Vec3f), &box,
                                             static_cast<cudaStream_t>(stream), kTagForward);
        ++counters_.forwardCalls;
    }

    void reverseForces(StreamHandle stream) override {
        counters_.hostSyncs +=
            path_.reverseAdd(plan_, maps_, f_.data(), static_cast<cudaStream_t>(stream), kTagReverse);
        ++counters_.reverseCalls;
    }

    // Peers never touch this rank's memory, so no ordering beyond the stream.
    void clearForces(StreamHandle stream) override { f_.zeroAsync(static_cast<cudaStream_t>(stream)); }

    void forwardBytes(void* data, std::size_t elementSize, StreamHandle stream) override {
        HALOEX_ASSERT(elementSize > 0, "forwardBytes needs a positive element size");
        path_.forward(plan_, maps_, static_cast<std::byte*>(data), elementSize, nullptr,
                      static_cast<cudaStream_t>(stream), kTagBytes);
    }

    void exchangeBlock(const void* send, std::size_t sendBytes, int dest, void* recv, std::size_t recvBytes, int src,
                       StreamHandle stream) override {
        path_.exchangeBlock(send, sendBytes, dest, recv, recvBytes, src, static_cast<cudaStream_t>(stream));
    }
    void exchangeBlocks(std::span<const BlockExchange> blocks, StreamHandle stream) override {
        path_.exchangeBlocks(blocks, static_cast<cudaStream_t>(stream));
    }

    const TransportCounters& counters() const override { return counters_; }
    std::vector<std::string> describe() const override {
        return {"staged: device memory; per pulse pack kernel, copy to pinned host memory, 1 host sync, "
                "World::sendRecv, copy back"};
    }

private:
    plan::ParticleHaloPlan plan_;
    cuda::DeviceBuffer<Vec3f> x_, f_;
    cuda::DevicePulseMaps maps_;
    cuda::StagedPath path_;
    TransportCounters counters_;
};

}  // namespace

std::unique_ptr<ParticleTransport> makeStagedDeviceTransport(runtime::World& world) {
    return std::make_unique<StagedDeviceTransport>(world);
}

}  // namespace haloex::transport
