// What the registry asks of haloex_ipc (transport/entry_points.hpp); without
// this library, ipc_unavailable.cpp answers instead.
#include "entry_points.hpp"
#include "ipc_transport.hpp"

namespace haloex::transport::entry {

std::string ipcMissing() { return {}; }

std::unique_ptr<BlockTransport> makeIpc(runtime::World& world) { return makeIpcTransport(world); }

}  // namespace haloex::transport::entry
