#include "staged_path.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "haloex/transport/host_exchange.hpp"

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
    if (used_) lastUse_.waitOn(stream);
}

void StagedPath::endCall(cudaStream_t stream) {
    lastUse_.record(stream);
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

}  // namespace haloex::cuda
