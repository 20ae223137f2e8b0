// CellOrder (cell_order.hpp): the home grid chosen as the build chooses it
// (grid_build.cu's bounds and choice kernels, over the home atoms alone),
// then one stable radix sort of (column, z) keys.
#include "haloex/md/gpu/cell_order.hpp"

#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <climits>
#include <cstdint>

#include "haloex/cuda/check.hpp"
#include "nonbonded_internal.cuh"

namespace haloex::md::gpu {
namespace {

using detail::BuildSizes;
using detail::GridState;

constexpr int kThreads = 256;

// cellOrderKey in the home grid: the build's stable sort leaves atoms in
// this order in place. A skipped choice (a non-finite position) gives every
// atom key 0: the stable sort is then the identity.
__global__ void cellKeysKernel(const Vec3f* __restrict__ x, int n, const GridState* __restrict__ state,
                               std::uint64_t* __restrict__ keys, int* __restrict__ atoms) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    atoms[i] = i;
    if (state->skipped != 0) {
        keys[i] = 0;
        return;
    }
    const Vec3f p = x[i];
    keys[i] = cellOrderKey(state->grids.home, p.x, p.y, p.z);
}

// Buffers grow with the build's headroom (NonbondedOptions::growthFactor), so
// later searches rarely allocate.
constexpr double kGrowth = 1.25;

}  // namespace

struct CellOrder::Impl {
    cuda::PinnedBuffer<BuildSizes> sizesHost;
    cuda::Event sizesCopied;
    bool copyPending = false;
    cuda::DeviceBuffer<BuildSizes> sizes;
    cuda::DeviceBuffer<unsigned char> partials;
    cuda::DeviceBuffer<GridState> state;
    cuda::DeviceBuffer<std::uint64_t> keys, keysSorted;
    cuda::DeviceBuffer<int> atoms, order;
    cuda::DeviceBuffer<unsigned char> cubTemp;
};

CellOrder::CellOrder() : impl_(std::make_unique<Impl>()) {
    impl_->sizesHost.reserve(1);
    impl_->sizes.resize(1);
    impl_->state.resize(1);
    impl_->partials.resize(detail::boundsPartialsBytes());
}

CellOrder::~CellOrder() = default;

const int* CellOrder::compute(const Vec3f* x, int n, cudaStream_t stream) {
    Impl& m = *impl_;
    const auto count = static_cast<std::size_t>(std::max(n, 1));
    detail::reserveWithHeadroom(m.keys, count, kGrowth);
    detail::reserveWithHeadroom(m.keysSorted, count, kGrowth);
    detail::reserveWithHeadroom(m.atoms, count, kGrowth);
    detail::reserveWithHeadroom(m.order, count, kGrowth);
    if (n <= 0) return m.order.data();
    // The column count is below 2^bitsFor(n) (no grid has more columns than atoms).
    const int endBit = 32 + detail::bitsFor(n);
    std::size_t bytes = 0;
    HALOEX_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, m.keys.data(), m.keysSorted.data(),
                                                      m.atoms.data(), m.order.data(), n, 0, endBit, stream));
    detail::reserveWithHeadroom(m.cubTemp, std::max<std::size_t>(bytes, 1), kGrowth);

    // The home atoms alone: no halo set, no column limit.
    if (m.copyPending) HALOEX_CUDA_CHECK(cudaEventSynchronize(m.sizesCopied));  // the last copy has read it
    m.sizesHost[0] = BuildSizes{n, n};
    HALOEX_CUDA_CHECK(
        cudaMemcpyAsync(m.sizes.data(), m.sizesHost.data(), sizeof(BuildSizes), cudaMemcpyHostToDevice, stream));
    m.sizesCopied.record(stream);
    m.copyPending = true;
    detail::enqueueGridChoice(x, nullptr, m.sizes.data(), m.partials.data(), INT_MAX, m.state.data(), stream);
    cellKeysKernel<<<detail::blocksFor(n, kThreads), kThreads, 0, stream>>>(x, n, m.state.data(), m.keys.data(),
                                                                            m.atoms.data());
    HALOEX_CUDA_CHECK_LAUNCH();
    bytes = m.cubTemp.size();
    HALOEX_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(m.cubTemp.data(), bytes, m.keys.data(), m.keysSorted.data(),
                                                      m.atoms.data(), m.order.data(), n, 0, endBit, stream));
    return m.order.data();
}

}  // namespace haloex::md::gpu
