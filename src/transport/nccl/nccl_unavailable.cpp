// The nccl backend where this library has none (transport/entry_points.hpp):
// CMake compiles this file instead of nccl_entry.cpp, and HALOEX_NCCL_MISSING
// says why.
#include "entry_points.hpp"
#include "haloex/core/error.hpp"

namespace haloex::transport::entry {

std::string ncclMissing() { return HALOEX_NCCL_MISSING; }

std::unique_ptr<BlockTransport> makeNccl(runtime::World&) {
    throwError(ErrorKind::InvalidInput, "the nccl backend is not in this build: " + ncclMissing());
}

}  // namespace haloex::transport::entry
