#include "staged_path.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "haloex/detail/transport/host_exchange.hpp"

namespace haloex::cuda {
namespace {

std::size_t maxSendElements(const plan::ParticleHaloPlan& plan) {
    return static_cast<std::size_t>(plan.maxSendCount());
}
std::size_t maxRecvElements(const plan::ParticleHaloPlan& plan) {
    int n = 0;
    for (const plan::Pulse& p : plan.pulses) n = std::max(n, p.recvCount);
    return static_cast<std::size_t>(n);
}

std::size_t sendBytesOf(const transport::BlockExchange& b) { return b.dest >= 0 ? b.sendBytes : 0; }
std::size_t recvBytesOf(const transport::BlockExchange& b) { return b.src >= 0 ? b.recvBytes : 0; }

// Copies between the blocks' device ranges (`deviceOf`, `bytesOf`) and one
// host buffer holding them back to back, one cudaMemcpyAsync per run of
// ranges that are adjacent in device memory.
template <class DeviceOf, class BytesOf>
void copyRuns(std::span<const transport::BlockExchange> blocks, std::byte* host, DeviceOf deviceOf, BytesOf bytesOf,
              cudaMemcpyKind kind, cudaStream_t stream) {
    std::byte* runDevice = nullptr;
    std::byte* runHost = host;
    std::size_t runBytes = 0;
    auto flush = [&] {
        if (runBytes == 0) return;
        void* dst = kind == cudaMemcpyDeviceToHost ? static_cast<void*>(runHost) : runDevice;
        const void* src = kind == cudaMemcpyDeviceToHost ? static_cast<const void*>(runDevice) : runHost;
        HALOEX_CUDA_CHECK(cudaMemcpyAsync(dst, src, runBytes, kind, stream));
        runHost += runBytes;
        runBytes = 0;
    };
    for (const transport::BlockExchange& b : blocks) {
        const std::size_t bytes = bytesOf(b);
        if (bytes == 0) continue;
        auto* device = static_cast<std::byte*>(const_cast<void*>(deviceOf(b)));
        if (runBytes > 0 && device != runDevice + runBytes) flush();
        if (runBytes == 0) runDevice = device;
        runBytes += bytes;
    }
    flush();
}

}  // namespace

void StagedPath::reserve(std::size_t sendBytes, std::size_t recvBytes) {
    sendBytes = std::max<std::size_t>(sendBytes, 1);
    recvBytes = std::max<std::size_t>(recvBytes, 1);
    if (sendBytes <= hostSend_.size() && recvBytes <= hostRecv_.size() && sendBytes <= deviceSend_.size() &&
        recvBytes <= deviceRecv_.size()) {
        return;
    }
    if (used_) HALOEX_CUDA_CHECK(cudaEventSynchronize(lastUse_));
    hostSend_.reserve(sendBytes);
    hostRecv_.reserve(recvBytes);
    deviceSend_.resize(std::max(sendBytes, deviceSend_.size()));
    deviceRecv_.resize(std::max(recvBytes, deviceRecv_.size()));
}

void StagedPath::beginCall(cudaStream_t stream) {
    // On the stream of the previous call the order is already there.
    if (used_ && stream != lastStream_) lastUse_.waitOn(stream);
}

void StagedPath::endCall(cudaStream_t stream) {
    lastUse_.record(stream);
    lastStream_ = stream;
    used_ = true;
}

std::int64_t StagedPath::forward(const plan::ParticleHaloPlan& plan, const DevicePulseMaps& maps, std::byte* data,
                                 std::size_t elementSize, const plan::Box* box, cudaStream_t stream, int tagBase) {
    HALOEX_ASSERT(box == nullptr || elementSize == sizeof(Vec3f), "shifted forward moves Vec3f coordinates");
    reserve(maxSendElements(plan) * elementSize, maxRecvElements(plan) * elementSize);
    beginCall(stream);
    std::int64_t syncs = 0;
    for (const plan::Pulse& pulse : plan.pulses) {
        const std::size_t sendBytes = pulse.sends() ? static_cast<std::size_t>(pulse.sendCount()) * elementSize : 0;
        const std::size_t recvBytes = pulse.receives() ? static_cast<std::size_t>(pulse.recvCount) * elementSize : 0;
        if (sendBytes > 0) {
            if (box) {
                packCoordinates(reinterpret_cast<const Vec3f*>(data), maps.pulse(pulse.id), pulse.sendCount(),
                                pulseShift(pulse, *box), reinterpret_cast<Vec3f*>(deviceSend_.data()), stream);
            } else {
                packElements(data, elementSize, maps.pulse(pulse.id), pulse.sendCount(), deviceSend_.data(), stream);
            }
            HALOEX_CUDA_CHECK(
                cudaMemcpyAsync(hostSend_.data(), deviceSend_.data(), sendBytes, cudaMemcpyDeviceToHost, stream));
        }
        // MPI is not stream-aware: the packed data must be on the host before
        // it is handed over (and the previous pulse's receive buffer is free).
        HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
        ++syncs;
        world_.sendRecvBytes(std::span<const std::byte>(hostSend_.data(), sendBytes), pulse.sendRank,
                             std::span<std::byte>(hostRecv_.data(), recvBytes), pulse.recvRank, tagBase + pulse.id);
        if (recvBytes > 0) {
            HALOEX_CUDA_CHECK(cudaMemcpyAsync(data + static_cast<std::size_t>(pulse.recvOffset) * elementSize,
                                              hostRecv_.data(), recvBytes, cudaMemcpyHostToDevice, stream));
        }
    }
    endCall(stream);
    return syncs;
}

std::int64_t StagedPath::reverseAdd(const plan::ParticleHaloPlan& plan, const DevicePulseMaps& maps, Vec3f* f,
                                    cudaStream_t stream, int tagBase) {
    reserve(maxRecvElements(plan) * sizeof(Vec3f), maxSendElements(plan) * sizeof(Vec3f));
    beginCall(stream);
    std::int64_t syncs = 0;
    for (auto it = plan.pulses.rbegin(); it != plan.pulses.rend(); ++it) {
        const plan::Pulse& pulse = *it;
        // Forces of the atoms received in this pulse go back to their sender.
        const std::size_t haloBytes = pulse.receives() ? static_cast<std::size_t>(pulse.recvCount) * sizeof(Vec3f) : 0;
        const std::size_t ownerBytes = pulse.sends() ? static_cast<std::size_t>(pulse.sendCount()) * sizeof(Vec3f) : 0;
        if (haloBytes > 0) {
            HALOEX_CUDA_CHECK(
                cudaMemcpyAsync(hostSend_.data(), f + pulse.recvOffset, haloBytes, cudaMemcpyDeviceToHost, stream));
        }
        // Also orders this pulse after the later pulses' accumulation into
        // the atoms it sends back (they may have been forwarded).
        HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
        ++syncs;
        world_.sendRecvBytes(std::span<const std::byte>(hostSend_.data(), haloBytes), pulse.recvRank,
                             std::span<std::byte>(hostRecv_.data(), ownerBytes), pulse.sendRank, tagBase + pulse.id);
        if (ownerBytes > 0) {
            HALOEX_CUDA_CHECK(
                cudaMemcpyAsync(deviceRecv_.data(), hostRecv_.data(), ownerBytes, cudaMemcpyHostToDevice, stream));
            unpackAddForces(reinterpret_cast<const Vec3f*>(deviceRecv_.data()), maps.pulse(pulse.id), pulse.sendCount(),
                            f, stream);
        }
    }
    endCall(stream);
    return syncs;
}

void StagedPath::exchangeBlock(const void* send, std::size_t sendBytes, int dest, void* recv, std::size_t recvBytes,
                               int src, cudaStream_t stream) {
    sendBytes = dest >= 0 ? sendBytes : 0;
    recvBytes = src >= 0 ? recvBytes : 0;
    reserve(sendBytes, recvBytes);
    beginCall(stream);
    if (sendBytes > 0) {
        HALOEX_CUDA_CHECK(cudaMemcpyAsync(hostSend_.data(), send, sendBytes, cudaMemcpyDeviceToHost, stream));
    }
    HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
    transport::exchangeBlockOnHost(world_, hostSend_.data(), sendBytes, dest, hostRecv_.data(), recvBytes, src);
    if (recvBytes > 0) {
        HALOEX_CUDA_CHECK(cudaMemcpyAsync(recv, hostRecv_.data(), recvBytes, cudaMemcpyHostToDevice, stream));
    }
    // The pinned buffers are reused by the next call.
    HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
    endCall(stream);
}

void StagedPath::exchangeBlocks(std::span<const transport::BlockExchange> blocks, cudaStream_t stream) {
    std::size_t sendTotal = 0, recvTotal = 0;
    for (const transport::BlockExchange& b : blocks) {
        sendTotal += sendBytesOf(b);
        recvTotal += recvBytesOf(b);
    }
    reserve(sendTotal, recvTotal);
    beginCall(stream);
    copyRuns(
        blocks, hostSend_.data(), [](const transport::BlockExchange& b) { return b.send; }, sendBytesOf,
        cudaMemcpyDeviceToHost, stream);
    // MPI cannot wait on a stream; this also retires the previous call's copies in.
    HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
    // Every block's message at once (one round trip over MPI, not one per block).
    messages_.clear();
    std::size_t sent = 0, received = 0;
    for (const transport::BlockExchange& b : blocks) {
        messages_.push_back(transport::peerMessageOf(b, hostSend_.data() + sent, hostRecv_.data() + received));
        sent += sendBytesOf(b);
        received += recvBytesOf(b);
    }
    world_.sendRecvMany(messages_, transport::kTagExchangeBlock);
    copyRuns(
        blocks, hostRecv_.data(), [](const transport::BlockExchange& b) { return b.recv; }, recvBytesOf,
        cudaMemcpyHostToDevice, stream);
    endCall(stream);
}

}  // namespace haloex::cuda
