#include <cstdint>

#include "halo_kernels.hpp"
#include "index_map_upload.hpp"
#include "haloex/detail/cuda/blocking_ops.hpp"
#include "haloex/cuda/check.hpp"

namespace haloex::cuda {
namespace {

constexpr int kBlockSize = 256;

int blocksFor(std::size_t threads) {
    const std::size_t blocks = (threads + kBlockSize - 1) / kBlockSize;
    // A 1-D grid allows 2^31-1 blocks: far beyond any halo.
    return static_cast<int>(blocks);
}

// Adds a shift component only where it is non-zero: x + 0.0f would turn -0.0f into +0.0f.
__device__ inline float addShift(float x, float s) { return s != 0.0f ? x + s : x; }

__global__ void packCoordinatesKernel(const float3* __restrict__ x, const int* __restrict__ indices, int count,
                                      float3 shift, float3* __restrict__ out) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    const float3 v = x[indices[i]];
    out[i] = make_float3(addShift(v.x, shift.x), addShift(v.y, shift.y), addShift(v.z, shift.z));
}

// One thread per word of an element; Word is 4 bytes when sizes and
// addresses allow it, else 1.
template <class Word>
__global__ void packElementsKernel(const Word* __restrict__ data, int wordsPerElement, const int* __restrict__ indices,
                                   int count, Word* __restrict__ out) {
    const std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (t >= static_cast<std::int64_t>(count) * wordsPerElement) return;
    const std::int64_t element = t / wordsPerElement;
    const int word = static_cast<int>(t % wordsPerElement);
    out[t] = data[static_cast<std::int64_t>(indices[element]) * wordsPerElement + word];
}

__global__ void unpackAddForcesKernel(const float3* __restrict__ received, const int* __restrict__ indices, int count,
                                      float3* f) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    const float3 v = received[i];
    float3* target = f + indices[i];
    atomicAdd(&target->x, v.x);
    atomicAdd(&target->y, v.y);
    atomicAdd(&target->z, v.z);
}

template <class Word>
__global__ void copyBlockKernel(const Word* __restrict__ src, std::size_t words, Word* __restrict__ dst) {
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < words;
         i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
        dst[i] = src[i];
    }
}

bool aligned(const void* p, std::size_t alignment) { return reinterpret_cast<std::uintptr_t>(p) % alignment == 0; }

}  // namespace

float3 pulseShift(const plan::Pulse& pulse, const plan::Box& box) {
    float3 shift = make_float3(0.0f, 0.0f, 0.0f);
    if (pulse.shiftSign == 0) return shift;
    const float s = static_cast<float>(pulse.shiftSign * box.length[pulse.dim]);
    if (pulse.dim == 0) shift.x = s;
    else if (pulse.dim == 1) shift.y = s;
    else shift.z = s;
    return shift;
}

void packCoordinates(const Vec3f* x, const int* indices, int count, float3 shift, Vec3f* out, cudaStream_t stream) {
    if (count <= 0) return;
    packCoordinatesKernel<<<blocksFor(static_cast<std::size_t>(count)), kBlockSize, 0, stream>>>(
        reinterpret_cast<const float3*>(x), indices, count, shift, reinterpret_cast<float3*>(out));
    HALOEX_CUDA_CHECK_LAUNCH();
}

void packElements(const std::byte* data, std::size_t elementSize, const int* indices, int count, std::byte* out,
                  cudaStream_t stream) {
    if (count <= 0 || elementSize == 0) return;
    if (elementSize % 4 == 0 && aligned(data, 4) && aligned(out, 4)) {
        const int words = static_cast<int>(elementSize / 4);
        packElementsKernel<<<blocksFor(static_cast<std::size_t>(count) * words), kBlockSize, 0, stream>>>(
            reinterpret_cast<const std::uint32_t*>(data), words, indices, count, reinterpret_cast<std::uint32_t*>(out));
    } else {
        const int words = static_cast<int>(elementSize);
        packElementsKernel<<<blocksFor(static_cast<std::size_t>(count) * words), kBlockSize, 0, stream>>>(
            reinterpret_cast<const std::uint8_t*>(data), words, indices, count, reinterpret_cast<std::uint8_t*>(out));
    }
    HALOEX_CUDA_CHECK_LAUNCH();
}

void unpackAddForces(const Vec3f* received, const int* indices, int count, Vec3f* f, cudaStream_t stream) {
    if (count <= 0) return;
    unpackAddForcesKernel<<<blocksFor(static_cast<std::size_t>(count)), kBlockSize, 0, stream>>>(
        reinterpret_cast<const float3*>(received), indices, count, reinterpret_cast<float3*>(f));
    HALOEX_CUDA_CHECK_LAUNCH();
}

void copyBlock(const void* src, std::size_t bytes, void* dst, cudaStream_t stream) {
    if (bytes == 0) return;
    constexpr int kMaxBlocks = 1024;  // grid-stride loop: enough blocks to fill the GPU
    if (bytes % 16 == 0 && aligned(src, 16) && aligned(dst, 16)) {
        const std::size_t words = bytes / 16;
        copyBlockKernel<<<std::min(blocksFor(words), kMaxBlocks), kBlockSize, 0, stream>>>(
            static_cast<const uint4*>(src), words, static_cast<uint4*>(dst));
    } else if (bytes % 4 == 0 && aligned(src, 4) && aligned(dst, 4)) {
        const std::size_t words = bytes / 4;
        copyBlockKernel<<<std::min(blocksFor(words), kMaxBlocks), kBlockSize, 0, stream>>>(
            static_cast<const std::uint32_t*>(src), words, static_cast<std::uint32_t*>(dst));
    } else {
        copyBlockKernel<<<std::min(blocksFor(bytes), kMaxBlocks), kBlockSize, 0, stream>>>(
            static_cast<const std::uint8_t*>(src), bytes, static_cast<std::uint8_t*>(dst));
    }
    HALOEX_CUDA_CHECK_LAUNCH();
}

void DevicePulseMaps::upload(const plan::ParticleHaloPlan& plan) {
    offsets_.clear();
    std::size_t total = 0;
    for (const plan::Pulse& pulse : plan.pulses) {
        offsets_.push_back(total);
        total += static_cast<std::size_t>(pulse.sendCount());
    }
    indices_.resize(std::max<std::size_t>(total, 1));
    uploadIndexMaps(plan, indices_.data());
}

}  // namespace haloex::cuda
