// The typed halo operations' core (pulse_engine.hpp): one exchangeBlock per
// pulse, packing and unpacking around it on the host or on the device.
#include "pulse_engine.hpp"

#include <algorithm>
#include <cstring>
#include <fmt/format.h>
#include <type_traits>

#include "haloex/config.hpp"
#include "haloex/core/error.hpp"

#if HALOEX_HAVE_CUDA && defined(HALOEX_LINKED_CUDA)
#include "element_kernels.hpp"
#include "halo_kernels.hpp"
#include "haloex/cuda/blocking_ops.hpp"
#include "haloex/cuda/device_buffer.hpp"
#define HALOEX_HALO_WITH_DEVICE 1
#else
#define HALOEX_HALO_WITH_DEVICE 0
#endif

namespace haloex::halo_detail {
namespace {

bool contiguous(const plan::Pulse& p) { return p.recvOffset >= 0; }
// Elements this rank sends forward in pulse p (and receives back in reverse).
std::size_t sendElements(const plan::Pulse& p) { return p.sends() ? static_cast<std::size_t>(p.sendCount()) : 0; }
// Elements this rank receives forward in pulse p (and sends back in reverse).
std::size_t recvElements(const plan::Pulse& p) { return p.receives() ? static_cast<std::size_t>(p.recvCount) : 0; }

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

// ---- device memory ---------------------------------------------------------------

#if HALOEX_HALO_WITH_DEVICE
class DeviceMaps {
public:
    DeviceMaps(const std::vector<plan::Pulse>& pulses) {
        std::vector<int> host;
        std::vector<std::ptrdiff_t> sendAt(pulses.size(), -1), recvAt(pulses.size(), -1);
        for (std::size_t p = 0; p < pulses.size(); ++p) {
            const plan::Pulse& pulse = pulses[p];
            if (!pulse.indexMapOnDevice()) {
                sendAt[p] = static_cast<std::ptrdiff_t>(host.size());
                host.insert(host.end(), pulse.sendIndices.begin(), pulse.sendIndices.end());
            }
            if (!contiguous(pulse)) {
                recvAt[p] = static_cast<std::ptrdiff_t>(host.size());
                host.insert(host.end(), pulse.recvIndices.begin(), pulse.recvIndices.end());
            }
        }
        indices_.resize(std::max<std::size_t>(host.size(), 1));
        cuda::copyToDeviceNow(indices_.data(), host.data(), host.size() * sizeof(int));
        for (std::size_t p = 0; p < pulses.size(); ++p) {
            send_.push_back(sendAt[p] >= 0 ? indices_.data() + sendAt[p] : pulses[p].deviceSendIndices);
            recv_.push_back(recvAt[p] >= 0 ? indices_.data() + recvAt[p] : nullptr);
        }
    }
    const int* send(std::size_t p) const { return send_[p]; }
    const int* recv(std::size_t p) const { return recv_[p]; }

    cuda::DeviceBuffer<std::byte> sendScratch, recvScratch;

private:
    cuda::DeviceBuffer<int> indices_;
    std::vector<const int*> send_, recv_;
};
#else
class DeviceMaps {};
#endif

PulseEngine::PulseEngine(transport::ParticleTransport& transport, std::vector<plan::Pulse> pulses, int numLocal)
    : transport_(transport), pulses_(std::move(pulses)), numLocal_(numLocal),
      device_(transport.memorySpace() == transport::MemorySpace::Device) {
    for (const plan::Pulse& p : pulses_) {
        maxElementsPerPulse_ = std::max({maxElementsPerPulse_, sendElements(p), recvElements(p)});
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
    if (device_) {
#if HALOEX_HALO_WITH_DEVICE
        deviceMaps_ = std::make_unique<DeviceMaps>(pulses_);
#else
        throwError(ErrorKind::InvalidInput,
                   fmt::format("the {} transport works in device memory, but the halo operations of this build have "
                               "no device kernels (haloex_transports was built without haloex_cuda)",
                               transport_.name()));
#endif
    }
}

PulseEngine::~PulseEngine() = default;

void PulseEngine::gather(void* array, const ElementLayout& layout, const plan::Box* shiftBox,
                         transport::StreamHandle stream) {
    if (layout.bytes == 0) throwError(ErrorKind::InvalidInput, "gather: an element type of 0 bytes");
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
        gatherDevice(bytes, layout, shiftBox, stream);
    } else {
        gatherHost(bytes, layout, shiftBox);
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

// ---- host ------------------------------------------------------------------------

void PulseEngine::gatherHost(std::byte* array, const ElementLayout& layout, const plan::Box* shiftBox) {
    const std::size_t eb = layout.bytes;
    hostSend_.resize(std::max<std::size_t>(maxElementsPerPulse_ * eb, 1));
    hostRecv_.resize(std::max<std::size_t>(maxElementsPerPulse_ * eb, 1));
    for (const plan::Pulse& pulse : pulses_) {
        const std::size_t sendCount = sendElements(pulse);
        for (std::size_t i = 0; i < sendCount; ++i) {
            std::memcpy(hostSend_.data() + i * eb, array + static_cast<std::size_t>(pulse.sendIndices[i]) * eb, eb);
        }
        if (shiftBox && pulse.shiftSign != 0 && sendCount > 0) {
            const double shift = pulse.shiftSign * shiftBox->length[pulse.dim];
            if (layout.scalar == ScalarKind::Float32) {
                addShiftHostAs<float>(hostSend_.data(), sendCount, eb, pulse.dim, shift);
            } else {
                addShiftHostAs<double>(hostSend_.data(), sendCount, eb, pulse.dim, shift);
            }
        }
        const std::size_t recvCount = recvElements(pulse);
        std::byte* recv =
            contiguous(pulse) ? array + static_cast<std::size_t>(pulse.recvOffset) * eb : hostRecv_.data();
        transport_.exchangeBlock(hostSend_.data(), sendCount * eb, pulse.sendRank, recv, recvCount * eb, pulse.recvRank,
                                 nullptr);
        if (!contiguous(pulse)) {
            for (std::size_t i = 0; i < recvCount; ++i) {
                std::memcpy(array + static_cast<std::size_t>(pulse.recvIndices[i]) * eb, hostRecv_.data() + i * eb, eb);
            }
        }
    }
}

void PulseEngine::scatterAddHost(std::byte* array, const ElementLayout& layout) {
    const std::size_t eb = layout.bytes;
    hostSend_.resize(std::max<std::size_t>(maxElementsPerPulse_ * eb, 1));
    hostRecv_.resize(std::max<std::size_t>(maxElementsPerPulse_ * eb, 1));
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

// ---- device ----------------------------------------------------------------------

#if HALOEX_HALO_WITH_DEVICE
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
                               transport::StreamHandle streamHandle) {
    const auto stream = static_cast<cudaStream_t>(streamHandle);
    const std::size_t eb = layout.bytes;
    reserveScratch(maxElementsPerPulse_ * eb, streamHandle);
    std::byte* send = deviceMaps_->sendScratch.data();
    std::byte* scattered = deviceMaps_->recvScratch.data();
    for (std::size_t p = 0; p < pulses_.size(); ++p) {
        const plan::Pulse& pulse = pulses_[p];
        const std::size_t sendCount = sendElements(pulse);
        cuda::packElements(array, eb, deviceMaps_->send(p), static_cast<int>(sendCount), send, stream);
        if (shiftBox && pulse.shiftSign != 0 && sendCount > 0) {
            cuda::addToComponent(send, static_cast<int>(sendCount), eb, layout.scalar, pulse.dim,
                                 pulse.shiftSign * shiftBox->length[pulse.dim], stream);
        }
        const std::size_t recvCount = recvElements(pulse);
        std::byte* recv = contiguous(pulse) ? array + static_cast<std::size_t>(pulse.recvOffset) * eb : scattered;
        transport_.exchangeBlock(send, sendCount * eb, pulse.sendRank, recv, recvCount * eb, pulse.recvRank,
                                 streamHandle);
        if (!contiguous(pulse)) {
            cuda::scatterElements(scattered, eb, deviceMaps_->recv(p), static_cast<int>(recvCount), array, stream);
        }
    }
}

void PulseEngine::scatterAddDevice(std::byte* array, const ElementLayout& layout,
                                   transport::StreamHandle streamHandle) {
    const auto stream = static_cast<cudaStream_t>(streamHandle);
    const std::size_t eb = layout.bytes;
    reserveScratch(maxElementsPerPulse_ * eb, streamHandle);
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
#else
void PulseEngine::reserveScratch(std::size_t, transport::StreamHandle) {}
void PulseEngine::gatherDevice(std::byte*, const ElementLayout&, const plan::Box*, transport::StreamHandle) {}
void PulseEngine::scatterAddDevice(std::byte*, const ElementLayout&, transport::StreamHandle) {}
#endif

}  // namespace haloex::halo_detail
