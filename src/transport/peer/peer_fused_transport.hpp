#pragma once
// A GPU-initiated particle transport over load/store peer memory: the fused
// exchange of the nvshmem design (one kernel per exchange, per-pulse signals,
// the dependency split, timed waits with the same diagnostics) instantiated
// with the load/store peer access (fused/fused_exchange.cuh), its
// coordinates, forces and signals in PeerMemory windows of `provider`
// (halo/peer_memory.hpp): the caller's coordinates and forces (allocated
// by the collective allocator in this transport's arrayMemory()), its own
// signals and search-step staging. No NVSHMEM, no relocatable device code;
// graph capturable. Search-step blocks go into the peers' staging windows (a
// copy kernel, then a signal, waited for with the time limit:
// fused/search_blocks.hpp).
//   provider NcclDevice: the `nccl-device` backend (NCCL 2.28's LSA windows)
//   provider Ipc:        the same transport over CUDA IPC mappings (tests)
// Internal to haloex (the registry makes it: halo/backend.hpp).
#include <memory>
#include <string>

#include "haloex/halo/backend.hpp"
#include "haloex/runtime/world.hpp"
#include "haloex/transport/block_transport.hpp"

namespace haloex::transport {

// Collective over `world`; `name` is what name() and the messages say.
std::unique_ptr<BlockTransport> makePeerFusedTransport(runtime::World& world, const TransportOptions& options,
                                                       Backend provider, const std::string& name);

}  // namespace haloex::transport
