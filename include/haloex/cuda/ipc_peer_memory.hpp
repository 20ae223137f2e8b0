#pragma once
/// @file
/// Peer memory through CUDA IPC (transport/peer_memory.hpp), in haloex_cuda:
/// the Ipc provider behind allocatePeerMemory(), callable directly by code
/// that links haloex_cuda without haloex_transports (the micro-benchmarks).
#include <cstddef>
#include <memory>
#include <string>

#include "haloex/transport/peer_memory.hpp"

namespace haloex::cuda {

/// Collective: a cudaMalloc'd allocation per rank (the maximum of `bytes`,
/// rounded up to whole 2 MiB units: CUDA IPC shares whole allocation blocks),
/// zero-filled; peers mapped with cudaIpcOpenMemHandle on first use. Ranks
/// that are threads of one process use each other's pointers. Throws
/// InvalidInput on every rank alike where CUDA IPC cannot be used: ranks on
/// several nodes, or a rank whose GPU refuses to export the allocation.
std::unique_ptr<transport::PeerMemory> makeIpcPeerMemory(runtime::World& world, std::size_t bytes,
                                                         const std::string& what);

}  // namespace haloex::cuda
