#pragma once
// One device scan for two offset arrays the search step needs side by side:
// where each item's elements start, and where its groups of `divisor` start
// (atoms and clusters of 8 per grid column; pairs and list entries of maxJ
// per i cluster). One CUB scan of (count, ceil(count / divisor)) pairs
// instead of a kernel that derives the group counts and two scans: the
// search step is launch-bound at small sizes.
#include <cub/device/device_scan.cuh>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/iterator/zip_iterator.h>
#include <thrust/tuple.h>

#include <cstddef>

#include "haloex/cuda/check.hpp"
#include "nonbonded_internal.cuh"

namespace haloex::md::gpu::detail {

struct CountAndGroups {
    int divisor;
    __host__ __device__ thrust::tuple<int, int> operator()(int count) const {
        return {count, (count + divisor - 1) / divisor};
    }
};

struct AddBoth {
    __host__ __device__ thrust::tuple<int, int> operator()(const thrust::tuple<int, int>& a,
                                                           const thrust::tuple<int, int>& b) const {
        return {thrust::get<0>(a) + thrust::get<0>(b), thrust::get<1>(a) + thrust::get<1>(b)};
    }
};

// Scratch bytes scanCountsAndGroups needs for n items.
inline std::size_t scanCountsAndGroupsBytes(int n) {
    const auto in = thrust::make_transform_iterator(static_cast<const int*>(nullptr), CountAndGroups{1});
    const auto out = thrust::make_zip_iterator(static_cast<int*>(nullptr), static_cast<int*>(nullptr));
    std::size_t bytes = 0;
    HALOEX_CUDA_CHECK(
        cub::DeviceScan::ExclusiveScan(nullptr, bytes, in, out, AddBoth{}, thrust::tuple<int, int>{0, 0}, n));
    return bytes;
}

// countStart = exclusive scan of counts[0, n); groupStart = exclusive scan of
// ceil(counts / divisor). Stream-ordered; `temp` must hold
// scanCountsAndGroupsBytes(n) bytes.
inline void scanCountsAndGroups(const int* counts, int n, int divisor, int* countStart, int* groupStart,
                                cuda::DeviceBuffer<unsigned char>& temp, cudaStream_t stream) {
    const auto in = thrust::make_transform_iterator(counts, CountAndGroups{divisor});
    const auto out = thrust::make_zip_iterator(countStart, groupStart);
    std::size_t bytes = temp.size();
    HALOEX_CUDA_CHECK(cub::DeviceScan::ExclusiveScan(temp.data(), bytes, in, out, AddBoth{},
                                                     thrust::tuple<int, int>{0, 0}, n, stream));
}

}  // namespace haloex::md::gpu::detail
