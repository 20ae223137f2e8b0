// The typed backend registry (halo/backend.hpp) over the transport factory.
#include "haloex/halo/backend.hpp"

#include <array>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "haloex/config.hpp"
#include "haloex/core/error.hpp"

#if HALOEX_HAVE_CUDA && defined(HALOEX_LINKED_CUDA)
#include "haloex/cuda/device_buffer.hpp"
#define HALOEX_BACKEND_WITH_CUDA 1
#else
#define HALOEX_BACKEND_WITH_CUDA 0
#endif

namespace haloex {
namespace {

struct Named {
    Backend backend;
    std::string_view name;
};
constexpr std::array<Named, 6> kNames{{{Backend::Reference, "reference"},
                                       {Backend::Staged, "staged"},
                                       {Backend::Ipc, "ipc"},
                                       {Backend::Nccl, "nccl"},
                                       {Backend::Nvshmem, "nvshmem"},
                                       {Backend::Auto, "auto"}}};

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
    // The factory's order, so the two lists cannot drift apart.
    std::vector<Backend> out;
    for (const std::string& name : transport::knownTransports()) out.push_back(parseBackend(name));
    return out;
}

std::vector<Backend> availableBackends() {
    std::vector<Backend> out;
    for (const std::string& name : transport::availableTransports()) out.push_back(parseBackend(name));
    return out;
}

std::string unavailableReason(Backend backend) {
    if (backend == Backend::Auto) return {};
    return transport::transportUnavailableReason(toString(backend));
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

std::unique_ptr<transport::ParticleTransport> makeTransport(Backend backend, runtime::World& world,
                                                            const transport::TransportOptions& options) {
    const Backend concrete = resolveAuto(backend, world, options.memorySpace);
    return transport::makeTransport(toString(concrete), world, options);
}

}  // namespace haloex
