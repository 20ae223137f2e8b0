// What the registry asks of haloex_nccl_device (transport/entry_points.hpp):
// NCCL 2.28's windows, and the fused transport of src/transport/peer over
// them; without this library, nccl_device_unavailable.cpp answers instead.
#include "entry_points.hpp"
#include "nccl_device_peer_memory.hpp"
#include "peer_fused_transport.hpp"

namespace haloex::transport::entry {

std::string ncclDeviceMissing() { return {}; }

std::string ncclDeviceCannotRun(runtime::World& world) { return nccl::deviceApiUnavailableReason(world); }

std::unique_ptr<PeerMemory> makeNcclWindow(runtime::World& world, std::size_t bytes, const std::string& what) {
    return nccl::makeNcclDevicePeerMemory(world, bytes, what);
}

std::unique_ptr<BlockTransport> makeNcclDevice(runtime::World& world, const TransportOptions& options) {
    return makePeerFusedTransport(world, options, ArrayMemory::NcclWindow, &makeNcclWindow, "nccl-device");
}

}  // namespace haloex::transport::entry
