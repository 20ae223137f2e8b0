#pragma once
// What the registry (backend.cpp, registry.cpp, peer_memory.cpp) asks of the
// libraries that hold the device backends, one group per library. Each group
// is defined twice: by that library (its folder's *_entry.cpp) and by the
// folder's *_unavailable.cpp, which says why the library is missing and
// refuses to make anything; CMake links one or the other
// (src/transport/CMakeLists.txt), so no source asks the preprocessor what
// this build has.
#include <cstddef>
#include <memory>
#include <string>

#include "haloex/runtime/world.hpp"
#include "haloex/transport/block_transport.hpp"
#include "haloex/transport/peer_memory.hpp"
#include "haloex/transport/registry.hpp"

namespace haloex::transport::entry {

// ---- haloex_cuda (src/cuda): device memory, the device side of staged, CUDA IPC peer memory

// Empty, or why this library has no CUDA.
std::string cudaMissing();
// Empty when this process sees a GPU; else why not (cudaMissing() first).
std::string noVisibleDevice();
// Collective: which ranks share a GPU, in words, or empty.
std::string sharedGpus(runtime::World& world);
std::unique_ptr<BlockTransport> makeStagedDevice(runtime::World& world);
std::unique_ptr<PeerMemory> makeIpcPeerMemory(runtime::World& world, std::size_t bytes, const std::string& what);

// ---- haloex_ipc (src/transport/ipc)

std::string ipcMissing();
std::unique_ptr<BlockTransport> makeIpc(runtime::World& world);

// ---- haloex_nccl (src/transport/nccl)

std::string ncclMissing();
std::unique_ptr<BlockTransport> makeNccl(runtime::World& world);

// ---- haloex_nvshmem (src/transport/nvshmem)

std::string nvshmemMissing();
std::unique_ptr<BlockTransport> makeNvshmem(runtime::World& world, const TransportOptions& options);
std::unique_ptr<PeerMemory> makeNvshmemPeerMemory(runtime::World& world, std::size_t bytes, const std::string& what);

// ---- haloex_nccl_device (src/transport/nccl_device): NCCL 2.28's device API

std::string ncclDeviceMissing();
// Collective: empty when the device API can run in this job, else why not.
std::string ncclDeviceCannotRun(runtime::World& world);
std::unique_ptr<PeerMemory> makeNcclWindow(runtime::World& world, std::size_t bytes, const std::string& what);
// The fused transport (src/transport/peer) over NCCL windows.
std::unique_ptr<BlockTransport> makeNcclDevice(runtime::World& world, const TransportOptions& options);

}  // namespace haloex::transport::entry
