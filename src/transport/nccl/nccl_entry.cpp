// What the registry asks of haloex_nccl (transport/entry_points.hpp); without
// this library, nccl_unavailable.cpp answers instead.
#include "entry_points.hpp"
#include "nccl_transport.hpp"

namespace haloex::transport::entry {

std::string ncclMissing() { return {}; }

std::unique_ptr<BlockTransport> makeNccl(runtime::World& world) { return makeNcclTransport(world); }

}  // namespace haloex::transport::entry
