// What the registry asks of haloex_cuda (transport/entry_points.hpp): device
// memory, the device side of the staged transport, CUDA IPC peer memory.
// Without this library, cuda_unavailable.cpp answers instead.
#include "entry_points.hpp"
#include "haloex/cuda/device_buffer.hpp"
#include "haloex/cuda/device_select.hpp"
#include "haloex/cuda/ipc_peer_memory.hpp"
#include "staged_transport.hpp"

namespace haloex::transport::entry {

std::string cudaMissing() { return {}; }

std::string noVisibleDevice() {
    if (cuda::deviceCount() == 0) return "no CUDA device is visible to this process (no driver or no GPU)";
    return {};
}

std::string sharedGpus(runtime::World& world) { return cuda::describeSharedGpu(cuda::gatherGpuIdentities(world)); }

std::unique_ptr<BlockTransport> makeStagedDevice(runtime::World& world) { return makeStagedDeviceTransport(world); }

std::unique_ptr<PeerMemory> makeIpcPeerMemory(runtime::World& world, std::size_t bytes, const std::string& what) {
    return cuda::makeIpcPeerMemory(world, bytes, what);
}

}  // namespace haloex::transport::entry
