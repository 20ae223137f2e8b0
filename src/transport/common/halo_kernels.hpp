#pragma once
// Pack/unpack kernels shared by the device transports (staged, ipc, nccl),
// and the device copy of a plan's index maps. Internal to haloex: the
// functions launch on `stream` and return at once; launch errors throw.
#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

#include "haloex/core/vec3.hpp"
#include "haloex/cuda/device_buffer.hpp"
#include "haloex/plan/box.hpp"
#include "haloex/plan/particle_plan.hpp"

namespace haloex::cuda {

// The periodic shift a pulse adds to packed coordinates, computed exactly as
// the reference transport does (double product, rounded once to float).
float3 pulseShift(const plan::Pulse& pulse, const plan::Box& box);

// out[i] = x[indices[i]] + shift for i < count. A zero shift component leaves
// the coordinate's bits untouched (so -0.0f stays -0.0f, as in the reference).
void packCoordinates(const Vec3f* x, const int* indices, int count, float3 shift, Vec3f* out, cudaStream_t stream);

// Gathers `count` elements of `elementSize` bytes: out[i] = data[indices[i]].
void packElements(const std::byte* data, std::size_t elementSize, const int* indices, int count, std::byte* out,
                  cudaStream_t stream);

// f[indices[i]] += received[i] with atomicAdd, so several pulses may unpack
// into the same owners concurrently. Within one pulse an index appears once,
// so a pulse alone gives the same bits as a plain add.
void unpackAddForces(const Vec3f* received, const int* indices, int count, Vec3f* f, cudaStream_t stream);

// Copies a contiguous block of `bytes` (e.g. a received slot read through a
// peer pointer) with a kernel, so it can sit in a captured graph or a stream
// without a copy engine round trip.
void copyBlock(const void* src, std::size_t bytes, void* dst, cudaStream_t stream);

// Device copies of every pulse's index map (sendIndices), made at setPlan.
class DevicePulseMaps {
public:
    // Synchronous upload (setPlan is a blocking, collective call anyway).
    void upload(const plan::ParticleHaloPlan& plan);
    const int* pulse(int p) const { return indices_.data() + offsets_.at(static_cast<std::size_t>(p)); }

private:
    DeviceBuffer<int> indices_;
    std::vector<std::size_t> offsets_;
};

}  // namespace haloex::cuda
