// The typed halo operations' device members (pulse_engine.hpp): the index
// maps uploaded once, pack and unpack kernels around the transport's block
// exchange. In haloex_transports where the build has CUDA; the CPU-only
// haloex_halo has device_unavailable.cpp instead.
#include <algorithm>
#include <cuda_runtime.h>

#include "element_kernels.hpp"
#include "halo_kernels.hpp"
#include "haloex/detail/cuda/blocking_ops.hpp"
#include "haloex/cuda/device_buffer.hpp"
#include "pulse_engine.hpp"

namespace haloex::halo_detail {

// The host index maps in one device array, laid out batch by batch (the send
// maps of a batch's pulses one after the other, then its scattered receive
// maps), so a batch packs with one kernel and unpacks with one.
class DeviceMaps {
public:
    using Batch = PulseEngine::Batch;

    DeviceMaps(const std::vector<plan::Pulse>& pulses, const std::vector<Batch>& batches) {
        std::vector<int> host;
        std::vector<std::ptrdiff_t> sendAt(pulses.size(), -1), recvAt(pulses.size(), -1);
        std::vector<std::ptrdiff_t> batchSendAt(batches.size(), -1), batchRecvAt(batches.size(), -1);
        auto append = [&](const std::vector<int>& indices, std::size_t count) {
            const auto at = static_cast<std::ptrdiff_t>(host.size());
            host.insert(host.end(), indices.begin(), indices.begin() + static_cast<std::ptrdiff_t>(count));
            return at;
        };
        for (std::size_t b = 0; b < batches.size(); ++b) {
            const Batch& batch = batches[b];
            bool hostMaps = true;
            const auto first = static_cast<std::ptrdiff_t>(host.size());
            for (std::size_t p = batch.first; p < batch.first + batch.count; ++p) {
                if (pulses[p].indexMapOnDevice()) {
                    hostMaps = false;  // packed pulse by pulse from its own device map
                } else {
                    sendAt[p] = append(pulses[p].sendIndices, sendElements(pulses[p]));
                }
            }
            if (hostMaps) batchSendAt[b] = first;
            batchRecvAt[b] = static_cast<std::ptrdiff_t>(host.size());
            for (std::size_t p = batch.first; p < batch.first + batch.count; ++p) {
                if (!contiguous(pulses[p])) recvAt[p] = append(pulses[p].recvIndices, recvElements(pulses[p]));
            }
        }
        indices_.resize(std::max<std::size_t>(host.size(), 1));
        cuda::copyToDeviceNow(indices_.data(), host.data(), host.size() * sizeof(int));
        auto at = [&](std::ptrdiff_t offset) -> const int* { return offset >= 0 ? indices_.data() + offset : nullptr; };
        for (std::size_t p = 0; p < pulses.size(); ++p) {
            send_.push_back(sendAt[p] >= 0 ? at(sendAt[p]) : pulses[p].deviceSendIndices);
            recv_.push_back(at(recvAt[p]));
        }
        for (std::size_t b = 0; b < batches.size(); ++b) {
            batchSend_.push_back(at(batchSendAt[b]));
            batchRecv_.push_back(at(batchRecvAt[b]));
        }
    }
    const int* send(std::size_t p) const { return send_[p]; }
    const int* recv(std::size_t p) const { return recv_[p]; }
    // A batch's send maps in pulse order, or null when a pulse has a device map.
    const int* batchSend(std::size_t b) const { return batchSend_[b]; }
    // A batch's scattered receive maps in pulse order.
    const int* batchRecv(std::size_t b) const { return batchRecv_[b]; }

    cuda::DeviceBuffer<std::byte> sendScratch, recvScratch;

private:
    cuda::DeviceBuffer<int> indices_;
    std::vector<const int*> send_, recv_, batchSend_, batchRecv_;
};

void DeviceMapsDeleter::operator()(DeviceMaps* maps) const { delete maps; }

void PulseEngine::uploadMaps() { deviceMaps_.reset(new DeviceMaps(pulses_, batches_)); }

const int* PulseEngine::deviceSendMap(std::size_t p) const { return deviceMaps_->send(p); }

void PulseEngine::packFirstBatchDevice(const std::byte* from, std::size_t elementBytes, std::byte* staging,
                                       transport::StreamHandle stream) {
    const auto s = static_cast<cudaStream_t>(stream);
    if (const int* map = deviceMaps_->batchSend(0)) {
        cuda::packElements(from, elementBytes, map, static_cast<int>(batches_[0].sendElements), staging, s);
        return;
    }
    for (const PackedPulse& p : packedPulses()) {
        if (p.count > 0) {
            cuda::packElements(from, elementBytes, p.indices, static_cast<int>(p.count),
                               staging + p.offset * elementBytes, s);
        }
    }
}

void PulseEngine::reserveScratch(std::size_t bytes, transport::StreamHandle) {
    bytes = std::max<std::size_t>(bytes, 16);
    if (bytes <= deviceMaps_->sendScratch.capacity() && bytes <= deviceMaps_->recvScratch.capacity()) return;
    // Growing frees the old scratch, which work queued earlier (on any
    // stream: a transport may read it from its own) may still use.
    HALOEX_CUDA_CHECK(cudaDeviceSynchronize());
    deviceMaps_->sendScratch.reserve(bytes);
    deviceMaps_->recvScratch.reserve(bytes);
}

void PulseEngine::gatherDevice(std::byte* array, const ElementLayout& layout, const plan::Box* shiftBox,
                               transport::StreamHandle streamHandle, const std::byte* packedFirst) {
    const auto stream = static_cast<cudaStream_t>(streamHandle);
    const std::size_t eb = layout.bytes;
    reserveScratch(scratchElements_ * eb, streamHandle);
    std::byte* send = deviceMaps_->sendScratch.data();
    std::byte* scattered = deviceMaps_->recvScratch.data();
    for (std::size_t b = 0; b < batches_.size(); ++b) {
        const Batch& batch = batches_[b];
        const bool callerPacked = b == 0 && packedFirst != nullptr;
        const int* batchMap = callerPacked ? nullptr : deviceMaps_->batchSend(b);
        if (batchMap) cuda::packElements(array, eb, batchMap, static_cast<int>(batch.sendElements), send, stream);
        std::byte* packed = send;
        for (std::size_t p = batch.first; p < batch.first + batch.count && !callerPacked; ++p) {
            const plan::Pulse& pulse = pulses_[p];
            const std::size_t sendCount = sendElements(pulse);
            if (!batchMap)
                cuda::packElements(array, eb, deviceMaps_->send(p), static_cast<int>(sendCount), packed, stream);
            if (shiftBox && pulse.shiftSign != 0 && sendCount > 0) {
                cuda::addToComponent(packed, static_cast<int>(sendCount), eb, layout.scalar, pulse.dim,
                                     pulse.shiftSign * shiftBox->length[pulse.dim], stream);
            }
            packed += sendCount * eb;
        }
        collectBlocks(batch, array, eb, callerPacked ? packedFirst : send, scattered);
        if (!unpackInPlace_[b]) {
            transport_.exchangeBlocks(blocks_, streamHandle);
            cuda::scatterElements(scattered, eb, deviceMaps_->batchRecv(b), static_cast<int>(batch.scatteredElements),
                                  array, stream);
            continue;
        }
        // The unpack reads the received blocks where they landed (ipc: its
        // landing buffer, no copy out; elsewhere the scratch itself).
        exchangeInPlace(b, eb, streamHandle);
        unpackLanded(b, eb, array, streamHandle);
    }
}

void PulseEngine::exchangeInPlace(std::size_t b, std::size_t elementBytes, transport::StreamHandle stream) {
    landed_.assign(blocks_.size(), nullptr);
    const auto key = std::pair{b, elementBytes};
    auto it = patterns_.find(key);
    if (it == patterns_.end()) it = patterns_.emplace(key, transport_.bindBlockPattern(blocks_)).first;
    if (it->second < 0) {
        transport_.exchangeBlocksInPlace(blocks_, landed_, stream);
    } else {
        transport_.exchangeBoundBlocksInPlace(it->second, blocks_, landed_, stream);
    }
}

void PulseEngine::unpackLanded(std::size_t b, std::size_t elementBytes, std::byte* array,
                               transport::StreamHandle streamHandle) {
    const auto stream = static_cast<cudaStream_t>(streamHandle);
    // One kernel where the blocks lie back to back as in the scratch (the
    // transports land them so); otherwise one per block.
    const std::byte* base = nullptr;
    std::size_t offset = 0;
    bool oneRun = true;
    for (std::size_t i = 0; i < blocks_.size(); ++i) {
        if (blocks_[i].src < 0 || blocks_[i].recvBytes == 0) continue;
        const auto* at = static_cast<const std::byte*>(landed_[i]);
        if (base == nullptr) base = at;
        if (at != base + offset) oneRun = false;
        offset += blocks_[i].recvBytes;
    }
    if (base == nullptr) return;  // nothing received
    const int* map = deviceMaps_->batchRecv(b);
    if (oneRun) {
        cuda::scatterElements(base, elementBytes, map, static_cast<int>(offset / elementBytes), array, stream);
        return;
    }
    std::size_t element = 0;
    for (std::size_t i = 0; i < blocks_.size(); ++i) {
        if (blocks_[i].src < 0 || blocks_[i].recvBytes == 0) continue;
        const std::size_t count = blocks_[i].recvBytes / elementBytes;
        cuda::scatterElements(landed_[i], elementBytes, map + element, static_cast<int>(count), array, stream);
        element += count;
    }
}

void PulseEngine::scatterAddDevice(std::byte* array, const ElementLayout& layout,
                                   transport::StreamHandle streamHandle) {
    const auto stream = static_cast<cudaStream_t>(streamHandle);
    const std::size_t eb = layout.bytes;
    reserveScratch(scratchElements_ * eb, streamHandle);
    std::byte* packed = deviceMaps_->sendScratch.data();
    std::byte* received = deviceMaps_->recvScratch.data();
    for (std::size_t q = pulses_.size(); q-- > 0;) {
        const plan::Pulse& pulse = pulses_[q];
        const std::size_t ghosts = recvElements(pulse);
        const std::byte* back = packed;
        if (contiguous(pulse)) {
            back = array + static_cast<std::size_t>(pulse.recvOffset) * eb;
        } else {
            cuda::packElements(array, eb, deviceMaps_->recv(q), static_cast<int>(ghosts), packed, stream);
        }
        const std::size_t owners = sendElements(pulse);
        transport_.exchangeBlock(back, ghosts * eb, pulse.recvRank, received, owners * eb, pulse.sendRank,
                                 streamHandle);
        cuda::addElements(received, deviceMaps_->send(q), static_cast<int>(owners), layout.scalar, layout.components,
                          array, stream);
    }
}
void PulseEngine::zeroDevice(void* array, std::size_t bytes, transport::StreamHandle stream) {
    HALOEX_CUDA_CHECK(cudaMemsetAsync(array, 0, bytes, static_cast<cudaStream_t>(stream)));
}

}  // namespace haloex::halo_detail
