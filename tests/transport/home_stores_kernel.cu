// The test's storing kernel (home_stores_kernel.hpp): the library's device
// function compiled in the caller's own translation unit, as a user's is.
#include "home_stores_kernel.hpp"

#include "haloex/cuda/check.hpp"
#include "haloex/halo/home_coordinate_stores.cuh"

namespace haloex::testsupport {
namespace {

__global__ void storeHomeKernel(const transport::HomeCoordinateStores stores, const Vec3f* x, int numHome,
                                bool signal) {
    const int atom = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    if (atom < numHome) device::storeHomeCoordinate(stores, atom, x[atom]);
    if (signal) device::signalHomeStores(stores);  // every thread of every block
}

}  // namespace

void storeHomeCoordinates(const transport::HomeCoordinateStores& stores, const Vec3f* x, int numHome, bool signal,
                          cudaStream_t stream) {
    constexpr int kThreads = 128;
    // One block even with no home atom: the signals still go out.
    const int blocks = numHome > 0 ? (numHome + kThreads - 1) / kThreads : 1;
    storeHomeKernel<<<blocks, kThreads, 0, stream>>>(stores, x, numHome, signal);
    HALOEX_CUDA_CHECK_LAUNCH();
}

}  // namespace haloex::testsupport
