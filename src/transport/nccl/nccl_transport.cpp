// The `nccl` transport: one stream-ordered NCCL send/receive pair per pulse.
#include <nccl.h>

#include <climits>
#include <fmt/format.h>

#include "halo_kernels.hpp"
#include "haloex/cuda/check.hpp"
#include "haloex/detail/nccl/communicator.hpp"
#include "haloex/transport/coordinate_force_exchange.hpp"
#include "nccl_transport.hpp"

namespace haloex::transport {
namespace {

bool capturing(cudaStream_t stream) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    HALOEX_CUDA_CHECK(cudaStreamIsCapturing(stream, &status));
    return status != cudaStreamCaptureStatusNone;
}

// One pulse: `sendBytes` bytes to `dest`, `recvBytes` from `src`. Both peers
// know both counts from the plan, so empty halves are skipped on both sides
// alike.
void exchangeGroup(ncclComm_t comm, const void* send, std::size_t sendBytes, int dest, void* recv,
                   std::size_t recvBytes, int src, cudaStream_t stream) {
    const bool sending = dest >= 0 && sendBytes > 0;
    const bool receiving = src >= 0 && recvBytes > 0;
    if (!sending && !receiving) return;
    HALOEX_NCCL_CHECK(ncclGroupStart());
    if (sending) HALOEX_NCCL_CHECK(ncclSend(send, sendBytes, ncclUint8, dest, comm, stream));
    if (receiving) HALOEX_NCCL_CHECK(ncclRecv(recv, recvBytes, ncclUint8, src, comm, stream));
    HALOEX_NCCL_CHECK(ncclGroupEnd());
}

// The MD step's exchange on the caller's arrays: per pulse a pack kernel and
// one send/receive group, stream-ordered, no host syncs.
class NcclCoordinateForceExchange final : public CoordinateForceExchange {
public:
    explicit NcclCoordinateForceExchange(ncclComm_t comm) : comm_(comm) {}

    void bind(const plan::ParticleHaloPlan& plan, const SharedArray& coordinates, const SharedArray& forces) override {
        plan_ = plan;
        connected_ = false;
        x_ = static_cast<Vec3f*>(coordinates.data);
        f_ = static_cast<Vec3f*>(forces.data);
        const auto maxSend = static_cast<std::size_t>(std::max(plan_.maxSendCount(), 1));
        send_.resize(maxSend);
        forceRecv_.resize(maxSend);
        maps_.upload(plan_);
    }

    void forwardCoordinates(const plan::Box& box, StreamHandle streamHandle) override {
        const auto stream = static_cast<cudaStream_t>(streamHandle);
        requireConnectedIfCapturing(stream, "forwardCoordinates");
        for (const plan::Pulse& p : plan_.pulses) {
            const int count = p.sends() ? p.sendCount() : 0;
            cuda::packCoordinates(x_, maps_.pulse(p.id), count, cuda::pulseShift(p, box), send_.data(), stream);
            // Stream order: the next pulse's pack runs after this receive.
            exchangeGroup(comm_, send_.data(), bytesOf(count), p.sendRank, x_ + p.recvOffset,
                          bytesOf(p.receives() ? p.recvCount : 0), p.recvRank, stream);
        }
        ++counters_.forwardCalls;
    }

    void reverseForces(StreamHandle streamHandle) override {
        const auto stream = static_cast<cudaStream_t>(streamHandle);
        requireConnectedIfCapturing(stream, "reverseForces");
        for (auto it = plan_.pulses.rbegin(); it != plan_.pulses.rend(); ++it) {
            const plan::Pulse& p = *it;
            const int ownerCount = p.sends() ? p.sendCount() : 0;
            exchangeGroup(comm_, f_ + p.recvOffset, bytesOf(p.receives() ? p.recvCount : 0), p.recvRank,
                          forceRecv_.data(), bytesOf(ownerCount), p.sendRank, stream);
            cuda::unpackAddForces(forceRecv_.data(), maps_.pulse(p.id), ownerCount, f_, stream);
        }
        ++counters_.reverseCalls;
        // Every peer of this plan has been met in both directions.
        if (!connected_ && !capturing(stream)) connected_ = true;
    }

    void clearForces(StreamHandle stream) override {
        if (plan_.numLocal > 0) {
            HALOEX_CUDA_CHECK(cudaMemsetAsync(f_, 0, bytesOf(plan_.numLocal), static_cast<cudaStream_t>(stream)));
        }
    }

    // NCCL point-to-point calls may be captured (NCCL >= 2.9): forward and
    // reverse neither block the host nor allocate (the buffers are sized in
    // bind), and NCCL keeps what a captured call needs alive with the graph.
    // Captured and uncaptured calls may mix on the communicator
    // (NCCL_GRAPH_MIXING_SUPPORT, on by default): the search steps' blocks go
    // uncaptured. Whether a run uses graphs is the application's choice
    // (haloex-md --cuda-graphs).
    bool graphCapturable() const override { return true; }
    const TransportCounters& counters() const override { return counters_; }
    std::vector<std::string> describe() const override {
        int version = 0;
        ncclGetVersion(&version);
        return {fmt::format("nccl: NCCL {}, one ncclSend/ncclRecv group per pulse on the stream, no host syncs, "
                            "capturable in CUDA graphs",
                            version)};
    }

private:
    static std::size_t bytesOf(int count) { return static_cast<std::size_t>(count) * sizeof(Vec3f); }

    // NCCL connects to a peer inside the first send/receive that involves it
    // (buffers, IPC handles, a host handshake): keep that out of a capture.
    // The MD backend and halo-stress exchange once uncaptured after every
    // bind, before they capture.
    void requireConnectedIfCapturing(cudaStream_t stream, const char* call) const {
        if (connected_ || plan_.pulses.empty() || !capturing(stream)) return;
        throwError(ErrorKind::InvalidInput,
                   fmt::format("nccl {}: captured in a CUDA graph before this plan's first exchange; NCCL connects "
                               "to new peers in its first send/receive, which must not be captured: run one "
                               "gatherCoordinates/scatterAddForces pair uncaptured after setPlan, then capture",
                               call));
    }

    ncclComm_t comm_;
    plan::ParticleHaloPlan plan_;
    Vec3f* x_ = nullptr;
    Vec3f* f_ = nullptr;
    cuda::DeviceBuffer<Vec3f> send_, forceRecv_;
    cuda::DevicePulseMaps maps_;
    TransportCounters counters_;
    bool connected_ = false;  // an uncaptured forward/reverse pair has run since bind
};

class NcclTransport final : public BlockTransport {
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

    std::unique_ptr<CoordinateForceExchange> makeCoordinateForceExchange() override {
        return std::make_unique<NcclCoordinateForceExchange>(comm_);
    }
    std::vector<std::string> describe() const override {
        return {"nccl: exchangeBlocks: one ncclSend/ncclRecv group per call on the stream"};
    }

private:
    ncclComm_t comm_ = nullptr;
};

}  // namespace

std::unique_ptr<BlockTransport> makeNcclTransport(runtime::World& world) {
    return std::make_unique<NcclTransport>(world);
}

}  // namespace haloex::transport
