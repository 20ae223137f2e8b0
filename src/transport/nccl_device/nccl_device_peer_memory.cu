// Peer memory through NCCL 2.28's device API (nccl_device_peer_memory.hpp):
// the only file of haloex that uses it. The API is experimental and 2.29
// changes it, so this file is pinned to NCCL 2.28 at compile time (below)
// and at run time (the loaded library's version).
//
// What is used, and what is not:
//   ncclMemAlloc + ncclCommWindowRegister(NCCL_WIN_DEFAULT): NCCL maps every
//     rank's allocation of its LSA team (the ranks of one node) into each
//     rank's address space; ncclGetLsaPointer, a device-inline function of
//     nccl_device.h, computes a peer's address from the window. It is only
//     device-callable, so one tiny kernel here resolves the peers' pointers
//     once, and the view carries plain pointers: the user's code includes no
//     NCCL header and needs no -rdc (this file needs none either).
//   ncclDevCommCreate with no requirements (no barriers, lsaMultimem off):
//     NCCL refuses it when the communicator has no symmetric-memory support,
//     which is how that is checked before registering (without the support
//     ncclCommWindowRegister would hand back a plain registration handle).
//     It also tells the LSA team on the host.
//   Never NVLink multicast: no multimem team is asked for, no
//   ncclGet*MultimemPointer is called, and the window is NOT registered with
//   NCCL_WIN_COLL_SYMMETRIC: that flag (NCCL's symmetric collective kernels,
//   which this provider does not run) makes NCCL 2.28 create a device
//   communicator with lsaMultimem = nvlsSupport (src/sym_kernels.cc,
//   ncclSymkInitOnce). NCCL_NVLS_ENABLE=0 is set unless the user set it.
#include <cuda_runtime.h>
#include <nccl.h>
#include <nccl_device.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "haloex/core/error.hpp"
#include "haloex/detail/cuda/blocking_ops.hpp"
#include "haloex/cuda/check.hpp"
#include "haloex/cuda/device_buffer.hpp"
#include "haloex/cuda/device_select.hpp"
#include "haloex/detail/nccl/communicator.hpp"
#include "nccl_device_peer_memory.hpp"

static_assert(NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0) && NCCL_VERSION_CODE < NCCL_VERSION(2, 29, 0),
              "haloex's nccl-device provider is written for the experimental "
              "device API of NCCL 2.28 (2.29 changed "
              "ncclDevCommRequirements); configure against NCCL 2.28.x, or "
              "port this file");

namespace haloex::nccl {
namespace {

constexpr std::size_t kGranularity = std::size_t{2} << 20;  // cuMem's usual granularity; windows are whole units

// "{}" holes filled in order: fmt's headers do not compile under nvcc in C++20.
template <class... Args>
std::string say(std::string_view pattern, const Args&... args) {
    std::ostringstream out;
    std::size_t at = 0;
    auto fill = [&](const auto& value) {
        const std::size_t hole = pattern.find("{}", at);
        HALOEX_ASSERT(hole != std::string_view::npos, "a message with fewer holes than values");
        out << pattern.substr(at, hole - at) << value;
        at = hole + 2;
    };
    (fill(args), ...);
    out << pattern.substr(at);
    return out.str();
}

// The version NCCL's library reports, as this header encodes it.
int loadedNcclVersion() {
    int version = 0;
    if (ncclGetVersion(&version) != ncclSuccess) return 0;
    return version;
}

// "2.28.3" for NCCL's version code 22803 (major * 10000 + minor * 100 + patch
// since 2.9), as users read it.
std::string ncclVersionText(int code) {
    return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." + std::to_string(code % 100);
}

// This rank's view of the CUDA peer access to the other ranks of its node
// whose GPUs it can see (a GPU hidden from this process, e.g. by
// CUDA_VISIBLE_DEVICES, is left to NCCL's own check).
std::string peerAccessReason(runtime::World& world) {
    const std::vector<cuda::GpuIdentity> gpus = cuda::gatherGpuIdentities(world);
    if (const std::string shared = cuda::describeSharedGpu(gpus); !shared.empty()) {
        return say("NCCL refuses two ranks on one GPU ({}); run one rank per GPU, or use the ipc backend", shared);
    }
    const cuda::GpuIdentity& me = gpus[static_cast<std::size_t>(world.rank())];
    for (int r = 0; r < world.size(); ++r) {
        const cuda::GpuIdentity& peer = gpus[static_cast<std::size_t>(r)];
        if (r == world.rank() || peer.host != me.host) continue;
        int device = -1;
        if (cudaDeviceGetByPCIBusId(&device, peer.busId.c_str()) != cudaSuccess) {
            cudaGetLastError();
            continue;
        }
        int can = 0;
        HALOEX_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, me.device, device));
        if (!can) {
            return say("rank {}'s GPU {} has no CUDA peer access to rank {}'s GPU {} "
                       "on {} (no NVLink/P2P "
                       "path), and NCCL's windows need it between every two GPUs of "
                       "a node; use the staged "
                       "or nccl backend",
                       world.rank(), me.busId, r, peer.busId, me.host);
        }
    }
    return {};
}

// The peers' addresses, as ncclGetLsaPointer computes them on the device.
__global__ void resolveLsaPointers(ncclWindow_t window, int lsaSize, std::uintptr_t* out) {
    for (int i = static_cast<int>(threadIdx.x); i < lsaSize; i += static_cast<int>(blockDim.x)) {
        out[i] = reinterpret_cast<std::uintptr_t>(ncclGetLsaPointer(window, 0, i));
    }
}

class NcclDevicePeerMemory final : public transport::PeerMemory {
public:
    NcclDevicePeerMemory(runtime::World& world, std::size_t bytes, const std::string& what)
        : world_(world), what_(what) {
        const auto largest = static_cast<std::size_t>(
            world.allReduceValue<std::int64_t>(static_cast<std::int64_t>(bytes), runtime::ReduceOp::Max));
        bytes_ = std::max<std::size_t>(1, (largest + kGranularity - 1) / kGranularity) * kGranularity;
        try {
            build();
        } catch (...) {
            release();
            throw;
        }
    }
    ~NcclDevicePeerMemory() override { release(); }
    NcclDevicePeerMemory(const NcclDevicePeerMemory&) = delete;
    NcclDevicePeerMemory& operator=(const NcclDevicePeerMemory&) = delete;

    std::string describe() const override {
        return say("nccl-device: NCCL {} window of {} bytes (ncclMemAlloc), peers "
                   "through ncclGetLsaPointer "
                   "(LSA team of {} rank(s), NVLink/P2P load/store, no multicast)",
                   loadedNcclVersion(), bytes_, lsaSize_);
    }
    std::size_t bytes() const override { return bytes_; }
    void* localBase() const override { return base_; }
    void* peerBase(int peer) override {
        HALOEX_ASSERT(peer >= 0 && peer < world_.size(), "peer rank out of range");
        if (peer == world_.rank()) return base_;
        const ncclTeam world = ncclTeamWorld(devComm_), lsa = ncclTeamLsa(devComm_);
        if (!ncclTeamRankIsMember(lsa, world, peer)) return nullptr;  // another node: no load/store path
        return reinterpret_cast<void*>(lsaPointers_[static_cast<std::size_t>(ncclTeamRankToTeam(lsa, world, peer))]);
    }

private:
    void build() {
        // Before NCCL reads its environment (at the first communicator).
        setenv("NCCL_NVLS_ENABLE", "0", /*overwrite=*/0);
        comm_ = createCommunicator(world_, "the nccl-device backend", "the ipc backend");
        // No requirements: no barriers, no resource buffer, no multimem.
        ncclDevCommRequirements requirements;
        std::memset(&requirements, 0, sizeof(requirements));
        requirements.lsaMultimem = false;
        const ncclResult_t status = ncclDevCommCreate(comm_, &requirements, &devComm_);
        if (status != ncclSuccess) {
            throwError(ErrorKind::Nccl, say("{}: ncclDevCommCreate failed: {} ({}): this NCCL "
                                            "communicator has no "
                                            "symmetric-memory support; NCCL needs CUDA P2P between "
                                            "every two GPUs of a node, "
                                            "cuMem allocations (NCCL_CUMEM_ENABLE not 0) and windows "
                                            "(NCCL_WIN_ENABLE not "
                                            "0); use the ipc backend otherwise",
                                            what_, ncclGetErrorString(status), ncclGetLastError(comm_)));
        }
        haveDevComm_ = true;
        lsaSize_ = devComm_.lsaSize;
        HALOEX_NCCL_CHECK(ncclMemAlloc(&base_, bytes_));
        cuda::fillBytesNow(base_, 0, bytes_);
        // Collective; the same size on every rank.
        HALOEX_NCCL_CHECK(ncclCommWindowRegister(comm_, base_, bytes_, &window_, NCCL_WIN_DEFAULT));
        if (window_ == nullptr) {
            throwError(ErrorKind::Nccl, say("{}: NCCL registered no window for {} bytes at {} (it skips the "
                                            "registration without symmetric-memory support)",
                                            what_, bytes_, base_));
        }
        cuda::DeviceBuffer<std::uintptr_t> pointers(static_cast<std::size_t>(lsaSize_));
        cuda::Stream stream;
        resolveLsaPointers<<<1, 128, 0, stream.get()>>>(window_, lsaSize_, pointers.data());
        HALOEX_CUDA_CHECK_LAUNCH();
        lsaPointers_.resize(static_cast<std::size_t>(lsaSize_));
        HALOEX_CUDA_CHECK(cudaMemcpyAsync(lsaPointers_.data(), pointers.data(), pointers.bytes(),
                                          cudaMemcpyDeviceToHost, stream.get()));
        HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
        // peerBase() indexes the pointers by LSA rank.
        HALOEX_ASSERT(devComm_.lsaRank >= 0 && devComm_.lsaRank < lsaSize_, "NCCL's LSA rank within its team");
    }

    // Reverse order of build(); NCCL's errors here are not actionable.
    void release() noexcept {
        if (haveDevComm_) ncclDevCommDestroy(comm_, &devComm_);
        haveDevComm_ = false;
        if (window_) ncclCommWindowDeregister(comm_, window_);
        window_ = nullptr;
        if (base_) ncclMemFree(base_);
        base_ = nullptr;
        if (comm_) ncclCommDestroy(comm_);
        comm_ = nullptr;
    }

    runtime::World& world_;
    std::string what_;
    std::size_t bytes_ = 0;
    ncclComm_t comm_ = nullptr;
    ncclDevComm devComm_{};
    bool haveDevComm_ = false;
    int lsaSize_ = 0;
    void* base_ = nullptr;
    ncclWindow_t window_ = nullptr;
    std::vector<std::uintptr_t> lsaPointers_;  // by LSA rank
};

}  // namespace

std::string deviceApiUnavailableReason(runtime::World& world) {
    std::string mine;
    if (const int version = loadedNcclVersion();
        version < NCCL_VERSION(2, 28, 0) || version >= NCCL_VERSION(2, 29, 0)) {
        mine = say("the NCCL library loaded at run time reports version {}, but "
                   "the nccl-device backend was "
                   "built for the device API of NCCL 2.28 ({}), which 2.29 "
                   "changed; run with an NCCL 2.28 "
                   "library (LD_LIBRARY_PATH) or rebuild against the one in use",
                   ncclVersionText(version), ncclVersionText(NCCL_VERSION_CODE));
    }
    if (world.kind() == "threads" && world.size() > 1) {
        // Every rank decides alike here: the World's kind and size are the same on
        // all.
        return say("the nccl-device backend runs one process per GPU (mpirun), but "
                   "these {} ranks are "
                   "threads of one process; use the ipc backend there",
                   world.size());
    }
    if (world.size() == 1) {
        // Seen on one H200 with NCCL 2.28.9: a communicator of one rank finds
        // no GPU pair with direct P2P (isAllDirectP2p 0), so it has no
        // symmetric memory and ncclDevCommCreate refuses it.
        return say("NCCL {} gives a communicator of one rank no symmetric memory (it "
                   "has no GPU pair with direct P2P), so the nccl-device backend needs "
                   "two or more ranks, one per GPU; use the ipc backend for one rank",
                   ncclVersionText(loadedNcclVersion()));
    }
    // Collective on every rank, whatever this rank found above.
    const std::string access = peerAccessReason(world);
    if (mine.empty()) mine = access;
    return runtime::agreeOnReason(world, mine);
}

std::unique_ptr<transport::PeerMemory> makeNcclDevicePeerMemory(runtime::World& world, std::size_t bytes,
                                                                const std::string& what) {
    if (const std::string why = deviceApiUnavailableReason(world); !why.empty()) {
        throwError(ErrorKind::InvalidInput, say("{}: the nccl-device backend cannot run here: {}", what, why));
    }
    return std::make_unique<NcclDevicePeerMemory>(world, bytes, what);
}

}  // namespace haloex::nccl
