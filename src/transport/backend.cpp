// The backends' names and availability (transport/backend.hpp). What this
// library holds is asked of the libraries themselves (entry_points.hpp).
#include "haloex/transport/backend.hpp"

#include <array>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "entry_points.hpp"
#include "haloex/core/error.hpp"

namespace haloex::transport {
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

bool onDevice(Backend backend) {
    return backend == Backend::Ipc || backend == Backend::Nccl || backend == Backend::Nvshmem ||
           backend == Backend::NcclDevice;
}

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
    return {Backend::Reference, Backend::Staged, Backend::Ipc, Backend::Nccl, Backend::Nvshmem, Backend::NcclDevice};
}

std::vector<Backend> availableBackends() {
    std::vector<Backend> out;
    for (Backend b : knownBackends()) {
        if (unavailableReason(b).empty()) out.push_back(b);
    }
    return out;
}

std::string unavailableReason(Backend backend) {
    switch (backend) {
        case Backend::Reference:
        case Backend::Staged:
        case Backend::Auto: return {};
        case Backend::Ipc: return entry::ipcMissing();
        case Backend::Nccl: return entry::ncclMissing();
        case Backend::Nvshmem: return entry::nvshmemMissing();
        case Backend::NcclDevice: return entry::ncclDeviceMissing();
    }
    return {};  // not reached
}

std::string unavailableReason(Backend backend, runtime::World& world) {
    if (std::string why = unavailableReason(backend); !why.empty()) return why;
    if (onDevice(backend)) {
        // Agreed before the collective checks below: a rank without a GPU
        // must not return while the others wait for it in them.
        std::string mine = deviceUnavailableReason();
        if (!mine.empty() && world.size() > 1) mine = fmt::format("rank {}: {}", world.rank(), mine);
        if (std::string why = runtime::agreeOnReason(world, mine); !why.empty()) return why;
    }
    if (backend == Backend::Nccl) {
        const std::string shared = entry::sharedGpus(world);
        if (shared.empty()) return {};
        return fmt::format("NCCL refuses two ranks on one GPU ({}); run one rank per GPU", shared);
    }
    if (backend == Backend::NcclDevice) return entry::ncclDeviceCannotRun(world);
    return {};
}

std::string deviceUnavailableReason() { return entry::noVisibleDevice(); }

MemorySpace defaultMemorySpace(Backend backend) {
    HALOEX_ASSERT(backend != Backend::Auto, "defaultMemorySpace needs a concrete backend (resolve Auto first)");
    return onDevice(backend) ? MemorySpace::Device : MemorySpace::Host;
}

Backend resolveAuto(Backend backend, const runtime::World& world, MemorySpace space) {
    if (backend != Backend::Auto) return backend;
    if (world.kind() == "threads") return Backend::Reference;
    if (space == MemorySpace::Host || world.size() == 1) return Backend::Staged;
    return unavailableReason(Backend::Nvshmem).empty() ? Backend::Nvshmem : Backend::Ipc;
}

std::string autoRuleReason(const runtime::World& world, MemorySpace space) {
    if (world.kind() == "threads") return "virtual ranks in one process exchange through the reference transport";
    if (world.size() == 1) return "one rank has no halo to move between ranks";
    if (space == MemorySpace::Host) return "host memory: the staged transport";
    return unavailableReason(Backend::Nvshmem).empty() ? "GPU-initiated, built with NVSHMEM"
                                                       : "built without NVSHMEM: CUDA IPC within the node";
}

}  // namespace haloex::transport
