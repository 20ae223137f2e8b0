// The GPU backend's entry points in a build without CUDA: no GPU is visible,
// and asking for the backend says why it is missing.
#include "haloex/core/error.hpp"
#include "haloex/md/gpu_backend.hpp"

namespace haloex::md {

int visibleGpuCount() { return 0; }

void selectGpuForRank(runtime::World&, bool) {
    throwError(ErrorKind::InvalidInput, "this haloex was built without CUDA: no GPU can be selected");
}

std::unique_ptr<RankBackend> makeGpuBackend(const GpuBackendOptions&) {
    throwError(ErrorKind::InvalidInput,
               "this haloex was built without CUDA (no nvcc at configure time): use --device cpu");
}

}  // namespace haloex::md
