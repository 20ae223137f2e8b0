// A build without NCCL (nccl_pair.hpp): the measurements skip with the
// configure-time reason CMake passes in (HALOEX_COMMBENCH_NCCL_REASON).
#include "nccl_pair.hpp"

namespace haloex::commbench {

std::unique_ptr<NcclPair> connectNccl(runtime::World&, std::string& why) {
    why = "this build has no NCCL (" HALOEX_COMMBENCH_NCCL_REASON ")";
    return nullptr;
}

}  // namespace haloex::commbench
