// The `nccl` transport: one stream-ordered NCCL send/receive pair per pulse.
#include <nccl.h>

#include <climits>
#include <fmt/format.h>

#include "halo_kernels.hpp"
#include "haloex/nccl/communicator.hpp"
#include "haloex/cuda/check.hpp"
#include "haloex/transport/nccl.hpp"

namespace haloex::transport {
namespace {

class NcclTransport final : public ParticleTransport {
public:
    explicit NcclTransport(runtime::World& world)
        : comm_(nccl::createCommunicator(world, "the nccl transport", "the staged, ipc or nvshmem transport")) {}
    ~NcclTransport() override {
        if (comm_) ncclCommDestroy(comm_);
    }
    NcclTransport(const NcclTransport&) = delete;
    NcclTransport& operator=(const NcclTransport&) = delete;

    std::string name() const override { return "nccl"; }
    MemorySpace memorySpace() const override { return MemorySpace::Device; }

    void setPlan(const plan::ParticleHaloPlan& plan) override {
        plan_ = plan;
        connected_ = false;
        const auto n = static_cast<std::size_t>(plan_.numLocal);
        x_.resizeZeroedWhenGrown(n);
        f_.resizeZeroedWhenGrown(n);
        const auto maxSend = static_cast<std::size_t>(std::max(plan_.maxSendCount(), 1));
        send_.resize(maxSend * sizeof(Vec3f));
        forceRecv_.resize(maxSend);
        maps_.upload(plan_);
    }
    const plan::ParticleHaloPlan& plan() const override { return plan_; }
    Vec3f* coordinates() override { return x_.data(); }
    Vec3f* forces() override { return f_.data(); }

    void forwardCoordinates(const plan::Box& box, StreamHandle streamHandle) override {
        const auto stream = static_cast<cudaStream_t>(streamHandle);
        requireConnectedIfCapturing(stream, "forwardCoordinates");
        auto* packed = reinterpret_cast<Vec3f*>(send_.data());
        for (const plan::Pulse& p : plan_.pulses) {
            const int count = p.sends() ? p.sendCount() : 0;
            cuda::packCoordinates(x_.data(), maps_.pulse(p.id), count, cuda::pulseShift(p, box), packed, stream);
            // Stream order: the next pulse's pack runs after this receive.
            exchange(packed, count, p.sendRank, x_.data() + p.recvOffset, p.receives() ? p.recvCount : 0, p.recvRank,
                     sizeof(Vec3f), stream);
        }
        ++counters_.forwardCalls;
    }

    void reverseForces(StreamHandle streamHandle) override {
        const auto stream = static_cast<cudaStream_t>(streamHandle);
        requireConnectedIfCapturing(stream, "reverseForces");
        for (auto it = plan_.pulses.rbegin(); it != plan_.pulses.rend(); ++it) {
            const plan::Pulse& p = *it;
            const int ownerCount = p.sends() ? p.sendCount() : 0;
            exchange(f_.data() + p.recvOffset, p.receives() ? p.recvCount : 0, p.recvRank, forceRecv_.data(),
                     ownerCount, p.sendRank, sizeof(Vec3f), stream);
            cuda::unpackAddForces(forceRecv_.data(), maps_.pulse(p.id), ownerCount, f_.data(), stream);
        }
        ++counters_.reverseCalls;
        // Every peer of this plan has been met in both directions.
        if (!connected_ && !capturing(stream)) connected_ = true;
    }

    void clearForces(StreamHandle stream) override { f_.zeroAsync(static_cast<cudaStream_t>(stream)); }

    void forwardBytes(void* data, std::size_t elementSize, StreamHandle streamHandle) override {
        HALOEX_ASSERT(elementSize > 0, "forwardBytes needs a positive element size");
        const auto stream = static_cast<cudaStream_t>(streamHandle);
        const auto maxSend = static_cast<std::size_t>(std::max(plan_.maxSendCount(), 1));
        if (send_.size() < maxSend * elementSize) {
            // Growing frees the old buffer, which queued sends may still read.
            HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
            send_.resize(maxSend * elementSize);
        }
        auto* bytes = static_cast<std::byte*>(data);
        for (const plan::Pulse& p : plan_.pulses) {
            const int count = p.sends() ? p.sendCount() : 0;
            cuda::packElements(bytes, elementSize, maps_.pulse(p.id), count, send_.data(), stream);
            exchange(send_.data(), count, p.sendRank, bytes + static_cast<std::size_t>(p.recvOffset) * elementSize,
                     p.receives() ? p.recvCount : 0, p.recvRank, elementSize, stream);
        }
    }

    // Search steps: one NCCL send/receive pair on the stream, device to device.
    void exchangeBlock(const void* send, std::size_t sendBytes, int dest, void* recv, std::size_t recvBytes, int src,
                       StreamHandle stream) override {
        HALOEX_ASSERT(sendBytes <= static_cast<std::size_t>(INT_MAX) && recvBytes <= static_cast<std::size_t>(INT_MAX),
                      "exchangeBlock: blocks of at most 2 GiB");
        exchange(send, static_cast<int>(sendBytes), dest, recv, static_cast<int>(recvBytes), src, 1,
                 static_cast<cudaStream_t>(stream));
    }

    // Independent blocks: one group of every block's send and receive.
    void exchangeBlocks(std::span<const BlockExchange> blocks, StreamHandle streamHandle) override {
        const auto stream = static_cast<cudaStream_t>(streamHandle);
        HALOEX_NCCL_CHECK(ncclGroupStart());
        for (const BlockExchange& b : blocks) {
            HALOEX_ASSERT(b.sendBytes <= static_cast<std::size_t>(INT_MAX) &&
                              b.recvBytes <= static_cast<std::size_t>(INT_MAX),
                          "exchangeBlocks: blocks of at most 2 GiB");
            if (b.dest >= 0 && b.sendBytes > 0)
                HALOEX_NCCL_CHECK(ncclSend(b.send, b.sendBytes, ncclUint8, b.dest, comm_, stream));
            if (b.src >= 0 && b.recvBytes > 0)
                HALOEX_NCCL_CHECK(ncclRecv(b.recv, b.recvBytes, ncclUint8, b.src, comm_, stream));
        }
        HALOEX_NCCL_CHECK(ncclGroupEnd());
    }

    const TransportCounters& counters() const override { return counters_; }
    std::vector<std::string> describe() const override {
        int version = 0;
        ncclGetVersion(&version);
        return {fmt::format("nccl: NCCL {}, one ncclSend/ncclRecv group per pulse on the stream, no host syncs, "
                            "capturable in CUDA graphs",
                            version)};
    }
    // NCCL point-to-point calls may be captured (NCCL >= 2.9): forward and
    // reverse neither block the host nor allocate (the buffers are sized in
    // setPlan), and NCCL keeps what a captured call needs alive with the
    // graph. Captured and uncaptured calls may mix on the communicator
    // (NCCL_GRAPH_MIXING_SUPPORT, on by default): the search steps' blocks
    // and static data go uncaptured. Whether a run uses graphs is the
    // application's choice (haloex-md --cuda-graphs).
    bool graphCapturable() const override { return true; }

private:
    static bool capturing(cudaStream_t stream) {
        cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
        HALOEX_CUDA_CHECK(cudaStreamIsCapturing(stream, &status));
        return status != cudaStreamCaptureStatusNone;
    }

    // NCCL connects to a peer inside the first send/receive that involves it
    // (buffers, IPC handles, a host handshake): keep that out of a capture.
    // The MD backend and halo-stress exchange once uncaptured after every
    // setPlan, before they capture.
    void requireConnectedIfCapturing(cudaStream_t stream, const char* call) const {
        if (connected_ || plan_.pulses.empty() || !capturing(stream)) return;
        throwError(ErrorKind::InvalidInput,
                   fmt::format("nccl {}: captured in a CUDA graph before this plan's first exchange; NCCL connects "
                               "to new peers in its first send/receive, which must not be captured: run one "
                               "forwardCoordinates/reverseForces pair uncaptured after setPlan, then capture",
                               call));
    }

    // One pulse: `sendCount` elements to `dest`, `recvCount` from `src`.
    // Both peers know both counts from the plan, so empty halves are skipped
    // on both sides alike.
    void exchange(const void* send, int sendCount, int dest, void* recv, int recvCount, int src,
                  std::size_t elementSize, cudaStream_t stream) {
        const bool sending = dest >= 0 && sendCount > 0;
        const bool receiving = src >= 0 && recvCount > 0;
        if (!sending && !receiving) return;
        HALOEX_NCCL_CHECK(ncclGroupStart());
        if (sending) {
            HALOEX_NCCL_CHECK(
                ncclSend(send, static_cast<std::size_t>(sendCount) * elementSize, ncclUint8, dest, comm_, stream));
        }
        if (receiving) {
            HALOEX_NCCL_CHECK(
                ncclRecv(recv, static_cast<std::size_t>(recvCount) * elementSize, ncclUint8, src, comm_, stream));
        }
        HALOEX_NCCL_CHECK(ncclGroupEnd());
    }

    ncclComm_t comm_ = nullptr;
    plan::ParticleHaloPlan plan_;
    cuda::DeviceBuffer<Vec3f> x_, f_, forceRecv_;
    cuda::DeviceBuffer<std::byte> send_;
    cuda::DevicePulseMaps maps_;
    TransportCounters counters_;
    bool connected_ = false;  // an uncaptured forward/reverse pair has run since setPlan
};

}  // namespace

std::unique_ptr<ParticleTransport> makeNcclTransport(runtime::World& world) {
    return std::make_unique<NcclTransport>(world);
}

}  // namespace haloex::transport
