// The typed backend registry (halo/backend.hpp) over the transport factory.
#include "haloex/halo/backend.hpp"

#include <array>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "haloex/config.hpp"
#include "haloex/core/error.hpp"

#if HALOEX_HAVE_CUDA && defined(HALOEX_LINKED_CUDA)
#include "haloex/cuda/device_buffer.hpp"
#include "haloex/cuda/device_select.hpp"
#include "peer_fused_transport.hpp"
#define HALOEX_BACKEND_WITH_CUDA 1
#else
#define HALOEX_BACKEND_WITH_CUDA 0
#endif
#if HALOEX_HAVE_NCCL_DEVICE && defined(HALOEX_LINKED_NCCL)
#include "nccl_device_peer_memory.hpp"
#define HALOEX_BACKEND_WITH_NCCL_DEVICE 1
#else
#define HALOEX_BACKEND_WITH_NCCL_DEVICE 0
#endif
#ifndef HALOEX_NCCL_DEVICE_REASON
#define HALOEX_NCCL_DEVICE_REASON "unknown"
#endif

namespace haloex {
namespace {

struct Named {
    Backend backend;
    std::string_view name;
};
constexpr std::array<Named, 7> kNames{{{Backend::Reference, "reference"},
                                       {Backend::Staged, "staged"},
                                       {Backend::Ipc, "ipc"},
                                       {Backend::Nccl, "nccl"},
                                       {Backend::Nvshmem, "nvshmem"},
                                       {Backend::NcclDevice, "nccl-device"},
                                       {Backend::Auto, "auto"}}};

std::string ncclDeviceMissing() {
    if (HALOEX_BACKEND_WITH_NCCL_DEVICE) return {};
    return fmt::format("this build has no NCCL 2.28 device API: at configure time: {}", HALOEX_NCCL_DEVICE_REASON);
}

#if HALOEX_BACKEND_WITH_CUDA
// Collective: why NCCL cannot run with these ranks' GPUs (two on one), or empty.
std::string ncclSharedGpuReason(runtime::World& world) {
    const std::string shared = cuda::describeSharedGpu(cuda::gatherGpuIdentities(world));
    if (shared.empty()) return {};
    return fmt::format("NCCL refuses two ranks on one GPU ({}); run one rank per GPU", shared);
}
#endif

}  // namespace

std::string_view toString(Backend backend) {
    for (const Named& n : kNames) {
        if (n.backend == backend) return n.name;
    }
    HALOEX_ASSERT(false, "a Backend value without a name");
    return {};  // not reached
}

std::optional<Backend> backendFromString(std::string_view name) {
    for (const Named& n : kNames) {
        if (n.name == name) return n.backend;
    }
    return std::nullopt;
}

Backend parseBackend(std::string_view name) {
    if (const auto b = backendFromString(name)) return *b;
    std::vector<std::string_view> names;
    for (const Named& n : kNames) names.push_back(n.name);
    throwError(ErrorKind::InvalidInput,
               fmt::format("unknown halo backend '{}'; the known ones are: {}", name, fmt::join(names, ", ")));
}

std::vector<Backend> knownBackends() {
    // The factory's order, so the two lists cannot drift apart, then the
    // fused transport over NCCL's windows (made here, not by the factory).
    std::vector<Backend> out;
    for (const std::string& name : transport::knownTransports()) out.push_back(parseBackend(name));
    out.push_back(Backend::NcclDevice);
    return out;
}

std::vector<Backend> availableBackends() {
    std::vector<Backend> out;
    for (const std::string& name : transport::availableTransports()) out.push_back(parseBackend(name));
    if (ncclDeviceMissing().empty()) out.push_back(Backend::NcclDevice);
    return out;
}

std::string unavailableReason(Backend backend) {
    if (backend == Backend::Auto) return {};
    if (backend == Backend::NcclDevice) return ncclDeviceMissing();
    return transport::transportUnavailableReason(toString(backend));
}

std::string unavailableReason(Backend backend, runtime::World& world) {
    if (std::string why = unavailableReason(backend); !why.empty()) return why;
    const bool device = backend == Backend::Ipc || backend == Backend::Nccl || backend == Backend::Nvshmem ||
                        backend == Backend::NcclDevice;
    if (device) {
        // Agreed before the collective checks below: a rank without a GPU
        // must not return while the others wait for it in them.
        std::string mine = deviceUnavailableReason();
        if (!mine.empty() && world.size() > 1) mine = fmt::format("rank {}: {}", world.rank(), mine);
        if (std::string why = runtime::agreeOnReason(world, mine); !why.empty()) return why;
    }
#if HALOEX_BACKEND_WITH_CUDA
    if (backend == Backend::Nccl) return ncclSharedGpuReason(world);
#endif
#if HALOEX_BACKEND_WITH_NCCL_DEVICE
    if (backend == Backend::NcclDevice) return nccl::deviceApiUnavailableReason(world);
#endif
    (void)world;
    return {};
}

std::string deviceUnavailableReason() {
#if HALOEX_BACKEND_WITH_CUDA
    if (cuda::deviceCount() == 0) return "no CUDA device is visible to this process (no driver or no GPU)";
    return {};
#else
    return unavailableReason(Backend::Ipc);  // the configure-time reason CUDA is missing
#endif
}

transport::MemorySpace defaultMemorySpace(Backend backend) {
    HALOEX_ASSERT(backend != Backend::Auto, "defaultMemorySpace needs a concrete backend (resolve Auto first)");
    return backend == Backend::Reference ? transport::MemorySpace::Host : transport::MemorySpace::Device;
}

Backend resolveAuto(Backend backend, const runtime::World& world, transport::MemorySpace space) {
    if (backend != Backend::Auto) return backend;
    if (world.kind() == "threads") return Backend::Reference;
    if (space == transport::MemorySpace::Host || world.size() == 1) return Backend::Staged;
    return unavailableReason(Backend::Nvshmem).empty() ? Backend::Nvshmem : Backend::Ipc;
}

std::string autoRuleReason(const runtime::World& world, transport::MemorySpace space) {
    if (world.kind() == "threads") return "virtual ranks in one process exchange through the reference transport";
    if (world.size() == 1) return "one rank has no halo to move between ranks";
    if (space == transport::MemorySpace::Host) return "host memory: the staged transport";
    return unavailableReason(Backend::Nvshmem).empty() ? "GPU-initiated, built with NVSHMEM"
                                                       : "built without NVSHMEM: CUDA IPC within the node";
}

std::unique_ptr<transport::BlockTransport> makeTransport(Backend backend, runtime::World& world,
                                                         const transport::TransportOptions& options) {
    const Backend concrete = resolveAuto(backend, world, options.memorySpace);
    if (concrete == Backend::NcclDevice) {
#if HALOEX_BACKEND_WITH_CUDA && HALOEX_BACKEND_WITH_NCCL_DEVICE
        // The fused kernels over NCCL's LSA windows, where the device API can
        // run in this job (decided alike on every rank: collective).
        if (const std::string why = unavailableReason(Backend::NcclDevice, world); !why.empty()) {
            throwError(ErrorKind::InvalidInput, fmt::format("the nccl-device transport cannot run here: {}", why));
        }
        return transport::makePeerFusedTransport(world, options, Backend::NcclDevice, "nccl-device");
#else
        throwError(ErrorKind::InvalidInput, fmt::format("the nccl-device backend is not in this build: {}",
                                                        unavailableReason(Backend::NcclDevice)));
#endif
    }
    return transport::makeTransport(toString(concrete), world, options);
}

}  // namespace haloex
