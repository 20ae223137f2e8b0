// What the registry asks of haloex_cuda (transport/entry_points.hpp), where
// this library has none: CMake compiles this file instead of cuda_entry.cpp
// into the CPU-only haloex_halo (and, in a build without CUDA, into every
// library of the registry), and HALOEX_CUDA_MISSING says why.
#include "entry_points.hpp"
#include "haloex/core/error.hpp"

namespace haloex::transport::entry {

std::string cudaMissing() { return HALOEX_CUDA_MISSING; }

std::string noVisibleDevice() { return cudaMissing(); }

std::string sharedGpus(runtime::World&) { return {}; }

std::unique_ptr<BlockTransport> makeStagedDevice(runtime::World&) {
    throwError(ErrorKind::InvalidInput, "the staged transport in device memory: " + cudaMissing());
}

std::unique_ptr<PeerMemory> makeIpcPeerMemory(runtime::World&, std::size_t, const std::string& what) {
    throwError(ErrorKind::InvalidInput, what + ": CUDA IPC peer memory: " + cudaMissing());
}

}  // namespace haloex::transport::entry
