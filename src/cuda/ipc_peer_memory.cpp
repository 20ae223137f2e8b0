// Peer memory through CUDA IPC handles (haloex/cuda/ipc_peer_memory.hpp).
#include "haloex/cuda/ipc_peer_memory.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <fmt/format.h>
#include <vector>

#include "haloex/core/error.hpp"
#include "haloex/detail/cuda/blocking_ops.hpp"
#include "haloex/cuda/check.hpp"

namespace haloex::cuda {
namespace {

// CUDA may sub-allocate small cudaMalloc requests from a larger block and an
// IPC handle shares the whole block; NVIDIA's advice is to share only
// allocations of whole 2 MiB units.
constexpr std::size_t kIpcGranularity = std::size_t{2} << 20;

// Frees the allocation last (after the destructor's barrier), and also when
// the constructor throws after cudaMalloc.
struct DeviceAllocation {
    void* pointer = nullptr;
    DeviceAllocation() = default;
    DeviceAllocation(const DeviceAllocation&) = delete;
    DeviceAllocation& operator=(const DeviceAllocation&) = delete;
    ~DeviceAllocation() {
        if (pointer) cudaFree(pointer);
    }
};

struct Exported {
    cudaIpcMemHandle_t handle{};
    std::uint64_t pointer = 0;  // valid in the owner's process
    std::int32_t exported = 0;  // the handle was made (else cudaIpcGetMemHandle failed)
};

class IpcPeerMemory final : public transport::PeerMemory {
public:
    IpcPeerMemory(runtime::World& world, std::size_t bytes, const std::string& what) : world_(world), what_(what) {
        if (world.localSize() != world.size()) {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("{}: CUDA IPC peer memory needs every rank on one node, but rank {} shares its "
                                   "node with {} of {} ranks; use the nvshmem backend",
                                   what, world.rank(), world.localSize(), world.size()));
        }
        const auto largest = static_cast<std::size_t>(
            world.allReduceValue<std::int64_t>(static_cast<std::int64_t>(bytes), runtime::ReduceOp::Max));
        bytes_ = std::max<std::size_t>(1, (largest + kIpcGranularity - 1) / kIpcGranularity) * kIpcGranularity;
        HALOEX_CUDA_CHECK(cudaMalloc(&allocation_.pointer, bytes_));
        base_ = allocation_.pointer;
        fillBytesNow(base_, 0, bytes_);
        // Ranks of a thread world share this process: a process cannot open
        // its own handles, and needs not.
        sameProcess_ = world.kind() != "mpi";
        Exported mine;
        mine.pointer = reinterpret_cast<std::uint64_t>(base_);
        mine.exported = 1;
        std::string exportError;
        if (!sameProcess_) {
            if (const cudaError_t status = cudaIpcGetMemHandle(&mine.handle, base_); status != cudaSuccess) {
                cudaGetLastError();
                mine.exported = 0;
                exportError = fmt::format(": cudaIpcGetMemHandle failed: {} ({})", cudaGetErrorName(status),
                                          cudaGetErrorString(status));
            }
        }
        exported_ = world.allGather(mine);
        // Every rank refuses alike, so none waits for a rank that gave up.
        for (std::size_t r = 0; r < exported_.size(); ++r) {
            if (exported_[r].exported) continue;
            throwError(ErrorKind::InvalidInput,
                       fmt::format("{}: rank {} cannot export its window through CUDA IPC{}; use the nvshmem backend",
                                   what, r, static_cast<int>(r) == world.rank() ? exportError : std::string()));
        }
        mapped_.assign(exported_.size(), nullptr);
        opened_.assign(exported_.size(), false);
    }

    ~IpcPeerMemory() override {
        for (std::size_t r = 0; r < mapped_.size(); ++r) {
            if (opened_[r]) cudaIpcCloseMemHandle(mapped_[r]);
        }
        // Every mapping is closed before an owner frees (skipped while an
        // exception unwinds: the job is failing, a barrier could hang).
        if (std::uncaught_exceptions() == 0) {
            try {
                world_.barrier();
            } catch (...) {
            }
        }
    }

    std::string describe() const override {
        return sameProcess_ ? "ipc: one process, the peers' device pointers"
                            : "ipc: cudaMalloc'd windows mapped into the peers with cudaIpcOpenMemHandle";
    }
    std::size_t bytes() const override { return bytes_; }
    void* localBase() const override { return base_; }

    void* peerBase(int peer) override {
        HALOEX_ASSERT(peer >= 0 && peer < static_cast<int>(exported_.size()), "peer rank out of range");
        const auto p = static_cast<std::size_t>(peer);
        if (peer == world_.rank()) return base_;
        if (sameProcess_) return reinterpret_cast<void*>(exported_[p].pointer);
        if (mapped_[p]) return mapped_[p];
        const cudaError_t status =
            cudaIpcOpenMemHandle(&mapped_[p], exported_[p].handle, cudaIpcMemLazyEnablePeerAccess);
        if (status != cudaSuccess) {
            cudaGetLastError();
            mapped_[p] = nullptr;
            throwError(ErrorKind::Cuda,
                       fmt::format("{}: rank {} cannot map rank {}'s window: cudaIpcOpenMemHandle failed: {} ({}); "
                                   "CUDA IPC needs the ranks on one node with peer-accessible GPUs (and no container "
                                   "isolation of the GPU driver); use the nvshmem backend otherwise",
                                   what_, world_.rank(), peer, cudaGetErrorName(status), cudaGetErrorString(status)));
        }
        opened_[p] = true;
        return mapped_[p];
    }

private:
    runtime::World& world_;
    std::string what_;
    std::size_t bytes_ = 0;
    DeviceAllocation allocation_;
    void* base_ = nullptr;
    bool sameProcess_ = false;
    std::vector<Exported> exported_;
    std::vector<void*> mapped_;
    std::vector<bool> opened_;
};

}  // namespace

std::unique_ptr<transport::PeerMemory> makeIpcPeerMemory(runtime::World& world, std::size_t bytes,
                                                         const std::string& what) {
    return std::make_unique<IpcPeerMemory>(world, bytes, what);
}

}  // namespace haloex::cuda
