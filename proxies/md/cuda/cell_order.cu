// CellOrder (cell_order.hpp): the home grid chosen as the build chooses it
// (grid_build.cu's bounds and choice kernels, over the home atoms alone),
// then the atoms sorted by (column, z): where the sort by columns pays
// (columnSortPays, column_sort.cuh, which the build chooses by too), by
// buckets per column and one block's sort per column (a few launches instead
// of a radix sort's six passes over 46-bit keys); elsewhere by one stable
// radix sort of (column, z) keys.
#include "haloex/md/gpu/cell_order.hpp"

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "column_sort.cuh"
#include "haloex/cuda/check.hpp"
#include "haloex/detail/core/environment_switch.hpp"
#include "haloex/detail/cuda/graph_capture.hpp"
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

// The sort by columns, step 1: each atom's key and its column's count. A
// skipped choice writes the identity order and counts nothing. The count
// comes from the device (sizes->numHome, copied there by the same graph) and
// the grid covers the reserved capacity, so one captured graph serves every
// count up to it: on several ranks the count changes at every search.
__global__ void cellCountKernel(const Vec3f* __restrict__ x, const BuildSizes* __restrict__ sizes,
                                const GridState* __restrict__ state, std::uint64_t* __restrict__ keys,
                                int* __restrict__ columnCount, int* __restrict__ order) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= sizes->numHome) return;
    if (state->skipped != 0) {
        order[i] = i;
        return;
    }
    const Vec3f p = x[i];
    const std::uint64_t key = cellOrderKey(state->grids.home, p.x, p.y, p.z);
    keys[i] = key;
    atomicAdd(&columnCount[key >> 32], 1);
}

// Step 2: each atom's word -- its z bits above its index -- into its
// column's part of `bucket`, in any order (an atomic cursor per column).
__global__ void cellBucketKernel(const std::uint64_t* __restrict__ keys, const BuildSizes* __restrict__ sizes,
                                 const GridState* __restrict__ state, const int* __restrict__ columnStart,
                                 int* __restrict__ columnFill, std::uint64_t* __restrict__ bucket) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= sizes->numHome || state->skipped != 0) return;
    const std::uint64_t key = keys[i];
    const auto column = static_cast<int>(key >> 32);
    bucket[columnStart[column] + atomicAdd(&columnFill[column], 1)] = (key << 32) | static_cast<std::uint32_t>(i);
}

// Step 3: blocks take the columns in turn (their number is on the device
// only); a column too long for shared memory is sorted by rank.
__global__ void __launch_bounds__(detail::kColumnSortThreads)
    cellColumnSortKernel(const int* __restrict__ columnStart, const std::uint64_t* __restrict__ bucket,
                         const GridState* __restrict__ state, int* __restrict__ order) {
    __shared__ std::uint64_t words[detail::kColumnSortMax];
    if (state->skipped != 0) return;
    const int numColumns = state->grids.home.numColumns();
    for (int column = blockIdx.x; column < numColumns; column += gridDim.x) {
        const int begin = columnStart[column];
        const int n = columnStart[column + 1] - begin;
        if (n > detail::kColumnSortMax) detail::sortColumnByRank(bucket + begin, n, order + begin);
        else if (n > 0) detail::sortColumnInShared(bucket + begin, n, words, order + begin);
    }
}

// CellOrder::compute as one graph launch (CellOrder::Impl::launchAsGraph),
// unless HALOEX_CELL_ORDER_GRAPH=0. Not on the legacy or per-thread default
// streams, which cannot be captured.
bool graphRequested(cudaStream_t stream) {
    if (!cuda::capturableStream(stream)) return false;
    return ::haloex::detail::environmentSwitch("HALOEX_CELL_ORDER_GRAPH", true,
                                               "the cell order as one CUDA graph launch, else its kernels one by one");
}

// Buffers grow with the build's headroom (NonbondedOptions::growthFactor), so
// later searches rarely allocate.
constexpr double kGrowth = 1.25;
// Blocks of the column sort: enough to fill a GPU at the sizes it serves.
constexpr int kColumnSortBlocks = 2048;

}  // namespace

struct CellOrder::Impl {
    cuda::PinnedBuffer<BuildSizes> sizesHost;
    cuda::Event sizesCopied;
    bool copyPending = false;
    cuda::DeviceBuffer<BuildSizes> sizes;
    cuda::DeviceBuffer<unsigned char> partials;
    cuda::DeviceBuffer<GridState> state;
    cuda::DeviceBuffer<std::uint64_t> keys, keysSorted;  // keysSorted: the radix sort's; bucket: the columns'
    cuda::DeviceBuffer<int> atoms, order;
    cuda::DeviceBuffer<int> columnCountAndFill;  // 2 (n + 1): counts, then the bucket cursors (one memset)
    cuda::DeviceBuffer<int> columnStart;         // n + 1: no grid has more columns than atoms
    cuda::DeviceBuffer<unsigned char> cubTemp;
    // The atoms the sort by columns is sized for (its grids, memset and
    // scan), grown with headroom: counts up to it launch the same work.
    int columnAtoms = 0;
    // The copy of the sizes, the grid choice and the sort as one CUDA graph,
    // launched again while everything it was captured with is the same (the
    // key: positions, the count or the sort by columns' capacity, buffers,
    // sort), else captured again and the executable graph updated in place.
    // One launch instead of twelve (HALOEX_CELL_ORDER_GRAPH=0: the twelve).
    cudaGraphExec_t exec = nullptr;
    std::vector<std::uintptr_t> key;
    int captures = 0;

    Impl() = default;
    Impl(const Impl&) = delete;
    Impl& operator=(const Impl&) = delete;
    ~Impl() {
        if (exec != nullptr) cudaGraphExecDestroy(exec);
    }

    void reserveColumns(int n, cudaStream_t stream);
    void sortByColumns(const Vec3f* x, cudaStream_t stream);
    void reserveRadix(int n, cudaStream_t stream);
    void sortByRadix(const Vec3f* x, int n, cudaStream_t stream);
    void enqueue(const Vec3f* x, int n, bool columns, cudaStream_t stream);
    void launchAsGraph(const Vec3f* x, int n, bool columns, cudaStream_t stream);
};

// The buffers of the sort by columns, before anything is enqueued (a graph
// captures the pointers).
void CellOrder::Impl::reserveColumns(int n, cudaStream_t stream) {
    if (n > columnAtoms) columnAtoms = static_cast<int>(static_cast<double>(n) * kGrowth) + 16;
    const auto slots = static_cast<std::size_t>(columnAtoms) + 1;
    detail::reserveWithHeadroom(columnCountAndFill, 2 * slots, kGrowth);
    detail::reserveWithHeadroom(columnStart, slots, kGrowth);
    std::size_t bytes = 0;
    HALOEX_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, bytes, columnCountAndFill.data(), columnStart.data(),
                                                    static_cast<int>(slots), stream));
    detail::reserveWithHeadroom(cubTemp, std::max<std::size_t>(bytes, 1), kGrowth);
}

// The count (n <= columnAtoms) reaches the kernels through `sizes`.
void CellOrder::Impl::sortByColumns(const Vec3f* x, cudaStream_t stream) {
    const auto slots = static_cast<std::size_t>(columnAtoms) + 1;
    int* counts = columnCountAndFill.data();
    int* fill = counts + slots;
    HALOEX_CUDA_CHECK(cudaMemsetAsync(counts, 0, 2 * slots * sizeof(int), stream));
    const int blocks = detail::blocksFor(columnAtoms, kThreads);
    cellCountKernel<<<blocks, kThreads, 0, stream>>>(x, sizes.data(), state.data(), keys.data(), counts, order.data());
    HALOEX_CUDA_CHECK_LAUNCH();
    std::size_t bytes = cubTemp.size();
    HALOEX_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(cubTemp.data(), bytes, counts, columnStart.data(),
                                                    static_cast<int>(slots), stream));
    // keysSorted holds the bucket's words (the radix path's output buffer).
    cellBucketKernel<<<blocks, kThreads, 0, stream>>>(keys.data(), sizes.data(), state.data(), columnStart.data(), fill,
                                                      keysSorted.data());
    HALOEX_CUDA_CHECK_LAUNCH();
    cellColumnSortKernel<<<std::min(columnAtoms, kColumnSortBlocks), detail::kColumnSortThreads, 0, stream>>>(
        columnStart.data(), keysSorted.data(), state.data(), order.data());
    HALOEX_CUDA_CHECK_LAUNCH();
}

void CellOrder::Impl::reserveRadix(int n, cudaStream_t stream) {
    detail::reserveWithHeadroom(atoms, static_cast<std::size_t>(n), kGrowth);
    const int endBit = 32 + detail::bitsFor(n);
    std::size_t bytes = 0;
    HALOEX_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys.data(), keysSorted.data(), atoms.data(),
                                                      order.data(), n, 0, endBit, stream));
    detail::reserveWithHeadroom(cubTemp, std::max<std::size_t>(bytes, 1), kGrowth);
}

void CellOrder::Impl::sortByRadix(const Vec3f* x, int n, cudaStream_t stream) {
    // The column count is below 2^bitsFor(n) (no grid has more columns than atoms).
    const int endBit = 32 + detail::bitsFor(n);
    cellKeysKernel<<<detail::blocksFor(n, kThreads), kThreads, 0, stream>>>(x, n, state.data(), keys.data(),
                                                                            atoms.data());
    HALOEX_CUDA_CHECK_LAUNCH();
    std::size_t bytes = cubTemp.size();
    HALOEX_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(cubTemp.data(), bytes, keys.data(), keysSorted.data(),
                                                      atoms.data(), order.data(), n, 0, endBit, stream));
}

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
    detail::reserveWithHeadroom(m.order, count, kGrowth);
    if (n <= 0) return m.order.data();

    // The home atoms alone: no halo set, no column limit.
    if (m.copyPending) HALOEX_CUDA_CHECK(cudaEventSynchronize(m.sizesCopied));  // the last copy has read it
    m.sizesHost[0] = BuildSizes{n, n};
    const bool columns = detail::columnSortPays(n);
    if (columns) m.reserveColumns(n, stream);
    else m.reserveRadix(n, stream);
    if (graphRequested(stream)) {
        m.launchAsGraph(x, n, columns, stream);
    } else {
        m.enqueue(x, n, columns, stream);
    }
    m.sizesCopied.record(stream);
    m.copyPending = true;
    return m.order.data();
}

int CellOrder::graphCaptures() const { return impl_->captures; }

// The copy of the sizes, the grid choice and the sort (buffers reserved).
void CellOrder::Impl::enqueue(const Vec3f* x, int n, bool columns, cudaStream_t stream) {
    HALOEX_CUDA_CHECK(
        cudaMemcpyAsync(sizes.data(), sizesHost.data(), sizeof(BuildSizes), cudaMemcpyHostToDevice, stream));
    detail::enqueueGridChoice(x, nullptr, sizes.data(), partials.data(), INT_MAX, state.data(), stream);
    if (columns) sortByColumns(x, stream);
    else sortByRadix(x, n, stream);
}

void CellOrder::Impl::launchAsGraph(const Vec3f* x, int n, bool columns, cudaStream_t stream) {
    std::vector<std::uintptr_t> now;
    for (const void* p : {static_cast<const void*>(x), static_cast<const void*>(sizes.data()),
                          static_cast<const void*>(sizesHost.data()), static_cast<const void*>(partials.data()),
                          static_cast<const void*>(state.data()), static_cast<const void*>(keys.data()),
                          static_cast<const void*>(keysSorted.data()), static_cast<const void*>(atoms.data()),
                          static_cast<const void*>(order.data()), static_cast<const void*>(columnCountAndFill.data()),
                          static_cast<const void*>(columnStart.data()), static_cast<const void*>(cubTemp.data())}) {
        now.push_back(reinterpret_cast<std::uintptr_t>(p));
    }
    // The sort by columns reads the count on the device: its graph serves
    // every count up to columnAtoms. The radix sort's passes take it.
    now.push_back(static_cast<std::uintptr_t>(columns ? columnAtoms : n));
    now.push_back(columns ? 1U : 0U);
    now.push_back(static_cast<std::uintptr_t>(cubTemp.size()));
    if (exec == nullptr || now != key) {
        cuda::updateOrInstantiate(exec, cuda::captureGraph(stream, [&] { enqueue(x, n, columns, stream); }), 0);
        key = std::move(now);
        ++captures;
    }
    HALOEX_CUDA_CHECK(cudaGraphLaunch(exec, stream));
}

}  // namespace haloex::md::gpu
