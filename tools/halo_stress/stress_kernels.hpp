#pragma once
// Device side of haloex-halo-stress: every value is a closed-form function of
// (global id, step), exactly representable, so the expected halo contents and
// the expected accumulated forces can be recomputed on the device each step
// and compared bit for bit with what the transport delivered.
#include <cuda_runtime.h>

#include <cstdint>

#include "haloex/core/vec3.hpp"

namespace haloex::stress {

// Per local slot, fixed between repartitionings.
struct SlotInfo {
    std::int64_t globalId;  // -1: padding
    float shift[3];         // periodic image offset the halo copy must carry (0 for home)
    int copies;             // home atoms: halo copies of this atom on all ranks
};

struct StepCheck {
    unsigned long long coordinateErrors;
    unsigned long long forceErrors;
    unsigned long long haloForceNotCleared;
    long long firstBadSlot;
    long long firstBadStep;
};

// x(g, s) = base_g + ((7 g + 13 s) mod 64) / 4096 nm on every component (a
// dyadic offset: one exact float addition).
__host__ __device__ inline float stressOffset(std::int64_t g, std::int64_t s, int d) {
    return static_cast<float>(((7 * g + 13 * s + 5 * d) % 64 + 64) % 64) * (1.0f / 4096.0f);
}
// Force value a halo copy contributes, and a home atom's own value: small
// integers, so any order of float additions gives the same bits.
__host__ __device__ inline float haloForceValue(std::int64_t g, std::int64_t s, int d) {
    return static_cast<float>((3 * g + 11 * s + d) % 17 + 1);
}
__host__ __device__ inline float homeForceValue(std::int64_t g, std::int64_t s, int d) {
    return static_cast<float>((5 * g + 2 * s + d) % 23);
}

// The step s every kernel below reads from device memory (`step`), not from
// its launch arguments: a CUDA graph of one step, replayed, then checks a new
// step each time (advanceStep ends the step), as an MD step graph runs.
void advanceStep(long long* step, cudaStream_t stream);

// Home coordinates of step s.
void setHomePositions(Vec3f* x, const Vec3f* base, const SlotInfo* slots, int numHome, const long long* step,
                      cudaStream_t stream);
// After the coordinate exchange: halo slots must equal their owner's x(g, s)
// plus the image shift; halo forces must have been cleared. Then fills the
// forces for the reverse exchange (home: own value, halo: halo value).
void checkHaloAndFillForces(const Vec3f* x, Vec3f* f, const Vec3f* baseByGlobalId, const SlotInfo* slots, int numHome,
                            int numLocal, const long long* step, StepCheck* check, cudaStream_t stream);
// After the force exchange: home forces must equal own value + copies * halo value.
void checkForces(const Vec3f* f, const SlotInfo* slots, int numHome, const long long* step, StepCheck* check,
                 cudaStream_t stream);
// One block that does nothing: the launch cost an exchange timing includes.
void launchEmptyKernel(cudaStream_t stream);

}  // namespace haloex::stress
