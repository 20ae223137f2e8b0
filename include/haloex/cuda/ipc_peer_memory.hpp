#pragma once
// Peer memory through CUDA IPC (haloex/halo/peer_memory.hpp), in haloex_cuda:
// the Ipc provider behind allocatePeerMemory(), callable directly by code
// that links haloex_cuda without haloex_transports (the micro-benchmarks).
#include <cstddef>
#include <memory>
#include <string>

#include "haloex/halo/peer_memory.hpp"

namespace haloex::cuda {

// Collective: a cudaMalloc'd allocation per rank (the maximum of `bytes`,
// rounded up to whole 2 MiB units: CUDA IPC shares whole allocation blocks),
// zero-filled; peers mapped with cudaIpcOpenMemHandle on first use. Every
// rank must be on one node. Ranks that are threads of one process use each
// other's pointers.
std::unique_ptr<PeerMemory> makeIpcPeerMemory(runtime::World& world, std::size_t bytes, const std::string& what);

}  // namespace haloex::cuda
