#pragma once
/// @file
/// The halo backends as a typed registry: which mechanism moves the halo
/// data, which of them this library has, and why the others are missing, so
/// that an application asks at run time instead of writing `#if` around
/// optional dependencies. One place for every backend: its name, whether it
/// is here, and (registry.hpp) the one factory that makes it.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "haloex/runtime/world.hpp"
#include "haloex/transport/types.hpp"

namespace haloex::transport {

/// A mechanism that moves halo data between ranks.
enum class Backend {
    Reference,  ///< host memory, in-process ranks (threads): the bitwise oracle
    Staged,     ///< host or device memory, CPU-orchestrated over any World (MPI included)
    Ipc,        ///< device memory, CUDA IPC peer copies within a node
    Nccl,       ///< device memory, stream-ordered NCCL send/receive
    Nvshmem,    ///< device memory, GPU-initiated (fused kernels, put with signal)
    /// Device memory through NCCL 2.28's device API: the fused, GPU-initiated
    /// exchange of the Nvshmem design over NCCL's load/store (LSA) windows (no
    /// NVSHMEM, no -rdc, one process per GPU, never multicast), and the device
    /// halo view's peer memory.
    NcclDevice,
    /// Resolved to one of the above: measured by selectBackend
    /// (halo/auto_select.hpp), or by resolveAuto's rule.
    Auto,
};

/// "reference", "staged", "ipc", "nccl", "nvshmem", "nccl-device", "auto".
std::string_view toString(Backend backend);
/// The inverse of toString; std::nullopt for an unknown name.
std::optional<Backend> backendFromString(std::string_view name);
/// Like backendFromString, but an unknown name throws InvalidInput listing the known ones.
Backend parseBackend(std::string_view name);

/// Every concrete backend (Auto excluded), in order of sophistication.
std::vector<Backend> knownBackends();
/// Those of knownBackends() this library contains (Reference and Staged always).
std::vector<Backend> availableBackends();
/// Empty when `backend` is in this library; otherwise why not: the
/// dependency that was missing at configure time, or, in the CPU-only
/// haloex::halo, that the device backends are in haloex::transports. Auto is
/// always available.
std::string unavailableReason(Backend backend);
/// Collective over `world`: empty when `backend` can run in this job, else
/// why not -- unavailableReason(backend), then no usable GPU for a device
/// backend (a CPU run), then what the backend itself refuses here. Nccl: ranks
/// sharing a GPU (NCCL refuses them). NcclDevice: ranks that are threads of
/// one process, ranks sharing a GPU, GPUs of one node without peer access, an
/// NCCL other than 2.28 at run time. Every rank gets a reason when any rank
/// has one. Select each rank's CUDA device first (cuda::selectDevice).
std::string unavailableReason(Backend backend, runtime::World& world);

/// Empty when this process can use device memory (a CUDA build and a visible
/// GPU); otherwise why not -- for applications that skip device work politely.
std::string deviceUnavailableReason();

/// The memory a backend's arrays live in when the caller does not say
/// (TransportOptions::memorySpace unset): Host for Reference and Staged
/// (they run on any build and machine; Staged also takes device memory when
/// asked), Device for Ipc, Nccl, Nvshmem and NcclDevice. Auto is resolved first.
MemorySpace defaultMemorySpace(Backend backend);

/// Auto by a fixed rule, without measuring: a thread world gets the
/// Reference backend; host memory or a single rank gets Staged; otherwise
/// Nvshmem where built, else Ipc. Concrete backends are returned unchanged.
/// The Auto that measures is selectBackend (halo/auto_select.hpp): it times
/// the candidates inside the caller's representative steps, decides
/// collectively and caches the choice per plan shape; it keeps this rule for
/// the thread world and the single rank, where there is nothing to measure.
Backend resolveAuto(Backend backend, const runtime::World& world, MemorySpace space);
/// Why resolveAuto(Auto, world, space) gives what it gives, in words for a log.
std::string autoRuleReason(const runtime::World& world, MemorySpace space);

}  // namespace haloex::transport
