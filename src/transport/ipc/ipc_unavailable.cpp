// The ipc backend where this library has none (transport/entry_points.hpp):
// CMake compiles this file instead of ipc_entry.cpp, and HALOEX_IPC_MISSING
// says why.
#include "entry_points.hpp"
#include "haloex/core/error.hpp"

namespace haloex::transport::entry {

std::string ipcMissing() { return HALOEX_IPC_MISSING; }

std::unique_ptr<BlockTransport> makeIpc(runtime::World&) {
    throwError(ErrorKind::InvalidInput, "the ipc backend is not in this build: " + ipcMissing());
}

}  // namespace haloex::transport::entry
