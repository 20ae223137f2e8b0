// The collective allocator (halo/collective_buffer.hpp): the size is the
// maximum over the ranks, the memory the backend's.
#include "haloex/halo/collective_buffer.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <fmt/format.h>
#include <vector>

#include "device_memory.hpp"
#include "haloex/core/error.hpp"
#include "haloex/transport/peer_memory.hpp"

namespace haloex {
namespace {

std::uint64_t nextAllocation() {
    static std::atomic<std::uint64_t> counter{1};
    return counter++;
}

// Device arrays come in whole 2 MiB units: CUDA IPC shares the whole block an
// allocation lies in, so a smaller one could expose (and collide with) its
// neighbours in a block the driver sub-allocated (the ipc backend exports
// the caller's coordinates).
std::size_t wholeIpcUnits(std::size_t bytes) {
    constexpr std::size_t kUnit = std::size_t{2} << 20;
    return (bytes + kUnit - 1) / kUnit * kUnit;
}

// Memory the peers address: allocated as PeerMemory of the backend that provides it.
bool isPeerMemory(CollectiveMemory memory) {
    return memory == CollectiveMemory::NcclWindow || memory == CollectiveMemory::IpcWindow ||
           memory == CollectiveMemory::NvshmemSymmetric;
}

Backend peerMemoryProvider(CollectiveMemory memory) {
    switch (memory) {
        case CollectiveMemory::NcclWindow: return Backend::NcclDevice;
        case CollectiveMemory::NvshmemSymmetric: return Backend::Nvshmem;
        default: return Backend::Ipc;
    }
}

}  // namespace

CollectiveMemory collectiveMemoryFor(Backend backend, transport::MemorySpace space) {
    if (backend == Backend::Auto) {
        throwError(ErrorKind::InvalidInput,
                   "collective memory for the Auto backend: resolve it first (resolveAuto, or ask the transport made)");
    }
    if (const std::string why = unavailableReason(backend); !why.empty()) {
        throwError(ErrorKind::InvalidInput, fmt::format("collective memory for the {} backend: it is not available: {}",
                                                        toString(backend), why));
    }
    const bool host = space == transport::MemorySpace::Host;
    if (backend == Backend::Staged) return host ? CollectiveMemory::Host : CollectiveMemory::Device;
    if (host != (backend == Backend::Reference)) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("the {} backend keeps its arrays in {} memory only; ask for that space, or use the "
                               "staged backend, which supports both",
                               toString(backend), backend == Backend::Reference ? "host" : "device"));
    }
    switch (backend) {
        case Backend::Reference: return CollectiveMemory::Host;
        case Backend::Nvshmem: return CollectiveMemory::NvshmemSymmetric;
        case Backend::NcclDevice: return CollectiveMemory::NcclWindow;
        default: return CollectiveMemory::Device;
    }
}

CollectiveMemory collectiveMemoryFor(const transport::BlockTransport& transport) { return transport.arrayMemory(); }

// What one allocation holds; exactly one member is in use.
struct CollectiveBytes::Storage {
    std::vector<std::byte> host;
    std::unique_ptr<halo_detail::DeviceBytes> device;
    std::unique_ptr<transport::PeerMemory> peers;  // NVSHMEM symmetric memory and windows
};

CollectiveBytes::CollectiveBytes(runtime::World& world, CollectiveMemory memory, std::string what)
    : world_(&world), memory_(memory), what_(std::move(what)), storage_(std::make_unique<Storage>()) {
    const char* missing = nullptr;
    const bool device = memory != CollectiveMemory::Host;
    if (device && !halo_detail::deviceHalfMissing().empty()) missing = "CUDA";
    if (memory == CollectiveMemory::NvshmemSymmetric && !transport::hasPeerMemory(Backend::Nvshmem)) {
        missing = "NVSHMEM";
    }
    if (memory == CollectiveMemory::NcclWindow && !transport::hasPeerMemory(Backend::NcclDevice)) {
        missing = "NCCL device API";
    }
    if (missing) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("{}: {} memory was asked for, but this build has no {} (see unavailableReason())", what_,
                               memory == CollectiveMemory::Device             ? "device"
                               : memory == CollectiveMemory::NvshmemSymmetric ? "NVSHMEM symmetric"
                                                                              : "peer window",
                               missing));
    }
}

CollectiveBytes::~CollectiveBytes() = default;
CollectiveBytes::CollectiveBytes(CollectiveBytes&&) noexcept = default;
CollectiveBytes& CollectiveBytes::operator=(CollectiveBytes&&) noexcept = default;

bool CollectiveBytes::reserve(std::size_t bytes) {
    // Every rank learns the largest request, so all decide alike.
    return reserveAgreed(static_cast<std::size_t>(
        world_->allReduceValue<std::int64_t>(static_cast<std::int64_t>(bytes), runtime::ReduceOp::Max)));
}

bool CollectiveBytes::reserveAgreed(std::size_t largest) {
    if (largest <= capacity_ && data_ != nullptr) return false;
    const std::size_t capacity = std::max({largest, capacity_ + capacity_ / 2, std::size_t{1}});
    const std::size_t keep = capacity_;
    (void)keep;  // host memory keeps its contents by itself
    switch (memory_) {
        case CollectiveMemory::Host: {
            storage_->host.resize(capacity);  // keeps the contents
            data_ = storage_->host.data();
            break;
        }
        case CollectiveMemory::Device: {
            auto grown = std::make_unique<halo_detail::DeviceBytes>(wholeIpcUnits(capacity), false);
            if (keep > 0) halo_detail::copyDeviceNow(grown->data(), storage_->device->data(), keep);
            storage_->device = std::move(grown);
            data_ = storage_->device->data();
            break;
        }
        case CollectiveMemory::NvshmemSymmetric:
        case CollectiveMemory::NcclWindow:
        case CollectiveMemory::IpcWindow: {
            auto grown = transport::allocatePeerMemory(peerMemoryProvider(memory_), *world_, capacity, what_);
            if (keep > 0) halo_detail::copyDeviceNow(grown->localBase(), storage_->peers->localBase(), keep);
            storage_->peers = std::move(grown);  // frees the old one: collective, every rank is here
            data_ = storage_->peers->localBase();
            break;
        }
    }
    capacity_ = capacity;
    allocation_ = nextAllocation();
    return true;
}

transport::SharedArray CollectiveBytes::shared() const {
    transport::SharedArray a;
    a.data = data_;
    a.bytes = capacity_;
    a.allocation = allocation_;
    if (isPeerMemory(memory_) && storage_->peers) {
        transport::PeerMemory* peers = storage_->peers.get();
        a.peer = [peers](int rank) { return peers->peerBase(rank); };
    }
    return a;
}

void CollectiveBytes::copyFromHost(const void* host, std::size_t bytes, std::size_t offset,
                                   transport::StreamHandle stream) {
    if (offset + bytes > capacity_) {
        throwError(ErrorKind::InvalidInput, fmt::format("{}: copying {} bytes at offset {} into a buffer of {} bytes",
                                                        what_, bytes, offset, capacity_));
    }
    if (bytes == 0) return;
    auto* dst = static_cast<std::byte*>(data_) + offset;
    if (memory_ == CollectiveMemory::Host) {
        std::memcpy(dst, host, bytes);
        return;
    }
    halo_detail::copyHostToDevice(dst, host, bytes, stream);
}

void CollectiveBytes::copyToHost(void* host, std::size_t bytes, std::size_t offset,
                                 transport::StreamHandle stream) const {
    if (offset + bytes > capacity_) {
        throwError(ErrorKind::InvalidInput, fmt::format("{}: copying {} bytes at offset {} out of a buffer of {} bytes",
                                                        what_, bytes, offset, capacity_));
    }
    if (bytes == 0) return;
    const auto* src = static_cast<const std::byte*>(data_) + offset;
    if (memory_ == CollectiveMemory::Host) {
        std::memcpy(host, src, bytes);
        return;
    }
    halo_detail::copyDeviceToHost(host, src, bytes, stream);
}

}  // namespace haloex
