// Transport selection by name. What this build holds is known twice: from
// haloex/config.hpp (what configure found) and from HALOEX_LINKED_* (which
// transport libraries this target links), so a half-built tree still links.
#include "haloex/transport/factory.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "haloex/config.hpp"
#include "haloex/core/error.hpp"
#include "haloex/transport/reference.hpp"
#include "haloex/transport/staged.hpp"

#if HALOEX_HAVE_CUDA && defined(HALOEX_LINKED_CUDA)
#include "haloex/transport/ipc.hpp"
#define HALOEX_WITH_CUDA_TRANSPORTS 1
#else
#define HALOEX_WITH_CUDA_TRANSPORTS 0
#endif

#if HALOEX_HAVE_NCCL && defined(HALOEX_LINKED_NCCL)
#include "haloex/transport/nccl.hpp"
#define HALOEX_WITH_NCCL_TRANSPORT 1
#else
#define HALOEX_WITH_NCCL_TRANSPORT 0
#endif

// NVSHMEM: filled in by the nvshmem transport (transport/nvshmem.hpp,
// library haloex_nvshmem). Until both exist this build reports it missing.
#if HALOEX_HAVE_NVSHMEM && defined(HALOEX_LINKED_NVSHMEM) && __has_include("haloex/transport/nvshmem.hpp")
#include "haloex/transport/nvshmem.hpp"
#define HALOEX_WITH_NVSHMEM_TRANSPORT 1
#else
#define HALOEX_WITH_NVSHMEM_TRANSPORT 0
#endif

// Why optional parts are missing, from the configure step (CMake passes them).
#ifndef HALOEX_CUDA_REASON
#define HALOEX_CUDA_REASON "unknown"
#endif
#ifndef HALOEX_NCCL_REASON
#define HALOEX_NCCL_REASON "unknown"
#endif
#ifndef HALOEX_NVSHMEM_REASON
#define HALOEX_NVSHMEM_REASON "unknown"
#endif

namespace haloex::transport {
namespace {

std::string cudaMissing() {
    return fmt::format("this build has no CUDA: at configure time: {}; reconfigure with a CUDA toolkit",
                       HALOEX_CUDA_REASON);
}

std::string missingReason(std::string_view name) {
    if (name == "reference" || name == "staged") return {};
    if (name == "ipc") return HALOEX_WITH_CUDA_TRANSPORTS ? std::string{} : cudaMissing();
    if (name == "nccl") {
        if (HALOEX_WITH_NCCL_TRANSPORT) return {};
        if (!HALOEX_WITH_CUDA_TRANSPORTS) return cudaMissing();
        if (!HALOEX_HAVE_NCCL) {
            return fmt::format("this build has no NCCL: at configure time: {}; reconfigure with NCCL_HOME set",
                               HALOEX_NCCL_REASON);
        }
        return "the library haloex_nccl was not built";
    }
    if (name == "nvshmem") {
        if (HALOEX_WITH_NVSHMEM_TRANSPORT) return {};
        if (!HALOEX_HAVE_NVSHMEM) {
            return fmt::format("this build has no NVSHMEM: at configure time: {}", HALOEX_NVSHMEM_REASON);
        }
        return "the nvshmem transport (library haloex_nvshmem) is not part of this build";
    }
    return fmt::format("unknown transport '{}'; the known ones are: {}", name, fmt::join(knownTransports(), ", "));
}

void requireSpace(std::string_view name, MemorySpace wanted, MemorySpace supported) {
    if (wanted == supported) return;
    const char* has = supported == MemorySpace::Host ? "host" : "device";
    throwError(ErrorKind::InvalidInput,
               fmt::format("the {} transport keeps its arrays in {} memory only; ask for {} memory, or use the staged "
                           "transport, which supports both",
                           name, has, has));
}

}  // namespace

std::vector<std::string> knownTransports() { return {"reference", "staged", "ipc", "nccl", "nvshmem"}; }

std::vector<std::string> availableTransports() {
    std::vector<std::string> out;
    for (const std::string& name : knownTransports()) {
        if (missingReason(name).empty()) out.push_back(name);
    }
    return out;
}

std::string transportUnavailableReason(std::string_view name) { return missingReason(name); }

std::unique_ptr<BlockTransport> makeStagedTransport(runtime::World& world, MemorySpace space) {
    if (space == MemorySpace::Host) return makeStagedHostTransport(world);
#if HALOEX_WITH_CUDA_TRANSPORTS
    return makeStagedDeviceTransport(world);
#else
    throwError(ErrorKind::InvalidInput, "the staged transport in device memory: " + cudaMissing());
#endif
}

std::unique_ptr<BlockTransport> makeTransport(std::string_view name, runtime::World& world,
                                              const TransportOptions& options) {
    if (const std::string why = missingReason(name); !why.empty()) {
        throwError(ErrorKind::InvalidInput, fmt::format("transport '{}' is not available: {}", name, why));
    }
    if (name == "reference") {
        requireSpace(name, options.memorySpace, MemorySpace::Host);
        if (world.kind() != "threads" && world.kind() != "single") {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("the reference transport is the in-process oracle (thread or single-rank worlds); "
                                   "this is a '{}' world: use the staged transport instead",
                                   world.kind()));
        }
        return std::make_unique<ReferenceTransport>(world);
    }
    if (name == "staged") return makeStagedTransport(world, options.memorySpace);
#if HALOEX_WITH_CUDA_TRANSPORTS
    if (name == "ipc") {
        requireSpace(name, options.memorySpace, MemorySpace::Device);
        return makeIpcTransport(world);
    }
#endif
#if HALOEX_WITH_NCCL_TRANSPORT
    if (name == "nccl") {
        requireSpace(name, options.memorySpace, MemorySpace::Device);
        return makeNcclTransport(world);
    }
#endif
#if HALOEX_WITH_NVSHMEM_TRANSPORT
    if (name == "nvshmem") {
        requireSpace(name, options.memorySpace, MemorySpace::Device);
        return makeNvshmemTransport(world, options);
    }
#endif
    HALOEX_ASSERT(false, fmt::format("transport '{}' is available but has no factory branch", name));
    return nullptr;  // not reached
}

}  // namespace haloex::transport
