// The test's storing kernel (home_stores_kernel.hpp): the library's device
// function compiled in the caller's own translation unit, as a user's is.
#include "home_stores_kernel.hpp"

#include "haloex/cuda/check.hpp"
#include "haloex/halo/home_coordinate_stores.cuh"

namespace haloex::testsupport {
namespace {

__global__ void storeHomeKernel(const transport::HomeCoordinateStores stores, const Vec3f* x, int numHome) {
    const int atom = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    if (atom < numHome) device::storeHomeCoordinate(stores, atom, x[atom]);
}

}  // namespace

void storeHomeCoordinates(const transport::HomeCoordinateStores& stores, const Vec3f* x, int numHome,
                          cudaStream_t stream) {
    if (numHome <= 0) return;
    constexpr int kThreads = 128;
    storeHomeKernel<<<(numHome + kThreads - 1) / kThreads, kThreads, 0, stream>>>(stores, x, numHome);
    HALOEX_CUDA_CHECK_LAUNCH();
}

}  // namespace haloex::testsupport
