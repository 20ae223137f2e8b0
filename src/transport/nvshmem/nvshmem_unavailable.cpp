// The nvshmem backend where this library has none
// (transport/entry_points.hpp): CMake compiles this file instead of
// nvshmem_entry.cpp and nvshmem_peer_memory.cpp, and HALOEX_NVSHMEM_MISSING
// says why.
#include "entry_points.hpp"
#include "haloex/core/error.hpp"

namespace haloex::transport::entry {

std::string nvshmemMissing() { return HALOEX_NVSHMEM_MISSING; }

std::unique_ptr<BlockTransport> makeNvshmem(runtime::World&, const TransportOptions&) {
    throwError(ErrorKind::InvalidInput, "the nvshmem backend is not in this build: " + nvshmemMissing());
}

std::unique_ptr<PeerMemory> makeNvshmemPeerMemory(runtime::World&, std::size_t, const std::string& what) {
    throwError(ErrorKind::InvalidInput, what + ": the nvshmem backend is not in this build: " + nvshmemMissing());
}

}  // namespace haloex::transport::entry
