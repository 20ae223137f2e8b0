// The one factory (transport/registry.hpp): the backend resolved, its memory
// space checked, then made by the library that holds it (entry_points.hpp).
#include "haloex/transport/registry.hpp"

#include <fmt/format.h>

#include "entry_points.hpp"
#include "haloex/core/error.hpp"
#include "haloex/transport/reference.hpp"
#include "staged/staged_transport.hpp"

namespace haloex::transport {
namespace {

void requireSpace(Backend backend, MemorySpace wanted, MemorySpace supported) {
    if (wanted == supported) return;
    const char* has = supported == MemorySpace::Host ? "host" : "device";
    throwError(ErrorKind::InvalidInput,
               fmt::format("the {} transport keeps its arrays in {} memory only; ask for {} memory, or use the staged "
                           "transport, which supports both",
                           toString(backend), has, has));
}

std::unique_ptr<BlockTransport> makeReference(runtime::World& world) {
    if (world.kind() != "threads" && world.kind() != "single") {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("the reference transport is the in-process oracle (thread or single-rank worlds); "
                               "this is a '{}' world: use the staged transport instead",
                               world.kind()));
    }
    return std::make_unique<ReferenceTransport>(world);
}

std::unique_ptr<BlockTransport> makeStaged(runtime::World& world, MemorySpace space) {
    if (space == MemorySpace::Host) return makeStagedHostTransport(world);
    if (const std::string why = entry::cudaMissing(); !why.empty()) {
        throwError(ErrorKind::InvalidInput, "the staged transport in device memory: " + why);
    }
    return entry::makeStagedDevice(world);
}

}  // namespace

MemorySpace memorySpaceFor(Backend backend, const TransportOptions& options) {
    if (options.memorySpace) return *options.memorySpace;
    return backend == Backend::Auto ? MemorySpace::Host : defaultMemorySpace(backend);
}

std::unique_ptr<BlockTransport> makeTransport(Backend backend, runtime::World& world, const TransportOptions& options) {
    const Backend concrete = resolveAuto(backend, world, memorySpaceFor(backend, options));
    if (const std::string why = unavailableReason(concrete); !why.empty()) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("the {} backend is not in this build: {}", toString(concrete), why));
    }
    // The backends below see the memory space decided, never an unset one.
    TransportOptions decided = options;
    decided.memorySpace = memorySpaceFor(concrete, options);
    const MemorySpace space = *decided.memorySpace;
    if (concrete != Backend::Staged) requireSpace(concrete, space, defaultMemorySpace(concrete));
    switch (concrete) {
        case Backend::Reference: return makeReference(world);
        case Backend::Staged: return makeStaged(world, space);
        case Backend::Ipc: return entry::makeIpc(world);
        case Backend::Nccl: return entry::makeNccl(world);
        case Backend::Nvshmem: return entry::makeNvshmem(world, decided);
        case Backend::NcclDevice:
            // The fused kernels over NCCL's LSA windows, where the device API
            // can run in this job (decided alike on every rank: collective).
            if (const std::string why = unavailableReason(Backend::NcclDevice, world); !why.empty()) {
                throwError(ErrorKind::InvalidInput, fmt::format("the nccl-device transport cannot run here: {}", why));
            }
            return entry::makeNcclDevice(world, decided);
        case Backend::Auto: break;
    }
    HALOEX_ASSERT(false, fmt::format("backend '{}' has no factory branch", toString(concrete)));
    return nullptr;  // not reached
}

}  // namespace haloex::transport
