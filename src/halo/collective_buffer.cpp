// The collective allocator (halo/collective_buffer.hpp): the size is the
// maximum over the ranks, the memory the backend's.
#include "haloex/halo/collective_buffer.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <fmt/format.h>
#include <vector>

#include "haloex/config.hpp"
#include "haloex/core/error.hpp"
#include "haloex/halo/peer_memory.hpp"

#if HALOEX_HAVE_CUDA && defined(HALOEX_LINKED_CUDA)
#include "haloex/cuda/device_buffer.hpp"
#define HALOEX_COLLECTIVE_WITH_CUDA 1
#else
#define HALOEX_COLLECTIVE_WITH_CUDA 0
#endif
#if HALOEX_HAVE_NVSHMEM && defined(HALOEX_LINKED_NVSHMEM)
#include "haloex/cuda/check.hpp"
#include "haloex/nvshmem/symmetric_memory.hpp"
#define HALOEX_COLLECTIVE_WITH_NVSHMEM 1
#else
#define HALOEX_COLLECTIVE_WITH_NVSHMEM 0
#endif

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

bool isWindow(CollectiveMemory memory) {
    return memory == CollectiveMemory::NcclWindow || memory == CollectiveMemory::IpcWindow;
}

#if HALOEX_COLLECTIVE_WITH_CUDA || HALOEX_COLLECTIVE_WITH_NVSHMEM
// Copies the kept contents into the grown array, finished when it returns:
// work queued on any stream may still use the old array, which is freed next.
void copyDeviceNow(void* dst, const void* src, std::size_t bytes) {
    HALOEX_CUDA_CHECK(cudaDeviceSynchronize());
    HALOEX_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, cudaStreamLegacy));
    HALOEX_CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
}
#endif

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
#if HALOEX_COLLECTIVE_WITH_CUDA
    cuda::DeviceBuffer<std::byte> device;
#endif
#if HALOEX_COLLECTIVE_WITH_NVSHMEM
    std::unique_ptr<nvshmem::SymmetricAllocation> symmetric;
#endif
    std::unique_ptr<PeerMemory> window;
};

CollectiveBytes::CollectiveBytes(runtime::World& world, CollectiveMemory memory, std::string what)
    : world_(&world), memory_(memory), what_(std::move(what)), storage_(std::make_unique<Storage>()) {
    const char* missing = nullptr;
    if ((memory == CollectiveMemory::Device || isWindow(memory)) && !HALOEX_COLLECTIVE_WITH_CUDA) missing = "CUDA";
    if (memory == CollectiveMemory::NvshmemSymmetric && !HALOEX_COLLECTIVE_WITH_NVSHMEM) missing = "NVSHMEM";
    if (memory == CollectiveMemory::NcclWindow && !hasPeerMemory(Backend::NcclDevice)) missing = "NCCL device API";
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
    const auto largest = static_cast<std::size_t>(
        world_->allReduceValue<std::int64_t>(static_cast<std::int64_t>(bytes), runtime::ReduceOp::Max));
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
        // NOLINTNEXTLINE(bugprone-branch-clone): the branches differ where the #if parts are compiled
        case CollectiveMemory::Device: {
#if HALOEX_COLLECTIVE_WITH_CUDA
            cuda::DeviceBuffer<std::byte> grown(wholeIpcUnits(capacity));
            if (keep > 0) copyDeviceNow(grown.data(), storage_->device.data(), keep);
            storage_->device = std::move(grown);
            data_ = storage_->device.data();
#endif
            break;
        }
        case CollectiveMemory::NvshmemSymmetric: {
#if HALOEX_COLLECTIVE_WITH_NVSHMEM
            auto grown = std::make_unique<nvshmem::SymmetricAllocation>(*world_, capacity, what_);
            if (keep > 0) copyDeviceNow(grown->data(), storage_->symmetric->data(), keep);
            storage_->symmetric = std::move(grown);  // frees the old one: collective, every rank is here
            data_ = storage_->symmetric->data();
#endif
            break;
        }
        case CollectiveMemory::NcclWindow:
        case CollectiveMemory::IpcWindow: {
            auto grown =
                allocatePeerMemory(memory_ == CollectiveMemory::NcclWindow ? Backend::NcclDevice : Backend::Ipc,
                                   *world_, capacity, what_);
#if HALOEX_COLLECTIVE_WITH_CUDA
            if (keep > 0) copyDeviceNow(grown->localBase(), storage_->window->localBase(), keep);
#endif
            storage_->window = std::move(grown);  // frees the old one: collective, every rank is here
            data_ = storage_->window->localBase();
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
#if HALOEX_COLLECTIVE_WITH_NVSHMEM
    if (memory_ == CollectiveMemory::NvshmemSymmetric && storage_->symmetric) {
        const nvshmem::SymmetricAllocation* symmetric = storage_->symmetric.get();
        a.peer = [symmetric](int rank) { return symmetric->peerData(rank); };
    }
#endif
    if (isWindow(memory_) && storage_->window) {
        PeerMemory* window = storage_->window.get();
        a.peer = [window](int rank) { return window->peerBase(rank); };
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
#if HALOEX_COLLECTIVE_WITH_CUDA || HALOEX_COLLECTIVE_WITH_NVSHMEM
    const auto s = static_cast<cudaStream_t>(stream);
    HALOEX_CUDA_CHECK(cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, s));
    HALOEX_CUDA_CHECK(cudaStreamSynchronize(s));
#else
    (void)stream;
#endif
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
#if HALOEX_COLLECTIVE_WITH_CUDA || HALOEX_COLLECTIVE_WITH_NVSHMEM
    const auto s = static_cast<cudaStream_t>(stream);
    HALOEX_CUDA_CHECK(cudaMemcpyAsync(host, src, bytes, cudaMemcpyDeviceToHost, s));
    HALOEX_CUDA_CHECK(cudaStreamSynchronize(s));
#else
    (void)stream;
#endif
}

}  // namespace haloex
