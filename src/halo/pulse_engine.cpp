// The typed halo operations' core (pulse_engine.hpp): one exchangeBlock per
// pulse, packing and unpacking around it on the host; the device members are
// in pulse_engine_device.cpp (or, without the halo API's device half,
// device_unavailable.cpp).
#include "pulse_engine.hpp"

#include <algorithm>
#include <cstring>
#include <fmt/format.h>
#include <type_traits>

#include "device_memory.hpp"
#include "haloex/core/error.hpp"

namespace haloex::halo_detail {
namespace {

// Consecutive pulses, cut by the plan's structure, never by this rank's
// data: Pulse::waitsForward differs between ranks (empty where a rank
// received nothing to forward, e.g. beside a non-periodic edge), and cuts
// taken from it would give the ranks different numbers of exchangeBlocks
// calls. Where pulses may forward, only the stage-0 pulses of one dimension
// travel together (what a pulse forwards comes from earlier dimensions or
// stages); otherwise nothing depends on anything and all pulses are one batch.
std::vector<PulseEngine::Batch> batchesOf(const std::vector<plan::Pulse>& pulses, bool mayForward) {
    std::vector<PulseEngine::Batch> out;
    for (std::size_t p = 0; p < pulses.size(); ++p) {
        const bool cut =
            out.empty() || (mayForward && (pulses[p].stage > 0 || pulses[p].dim != pulses[out.back().first].dim));
        if (cut) out.push_back({p, 0, 0, 0});
        for (int q : pulses[p].waitsForward) {
            if (static_cast<std::size_t>(q) >= out.back().first) {
                throwError(ErrorKind::InvalidInput,
                           fmt::format("pulse {} waits for pulse {}, which {}; a plan whose pulses forward must say "
                                       "so (a grid plan: edgesAndCorners)",
                                       pulses[p].id, pulses[static_cast<std::size_t>(q)].id,
                                       mayForward ? "is of the same dimension and stage"
                                                  : "the plan says cannot happen (no pulse forwards)"));
            }
        }
        PulseEngine::Batch& batch = out.back();
        ++batch.count;
        batch.sendElements += sendElements(pulses[p]);
        if (!contiguous(pulses[p])) batch.scatteredElements += recvElements(pulses[p]);
    }
    return out;
}

std::size_t scalarBytes(ScalarKind kind) {
    return kind == ScalarKind::Float32 || kind == ScalarKind::Int32 || kind == ScalarKind::UInt32 ? 4 : 8;
}

void requireComponents(const ElementLayout& layout, const char* what) {
    if (layout.components <= 0 || layout.bytes == 0) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("{} needs a component-wise element type (halo scalars, see haloex/halo/element.hpp); "
                               "this one has {} bytes and no components",
                               what, layout.bytes));
    }
    if (layout.bytes != static_cast<std::size_t>(layout.components) * scalarBytes(layout.scalar)) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("{}: an element of {} bytes cannot be {} scalars of {} bytes (an ElementLayout that "
                               "does not describe its type)",
                               what, layout.bytes, layout.components, scalarBytes(layout.scalar)));
    }
}

// ---- host loops ------------------------------------------------------------------

template <class S>
void addShiftHostAs(std::byte* packed, std::size_t count, std::size_t elementBytes, int component, double shift) {
    const S s = static_cast<S>(shift);  // rounded once, as the reference transport does
    for (std::size_t i = 0; i < count; ++i) {
        std::byte* at = packed + i * elementBytes + static_cast<std::size_t>(component) * sizeof(S);
        S v;
        std::memcpy(&v, at, sizeof(S));
        v = v + s;
        std::memcpy(at, &v, sizeof(S));
    }
}

template <class S>
void addElementHostAs(std::byte* target, const std::byte* value, int components) {
    for (int c = 0; c < components; ++c) {
        S a, b;
        std::memcpy(&a, target + c * sizeof(S), sizeof(S));
        std::memcpy(&b, value + c * sizeof(S), sizeof(S));
        if constexpr (std::is_integral_v<S>) {
            using U = std::make_unsigned_t<S>;  // wraps, as the device kernel does
            a = static_cast<S>(static_cast<U>(a) + static_cast<U>(b));
        } else {
            a = a + b;
        }
        std::memcpy(target + c * sizeof(S), &a, sizeof(S));
    }
}

void addElementHost(std::byte* target, const std::byte* value, const ElementLayout& layout) {
    switch (layout.scalar) {
        case ScalarKind::Float32: addElementHostAs<float>(target, value, layout.components); break;
        case ScalarKind::Float64: addElementHostAs<double>(target, value, layout.components); break;
        case ScalarKind::Int32: addElementHostAs<std::int32_t>(target, value, layout.components); break;
        case ScalarKind::Int64: addElementHostAs<std::int64_t>(target, value, layout.components); break;
        case ScalarKind::UInt32: addElementHostAs<std::uint32_t>(target, value, layout.components); break;
        case ScalarKind::UInt64: addElementHostAs<std::uint64_t>(target, value, layout.components); break;
    }
}

}  // namespace

struct PulseEngine::Staging {
    std::vector<std::byte> host;
    std::unique_ptr<DeviceBytes> device;
    std::byte* data() { return device ? device->data() : host.data(); }
};

void requireContiguousReceiveSlots(const std::vector<plan::Pulse>& pulses) {
    for (const plan::Pulse& p : pulses) {
        if (!contiguous(p)) {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("pulse {} of the particle plan has no contiguous receive slot (recvOffset {}); "
                                   "particle plans place received atoms after the home atoms",
                                   p.id, p.recvOffset));
        }
    }
}

PulseEngine::PulseEngine(transport::BlockTransport& transport, std::vector<plan::Pulse> pulses, int numLocal,
                         bool pulsesMayForward)
    : transport_(transport), pulses_(std::move(pulses)), numLocal_(numLocal),
      device_(transport.memorySpace() == transport::MemorySpace::Device) {
    for (const plan::Pulse& p : pulses_) {
        scratchElements_ = std::max({scratchElements_, sendElements(p), recvElements(p)});
        if (!device_ && p.indexMapOnDevice()) {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("the {} transport keeps its arrays in host memory, but pulse {} of the plan has "
                                   "its index map in device memory (a plan built on the GPU); build the plan on the "
                                   "host or use a device backend",
                                   transport_.name(), p.id));
        }
        if (!contiguous(p) && p.recvIndices.size() != static_cast<std::size_t>(p.recvCount)) {
            throwError(ErrorKind::InvalidInput, fmt::format("pulse {}: {} receive indices for {} received elements",
                                                            p.id, p.recvIndices.size(), p.recvCount));
        }
    }
    batches_ = batchesOf(pulses_, pulsesMayForward);
    for (const Batch& b : batches_) {
        scratchElements_ = std::max({scratchElements_, b.sendElements, b.scatteredElements});
        // Every receive of the batch is scattered (grid plans): the unpack may
        // read the blocks where the transport landed them.
        bool scatteredOnly = true;
        for (std::size_t p = b.first; p < b.first + b.count; ++p) {
            if (contiguous(pulses_[p]) && recvElements(pulses_[p]) > 0) scatteredOnly = false;
        }
        unpackInPlace_.push_back(scatteredOnly ? 1 : 0);
    }
    if (device_) {
        if (const std::string why = deviceHalfMissing(); !why.empty()) {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("the {} transport works in device memory, but the halo operations of this "
                                   "library have no device kernels: {}",
                                   transport_.name(), why));
        }
        uploadMaps();
    }
}

PulseEngine::~PulseEngine() = default;

std::vector<PulseEngine::PackedPulse> PulseEngine::packedPulses() const {
    std::vector<PackedPulse> out;
    if (batches_.empty()) return out;
    std::size_t offset = 0;
    for (std::size_t p = batches_[0].first; p < batches_[0].first + batches_[0].count; ++p) {
        const std::size_t count = sendElements(pulses_[p]);
        const int* indices = device_ ? deviceSendMap(p) : pulses_[p].sendIndices.data();
        out.push_back({p, offset, count, count > 0 ? indices : nullptr});
        offset += count;
    }
    return out;
}

std::byte* PulseEngine::packedStaging(std::size_t elementBytes) {
    if (elementBytes == 0) throwError(ErrorKind::InvalidInput, "bindPackedSends: an element type of 0 bytes");
    auto& staging = stagings_[elementBytes];
    if (!staging) {
        staging = std::make_unique<Staging>();
        const std::size_t bytes =
            std::max<std::size_t>(batches_.empty() ? 0 : batches_[0].sendElements, 1) * elementBytes;
        if (device_) {
            staging->device = std::make_unique<DeviceBytes>(bytes, true);
        } else {
            staging->host.assign(bytes, std::byte{0});
        }
    }
    return staging->data();
}

void PulseEngine::packFirstBatch(const void* array, std::size_t elementBytes, std::byte* staging,
                                 transport::StreamHandle stream) {
    if (batches_.empty() || batches_[0].sendElements == 0) return;
    if (array == nullptr) throwError(ErrorKind::InvalidInput, "packSends: the field is null");
    const auto* from = static_cast<const std::byte*>(array);
    if (!device_) {
        for (const PackedPulse& p : packedPulses()) {
            for (std::size_t k = 0; k < p.count; ++k) {
                std::memcpy(staging + (p.offset + k) * elementBytes,
                            from + static_cast<std::size_t>(p.indices[k]) * elementBytes, elementBytes);
            }
        }
        return;
    }
    packFirstBatchDevice(from, elementBytes, staging, stream);
}

std::byte* PulseEngine::boundStaging(std::size_t elementBytes) {
    const auto it = stagings_.find(elementBytes);
    return it == stagings_.end() ? nullptr : it->second->data();
}

std::vector<std::size_t> PulseEngine::boundStagingSizes() const {
    std::vector<std::size_t> sizes;
    for (const auto& [bytes, staging] : stagings_) sizes.push_back(bytes);
    return sizes;
}

void PulseEngine::collectBlocks(const Batch& batch, std::byte* array, std::size_t elementBytes, const std::byte* send,
                                std::byte* scattered) {
    blocks_.clear();
    for (std::size_t p = batch.first; p < batch.first + batch.count; ++p) {
        const plan::Pulse& pulse = pulses_[p];
        const std::size_t sendCount = sendElements(pulse);
        const std::size_t recvCount = recvElements(pulse);
        std::byte* recv =
            contiguous(pulse) ? array + static_cast<std::size_t>(pulse.recvOffset) * elementBytes : scattered;
        blocks_.push_back(
            {send, sendCount * elementBytes, pulse.sendRank, recv, recvCount * elementBytes, pulse.recvRank});
        send += sendCount * elementBytes;
        if (!contiguous(pulse)) scattered += recvCount * elementBytes;
    }
}

void PulseEngine::gather(void* array, const ElementLayout& layout, const plan::Box* shiftBox,
                         transport::StreamHandle stream, const std::byte* packed) {
    if (layout.bytes == 0) throwError(ErrorKind::InvalidInput, "gather: an element type of 0 bytes");
    HALOEX_ASSERT(packed == nullptr || shiftBox == nullptr, "a packed gather has no periodic shift");
    if (shiftBox) {
        requireComponents(layout, "gather with a periodic shift");
        if (layout.components < 3 || (layout.scalar != ScalarKind::Float32 && layout.scalar != ScalarKind::Float64)) {
            throwError(ErrorKind::InvalidInput,
                       "gather with a periodic shift needs coordinate-like elements: at least three float or double "
                       "components (x, y, z)");
        }
        shiftBox->validate();
    }
    if (pulses_.empty()) return;
    if (array == nullptr && numLocal_ > 0) throwError(ErrorKind::InvalidInput, "gather: the array is null");
    auto* bytes = static_cast<std::byte*>(array);
    if (device_) {
        gatherDevice(bytes, layout, shiftBox, stream, packed);
    } else {
        gatherHost(bytes, layout, shiftBox, packed);
    }
}

void PulseEngine::scatterAdd(void* array, const ElementLayout& layout, transport::StreamHandle stream) {
    requireComponents(layout, "scatterAdd");
    if (pulses_.empty()) return;
    if (array == nullptr && numLocal_ > 0) throwError(ErrorKind::InvalidInput, "scatterAdd: the array is null");
    auto* bytes = static_cast<std::byte*>(array);
    if (device_) {
        scatterAddDevice(bytes, layout, stream);
    } else {
        scatterAddHost(bytes, layout);
    }
}

void PulseEngine::zero(void* array, std::size_t bytes, transport::StreamHandle stream) {
    if (bytes == 0) return;
    if (device_) {
        zeroDevice(array, bytes, stream);
    } else {
        std::memset(array, 0, bytes);
    }
}

// ---- host ------------------------------------------------------------------------

void PulseEngine::gatherHost(std::byte* array, const ElementLayout& layout, const plan::Box* shiftBox,
                             const std::byte* packedFirst) {
    const std::size_t eb = layout.bytes;
    hostSend_.resize(std::max<std::size_t>(scratchElements_ * eb, 1));
    hostRecv_.resize(std::max<std::size_t>(scratchElements_ * eb, 1));
    for (std::size_t b = 0; b < batches_.size(); ++b) {
        const Batch& batch = batches_[b];
        const bool callerPacked = b == 0 && packedFirst != nullptr;
        std::byte* packed = hostSend_.data();
        for (std::size_t p = batch.first; p < batch.first + batch.count && !callerPacked; ++p) {
            const plan::Pulse& pulse = pulses_[p];
            const std::size_t sendCount = sendElements(pulse);
            for (std::size_t i = 0; i < sendCount; ++i) {
                std::memcpy(packed + i * eb, array + static_cast<std::size_t>(pulse.sendIndices[i]) * eb, eb);
            }
            if (shiftBox && pulse.shiftSign != 0 && sendCount > 0) {
                const double shift = pulse.shiftSign * shiftBox->length[pulse.dim];
                if (layout.scalar == ScalarKind::Float32) {
                    addShiftHostAs<float>(packed, sendCount, eb, pulse.dim, shift);
                } else {
                    addShiftHostAs<double>(packed, sendCount, eb, pulse.dim, shift);
                }
            }
            packed += sendCount * eb;
        }
        collectBlocks(batch, array, eb, callerPacked ? packedFirst : hostSend_.data(), hostRecv_.data());
        transport_.exchangeBlocks(blocks_, nullptr);
        const std::byte* received = hostRecv_.data();
        for (std::size_t p = batch.first; p < batch.first + batch.count; ++p) {
            const plan::Pulse& pulse = pulses_[p];
            if (contiguous(pulse)) continue;
            const std::size_t recvCount = recvElements(pulse);
            for (std::size_t i = 0; i < recvCount; ++i) {
                std::memcpy(array + static_cast<std::size_t>(pulse.recvIndices[i]) * eb, received + i * eb, eb);
            }
            received += recvCount * eb;
        }
    }
}

void PulseEngine::scatterAddHost(std::byte* array, const ElementLayout& layout) {
    const std::size_t eb = layout.bytes;
    hostSend_.resize(std::max<std::size_t>(scratchElements_ * eb, 1));
    hostRecv_.resize(std::max<std::size_t>(scratchElements_ * eb, 1));
    for (auto it = pulses_.rbegin(); it != pulses_.rend(); ++it) {
        const plan::Pulse& pulse = *it;
        // The ghosts go back to the rank that sent them...
        const std::size_t ghosts = recvElements(pulse);
        const std::byte* back = hostSend_.data();
        if (contiguous(pulse)) {
            back = array + static_cast<std::size_t>(pulse.recvOffset) * eb;
        } else {
            for (std::size_t i = 0; i < ghosts; ++i) {
                std::memcpy(hostSend_.data() + i * eb, array + static_cast<std::size_t>(pulse.recvIndices[i]) * eb, eb);
            }
        }
        // ... and this rank's copies come back, to be added into their origins.
        const std::size_t owners = sendElements(pulse);
        transport_.exchangeBlock(back, ghosts * eb, pulse.recvRank, hostRecv_.data(), owners * eb, pulse.sendRank,
                                 nullptr);
        for (std::size_t i = 0; i < owners; ++i) {
            addElementHost(array + static_cast<std::size_t>(pulse.sendIndices[i]) * eb, hostRecv_.data() + i * eb,
                           layout);
        }
    }
}

}  // namespace haloex::halo_detail
