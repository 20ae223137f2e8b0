// The typed halo operations' device kernels (element_kernels.hpp).
#include "element_kernels.hpp"

#include <cstdint>
#include <type_traits>

#include "haloex/core/error.hpp"
#include "haloex/cuda/check.hpp"

namespace haloex::cuda {
namespace {

constexpr int kBlockSize = 256;

int blocksFor(std::size_t threads) { return static_cast<int>((threads + kBlockSize - 1) / kBlockSize); }

bool aligned(const void* p, std::size_t alignment) { return reinterpret_cast<std::uintptr_t>(p) % alignment == 0; }

template <class S>
__global__ void addToComponentKernel(std::byte* packed, int count, std::size_t elementBytes, int component, S shift) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    S* value = reinterpret_cast<S*>(packed + static_cast<std::size_t>(i) * elementBytes) + component;
    *value = *value + shift;
}

// One thread per word of an element; Word is 4 bytes when sizes and
// addresses allow it, else 1.
template <class Word>
__global__ void scatterElementsKernel(const Word* __restrict__ packed, int wordsPerElement,
                                      const int* __restrict__ indices, int count, Word* __restrict__ data) {
    const std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (t >= static_cast<std::int64_t>(count) * wordsPerElement) return;
    const std::int64_t element = t / wordsPerElement;
    const int word = static_cast<int>(t % wordsPerElement);
    data[static_cast<std::int64_t>(indices[element]) * wordsPerElement + word] = packed[t];
}

// One thread per scalar.
template <class S>
__global__ void addElementsKernel(const S* __restrict__ received, const int* __restrict__ indices, int count,
                                  int components, S* __restrict__ data) {
    const std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (t >= static_cast<std::int64_t>(count) * components) return;
    const std::int64_t element = t / components;
    const int component = static_cast<int>(t % components);
    S* target = data + static_cast<std::int64_t>(indices[element]) * components + component;
    if constexpr (std::is_integral_v<S>) {
        // Integers wrap (two's complement) instead of overflowing, as on the host.
        using U = std::make_unsigned_t<S>;
        *target = static_cast<S>(static_cast<U>(*target) + static_cast<U>(received[t]));
    } else {
        *target = *target + received[t];
    }
}

template <class S>
void launchAdd(const void* received, const int* indices, int count, int components, void* data, cudaStream_t stream) {
    addElementsKernel<<<blocksFor(static_cast<std::size_t>(count) * components), kBlockSize, 0, stream>>>(
        static_cast<const S*>(received), indices, count, components, static_cast<S*>(data));
}

}  // namespace

void addToComponent(void* packed, int count, std::size_t elementBytes, ScalarKind scalar, int component, double shift,
                    cudaStream_t stream) {
    if (count <= 0) return;
    auto* bytes = static_cast<std::byte*>(packed);
    if (scalar == ScalarKind::Float32) {
        addToComponentKernel<<<blocksFor(count), kBlockSize, 0, stream>>>(bytes, count, elementBytes, component,
                                                                          static_cast<float>(shift));
    } else if (scalar == ScalarKind::Float64) {
        addToComponentKernel<<<blocksFor(count), kBlockSize, 0, stream>>>(bytes, count, elementBytes, component, shift);
    } else {
        HALOEX_ASSERT(false, "the periodic shift applies to float or double components only");
    }
    HALOEX_CUDA_CHECK_LAUNCH();
}

void scatterElements(const void* packed, std::size_t elementBytes, const int* indices, int count, void* data,
                     cudaStream_t stream) {
    if (count <= 0 || elementBytes == 0) return;
    if (elementBytes % 4 == 0 && aligned(packed, 4) && aligned(data, 4)) {
        const int words = static_cast<int>(elementBytes / 4);
        scatterElementsKernel<<<blocksFor(static_cast<std::size_t>(count) * words), kBlockSize, 0, stream>>>(
            static_cast<const std::uint32_t*>(packed), words, indices, count, static_cast<std::uint32_t*>(data));
    } else {
        const int words = static_cast<int>(elementBytes);
        scatterElementsKernel<<<blocksFor(static_cast<std::size_t>(count) * words), kBlockSize, 0, stream>>>(
            static_cast<const std::uint8_t*>(packed), words, indices, count, static_cast<std::uint8_t*>(data));
    }
    HALOEX_CUDA_CHECK_LAUNCH();
}

void addElements(const void* received, const int* indices, int count, ScalarKind scalar, int components, void* data,
                 cudaStream_t stream) {
    if (count <= 0 || components <= 0) return;
    switch (scalar) {
        case ScalarKind::Float32: launchAdd<float>(received, indices, count, components, data, stream); break;
        case ScalarKind::Float64: launchAdd<double>(received, indices, count, components, data, stream); break;
        case ScalarKind::Int32: launchAdd<std::int32_t>(received, indices, count, components, data, stream); break;
        case ScalarKind::Int64: launchAdd<std::int64_t>(received, indices, count, components, data, stream); break;
        case ScalarKind::UInt32: launchAdd<std::uint32_t>(received, indices, count, components, data, stream); break;
        case ScalarKind::UInt64: launchAdd<std::uint64_t>(received, indices, count, components, data, stream); break;
    }
    HALOEX_CUDA_CHECK_LAUNCH();
}

}  // namespace haloex::cuda
