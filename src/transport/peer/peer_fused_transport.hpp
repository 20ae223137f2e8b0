#pragma once
// A GPU-initiated particle transport over load/store peer memory: the fused
// exchange of the nvshmem design (one kernel per exchange, per-pulse signals,
// the dependency split, timed waits with the same diagnostics) instantiated
// with the load/store peer access (fused/fused_exchange.cuh), its
// coordinates, forces and signals in PeerMemory windows
// (transport/peer_memory.hpp): the caller's coordinates and forces (allocated
// by the collective allocator in this transport's arrayMemory()), its own
// signals and search-step staging. No NVSHMEM, no relocatable device code;
// graph capturable. Search-step blocks go into the peers' staging windows (a
// copy kernel, then a signal, waited for with the time limit:
// fused/search_blocks.hpp).
//   windows NcclWindow: the `nccl-device` backend (NCCL 2.28's LSA windows,
//                       src/transport/nccl_device)
//   windows IpcWindow:  the same transport over CUDA IPC mappings (tests)
// Internal to haloex (library haloex_peer; the registry makes it).
#include <functional>
#include <memory>
#include <string>

#include "haloex/runtime/world.hpp"
#include "haloex/transport/block_transport.hpp"
#include "haloex/transport/peer_memory.hpp"
#include "haloex/transport/registry.hpp"

namespace haloex::transport {

// Collective: a PeerMemory of at least `bytes` on every rank; `what` names it in errors.
using PeerAllocator =
    std::function<std::unique_ptr<PeerMemory>(runtime::World& world, std::size_t bytes, const std::string& what)>;

// Collective over `world`. `windows` is the memory `allocate` gives (what
// arrayMemory() asks of the caller's arrays); `name` is what name() and the
// messages say.
std::unique_ptr<BlockTransport> makePeerFusedTransport(runtime::World& world, const TransportOptions& options,
                                                       ArrayMemory windows, PeerAllocator allocate,
                                                       const std::string& name);

}  // namespace haloex::transport
