// What the registry asks of haloex_nvshmem (transport/entry_points.hpp; the
// peer memory is nvshmem_peer_memory.cpp); without this library,
// nvshmem_unavailable.cpp answers instead.
#include "entry_points.hpp"
#include "nvshmem_transport.hpp"

namespace haloex::transport::entry {

std::string nvshmemMissing() { return {}; }

std::unique_ptr<BlockTransport> makeNvshmem(runtime::World& world, const TransportOptions& options) {
    return makeNvshmemTransport(world, options);
}

}  // namespace haloex::transport::entry
