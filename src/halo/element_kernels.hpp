#pragma once
// Device kernels of the typed halo operations on user arrays
// (halo/particle_halo.hpp), for any element size and the component-wise
// scalar types of halo/element.hpp. Internal to haloex (haloex_cuda); each
// function launches on `stream` and returns at once; launch errors throw.
// Packing by an index map is cuda::packElements (transport/common/halo_kernels.hpp).
#include <cuda_runtime.h>

#include <cstddef>

#include "haloex/halo/element.hpp"

namespace haloex::cuda {

// Adds `shift` (rounded once to the scalar type, as the host does) to
// component `component` of each of `count` packed elements of
// `elementBytes` bytes whose scalars are `scalar` (Float32 or Float64).
void addToComponent(void* packed, int count, std::size_t elementBytes, ScalarKind scalar, int component, double shift,
                    cudaStream_t stream);

// data[indices[i]] = packed[i] for i < count (elements of `elementBytes`).
void scatterElements(const void* packed, std::size_t elementBytes, const int* indices, int count, void* data,
                     cudaStream_t stream);

// data[indices[i]] += received[i], component by component (`components`
// scalars of kind `scalar` per element), with plain (non-atomic) adds: an
// index appears at most once per call, so the result is the host loop's.
void addElements(const void* received, const int* indices, int count, ScalarKind scalar, int components, void* data,
                 cudaStream_t stream);

}  // namespace haloex::cuda
