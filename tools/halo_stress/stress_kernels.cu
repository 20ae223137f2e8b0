#include "haloex/cuda/check.hpp"
#include "stress_kernels.hpp"

namespace haloex::stress {
namespace {

__device__ void recordBad(StepCheck* check, unsigned long long* counter, long long slot, long long step) {
    if (atomicAdd(counter, 1ull) == 0) {
        check->firstBadSlot = slot;
        check->firstBadStep = step;
    }
}

__global__ void setHomeKernel(Vec3f* x, const Vec3f* base, const SlotInfo* slots, int numHome,
                              const long long* stepOnDevice) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= numHome) return;
    const long long step = *stepOnDevice;
    const std::int64_t g = slots[i].globalId;
    Vec3f v = base[i];
    for (int d = 0; d < 3; ++d) v[d] = v[d] + stressOffset(g, step, d);
    x[i] = v;
}

__global__ void checkHaloKernel(const Vec3f* x, Vec3f* f, const Vec3f* baseByGlobalId, const SlotInfo* slots,
                                int numHome, int numLocal, const long long* stepOnDevice, StepCheck* check) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= numLocal) return;
    const long long step = *stepOnDevice;
    const SlotInfo s = slots[i];
    if (s.globalId < 0) return;
    if (i < numHome) {
        for (int d = 0; d < 3; ++d) f[i][d] = homeForceValue(s.globalId, step, d);
        return;
    }
    const Vec3f fi = f[i];
    if (fi.x != 0.f || fi.y != 0.f || fi.z != 0.f) recordBad(check, &check->haloForceNotCleared, i, step);
    const Vec3f b = baseByGlobalId[s.globalId];
    bool ok = true;
    for (int d = 0; d < 3; ++d) {
        float expected = b[d] + stressOffset(s.globalId, step, d);
        if (s.shift[d] != 0.f) expected = expected + s.shift[d];
        ok = ok && __float_as_uint(expected) == __float_as_uint(x[i][d]);
    }
    if (!ok) recordBad(check, &check->coordinateErrors, i, step);
    for (int d = 0; d < 3; ++d) f[i][d] = haloForceValue(s.globalId, step, d);
}

__global__ void checkForcesKernel(const Vec3f* f, const SlotInfo* slots, int numHome, const long long* stepOnDevice,
                                  StepCheck* check) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= numHome) return;
    const long long step = *stepOnDevice;
    const SlotInfo s = slots[i];
    bool ok = true;
    for (int d = 0; d < 3; ++d) {
        const float expected = homeForceValue(s.globalId, step, d) + s.copies * haloForceValue(s.globalId, step, d);
        ok = ok && expected == f[i][d];
    }
    if (!ok) recordBad(check, &check->forceErrors, i, step);
}

int blocks(int n) { return (n + 255) / 256; }

__global__ void emptyKernel() {}

__global__ void advanceStepKernel(long long* step) { ++*step; }

}  // namespace

void setHomePositions(Vec3f* x, const Vec3f* base, const SlotInfo* slots, int numHome, const long long* step,
                      cudaStream_t stream) {
    if (numHome == 0) return;
    setHomeKernel<<<blocks(numHome), 256, 0, stream>>>(x, base, slots, numHome, step);
    HALOEX_CUDA_CHECK_LAUNCH();
}

void checkHaloAndFillForces(const Vec3f* x, Vec3f* f, const Vec3f* baseByGlobalId, const SlotInfo* slots, int numHome,
                            int numLocal, const long long* step, StepCheck* check, cudaStream_t stream) {
    if (numLocal == 0) return;
    checkHaloKernel<<<blocks(numLocal), 256, 0, stream>>>(x, f, baseByGlobalId, slots, numHome, numLocal, step, check);
    HALOEX_CUDA_CHECK_LAUNCH();
}

void launchEmptyKernel(cudaStream_t stream) {
    emptyKernel<<<1, 32, 0, stream>>>();
    HALOEX_CUDA_CHECK_LAUNCH();
}

void checkForces(const Vec3f* f, const SlotInfo* slots, int numHome, const long long* step, StepCheck* check,
                 cudaStream_t stream) {
    if (numHome == 0) return;
    checkForcesKernel<<<blocks(numHome), 256, 0, stream>>>(f, slots, numHome, step, check);
    HALOEX_CUDA_CHECK_LAUNCH();
}

void advanceStep(long long* step, cudaStream_t stream) {
    advanceStepKernel<<<1, 1, 0, stream>>>(step);
    HALOEX_CUDA_CHECK_LAUNCH();
}

}  // namespace haloex::stress
