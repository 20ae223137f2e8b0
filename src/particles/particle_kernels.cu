// The particle kernels (particle_kernels.hpp): box arithmetic of
// plan/box.cpp and plan/decomposition.cpp redone in double precision on the
// device, so host and device decide alike for the same float positions.
#include "particle_kernels.hpp"

#include <cub/block/block_reduce.cuh>
#include <cub/device/device_partition.cuh>
#include <cub/device/device_select.cuh>
#include <thrust/iterator/discard_iterator.h>
#include <thrust/iterator/counting_iterator.h>

#include <algorithm>
#include <climits>

#include "haloex/cuda/check.hpp"
#include "haloex/plan/particle_plan.hpp"

namespace haloex::particles::detail {
namespace {

constexpr int kThreads = 256;

int blocksFor(long long n) { return static_cast<int>((n + kThreads - 1) / kThreads); }

// plan::wrapIntoBox for one coordinate.
__device__ inline double wrapCoordinate(double x, double L) {
    double w = x - L * floor(x / L);
    if (w >= L) w -= L;
    if (w < 0.0) w = 0.0;
    return w;
}

// The cell index along one dimension (plan::Decomposition::ownerRank).
__device__ inline int cellIndex(double x, int n, double L) {
    int k = static_cast<int>(floor(x * n / L));
    k = k < 0 ? 0 : (k > n - 1 ? n - 1 : k);
    while (k > 0 && x < L * k / n) --k;
    while (k < n - 1 && x >= L * (k + 1) / n) ++k;
    return k;
}

__global__ void resetStatusKernel(int* status) {
    status[kFirstNonFinite] = INT_MAX;
    status[kFirstTooFar] = INT_MAX;
    status[kCountStay] = status[kCountDown] = status[kCountUp] = 0;
    for (int w = kIdSumsAt; w < kMigrationReadback; ++w) status[w] = 0;
}

struct Lengths {
    double L[3];
};

__device__ inline bool wrapOne(Vec3f& p, const Lengths& box) {
    if (!(isfinite(p.x) && isfinite(p.y) && isfinite(p.z))) return false;
    for (int d = 0; d < 3; ++d) {
        float w = static_cast<float>(wrapCoordinate(static_cast<double>(p[d]), box.L[d]));
        if (static_cast<double>(w) >= box.L[d]) w = 0.0f;
        p[d] = w;
    }
    return true;
}

// The merge's identity: no particle, nothing non-finite.
__host__ __device__ inline WrapSummary noParticles() { return WrapSummary{0, 0, INT_MAX, 0}; }

struct SummaryMerge {
    __device__ WrapSummary operator()(const WrapSummary& a, const WrapSummary& b) const {
        return WrapSummary{a.idSum + b.idSum, a.idSquareSum + b.idSquareSum, min(a.firstNonFinite, b.firstNonFinite),
                           0};
    }
};

// Grid-stride, one atomic per block and field: few enough for one address.
__global__ void __launch_bounds__(kThreads)
    wrapAndSummariseKernel(Vec3f* __restrict__ x, int n, Lengths box, const std::int64_t* __restrict__ ids,
                           WrapSummary* __restrict__ slots, int parity) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        slots[1 - parity] = noParticles();
    }
    WrapSummary mine = noParticles();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        Vec3f p = x[i];
        if (wrapOne(p, box)) {
            x[i] = p;
        } else {
            mine.firstNonFinite = min(mine.firstNonFinite, i);
        }
        if (ids != nullptr) {
            const auto id = static_cast<unsigned long long>(ids[i]);
            mine.idSum += id;
            mine.idSquareSum += id * id;
        }
    }
    using Reduce = cub::BlockReduce<WrapSummary, kThreads>;
    __shared__ typename Reduce::TempStorage storage;
    const WrapSummary total = Reduce(storage).Reduce(mine, SummaryMerge{});
    if (threadIdx.x == 0) {
        WrapSummary& slot = slots[parity];
        if (total.firstNonFinite != INT_MAX) atomicMin(&slot.firstNonFinite, total.firstNonFinite);
        if (ids != nullptr) {
            atomicAdd(&slot.idSum, total.idSum);
            atomicAdd(&slot.idSquareSum, total.idSquareSum);
        }
    }
}

__device__ inline void classifyOne(float position, int i, const DimensionCut& cut, std::uint8_t* __restrict__ direction,
                                   int* __restrict__ status) {
    const int k = cellIndex(static_cast<double>(position), cut.cells, cut.length);
    std::uint8_t dir = kStay;
    if (k != cut.mine) {
        if (k == (cut.mine - 1 + cut.cells) % cut.cells) {
            dir = kDown;  // with two cells the upper neighbour is the lower one too
        } else if (k == (cut.mine + 1) % cut.cells) {
            dir = kUp;
        } else {
            dir = kTooFar;
            atomicMin(&status[kFirstTooFar], i);
        }
    }
    direction[i] = dir;
}

__global__ void classifyKernel(const Vec3f* __restrict__ x, int n, DimensionCut cut,
                               std::uint8_t* __restrict__ direction, int* __restrict__ status) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    classifyOne(x[i][cut.dim], i, cut, direction, status);
}

// The wrap (as wrapAndSummariseKernel) and classifyKernel in one pass (a
// migration's first cut).
// A non-finite particle is reported and left as it is, its direction
// kTooFar without a report of its own: the host refuses the non-finite
// position first.
__global__ void wrapAndClassifyKernel(Vec3f* __restrict__ x, int n, Lengths box, DimensionCut cut,
                                      std::uint8_t* __restrict__ direction, int* __restrict__ status) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    Vec3f p = x[i];
    if (!wrapOne(p, box)) {
        atomicMin(&status[kFirstNonFinite], i);
        direction[i] = kTooFar;
        return;
    }
    x[i] = p;
    classifyOne(p[cut.dim], i, cut, direction, status);
}

struct HasDirection {
    const std::uint8_t* direction;
    std::uint8_t wanted;
    __device__ bool operator()(int i) const { return direction[i] == wanted; }
};

// ParticlePlanBuilder::selectSend's test (plan::sendsAtom) on the same float
// position with the same double-precision shifts: the host's position.
struct WithinHalo {
    HaloSelection s;
    __device__ bool operator()(int i) const {
        const Vec3f x = s.x[i];
        Vec3d c;
        for (int d = 0; d < 3; ++d) c[d] = static_cast<double>(x[d]) + (((s.image[i] >> d) & 1u) ? s.length[d] : 0.0);
        return plan::sendsAtom(s.rule, c, s.mask[i]);
    }
};

// The first of the sorted map[0, count) at or above value.
__device__ inline int firstAtOrAbove(const int* __restrict__ map, int count, int value) {
    int lo = 0, hi = count;
    while (lo < hi) {
        const int mid = (lo + hi) / 2;
        if (map[mid] < value) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

// The selection is ascending (a stable selection of ascending candidates),
// so home atoms (index < numHome) come first and each earlier pulse's slot,
// a contiguous range of indices, is a contiguous run of the map: every
// count is two binary searches, written whole (nothing to zero before).
__global__ void attributeKernel(const int* __restrict__ selected, int numHome, SourceSlots slots,
                                int* __restrict__ counters) {
    const int count = counters[kSelected];
    for (int q = static_cast<int>(threadIdx.x) - 1; q < slots.count; q += static_cast<int>(blockDim.x)) {
        if (q < 0) {
            counters[kIndependent] = firstAtOrAbove(selected, count, numHome);
        } else {
            counters[kFirstSource + q] = firstAtOrAbove(selected, count, slots.offset[q] + slots.size[q]) -
                                         firstAtOrAbove(selected, count, slots.offset[q]);
        }
    }
}

__global__ void packHaloKernel(const int* __restrict__ map, int count, const Vec3f* __restrict__ x,
                               const std::uint8_t* __restrict__ image, const std::uint8_t* __restrict__ mask,
                               std::uint8_t imageBit, std::uint8_t maskBit, Vec3f* __restrict__ outX,
                               std::uint8_t* __restrict__ outImage, std::uint8_t* __restrict__ outMask) {
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= count) return;
    const int i = map[j];
    outX[j] = x[i];
    outImage[j] = image[i] | imageBit;
    outMask[j] = mask[i] | maskBit;
}

// Entry i as padding: NaN position, no image, kPaddingMask.
__device__ inline void writePadding(int i, Vec3f* x, std::uint8_t* image, std::uint8_t* mask) {
    const float nan = __int_as_float(0x7fc00000);
    x[i] = Vec3f{nan, nan, nan};
    image[i] = 0;
    mask[i] = plan::kPaddingMask;
}

// Element src of a field to its element dst (in == nullptr: zeroed), by
// 4-byte words where the size allows, else by bytes.
template <class Word>
__device__ inline void copyWords(const void* in, long long src, void* out, long long dst, int words) {
    auto* to = static_cast<Word*>(out) + dst * words;
    if (in == nullptr) {
        for (int w = 0; w < words; ++w) to[w] = Word{0};
        return;
    }
    const auto* from = static_cast<const Word*>(in) + src * words;
    for (int w = 0; w < words; ++w) to[w] = from[w];
}
__device__ inline void copyElement(const void* in, long long src, void* out, long long dst, int bytes) {
    if (bytes % 4 == 0) copyWords<std::uint32_t>(in, src, out, dst, bytes / 4);
    else copyWords<std::uint8_t>(in, src, out, dst, bytes);
}

__global__ void fillPaddingKernel(int begin, int end, Vec3f* __restrict__ x, std::uint8_t* __restrict__ image,
                                  std::uint8_t* __restrict__ mask, FieldCopies fields) {
    const int i = begin + blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= end) return;
    writePadding(i, x, image, mask);
    for (int f = 0; f < fields.count; ++f) copyElement(nullptr, i, fields.out[f], i, fields.bytes[f]);
}

__global__ void copyFieldsKernel(FieldCopies fields, const int* __restrict__ index, int count) {
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= count) return;
    const long long src = index != nullptr ? index[j] : j;
    for (int f = 0; f < fields.count; ++f) copyElement(fields.in[f], src, fields.out[f], j, fields.bytes[f]);
}

struct GatherSegments {
    int count = 0;
    FieldCopies fields[kGatherSegments];
    const int* index[kGatherSegments] = {};
    int size[kGatherSegments] = {};
};

// copyFieldsKernel for the segments one after the other along the grid.
__global__ void copySegmentsKernel(GatherSegments s) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    for (int q = 0; q < s.count; ++q) {
        if (j < s.size[q]) {
            const FieldCopies& fields = s.fields[q];
            const long long src = s.index[q] != nullptr ? s.index[q][j] : j;
            for (int f = 0; f < fields.count; ++f) copyElement(fields.in[f], src, fields.out[f], j, fields.bytes[f]);
            return;
        }
        j -= s.size[q];
    }
}

__global__ void homePrefixKernel(const Vec3f* __restrict__ home, int numHome, int end, bool copyPositions,
                                 Vec3f* __restrict__ x, std::uint8_t* __restrict__ image,
                                 std::uint8_t* __restrict__ mask, FieldCopies fields) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= end) return;
    const bool padding = i >= numHome;
    if (copyPositions && padding) {
        writePadding(i, x, image, mask);
    } else if (copyPositions) {
        x[i] = home[i];
        image[i] = 0;
        mask[i] = 0;
    }
    for (int f = 0; f < fields.count; ++f) {
        copyElement(padding ? nullptr : fields.in[f], i, fields.out[f], i, fields.bytes[f]);
    }
}

__global__ void idSumsKernel(const std::int64_t* __restrict__ ids, int n, unsigned long long* __restrict__ sums) {
    unsigned long long sum = 0, squares = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const auto id = static_cast<unsigned long long>(ids[i]);
        sum += id;
        squares += id * id;
    }
    for (int offset = 16; offset > 0; offset /= 2) {
        sum += __shfl_down_sync(0xffffffffu, sum, offset);
        squares += __shfl_down_sync(0xffffffffu, squares, offset);
    }
    if ((threadIdx.x & 31) == 0) {
        atomicAdd(&sums[0], sum);
        atomicAdd(&sums[1], squares);
    }
}

// cub::DeviceSelect::If over the indices [first, first + count).
template <class Predicate>
void selectIndices(int first, int count, Predicate predicate, int* out, int* numSelected,
                   cuda::DeviceBuffer<std::byte>& temp, cudaStream_t stream) {
    const thrust::counting_iterator<int> from(first);
    std::size_t bytes = 0;
    HALOEX_CUDA_CHECK(cub::DeviceSelect::If(nullptr, bytes, from, out, numSelected, count, predicate, stream));
    if (temp.capacity() < bytes) {
        HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));  // queued work may use the old space
        temp.reserve(bytes);
    }
    bytes = temp.capacity();
    HALOEX_CUDA_CHECK(cub::DeviceSelect::If(temp.data(), bytes, from, out, numSelected, count, predicate, stream));
}

}  // namespace

void FieldCopyBatch::add(const void* in, void* out, std::size_t elementBytes) {
    if (batches_.empty() || batches_.back().count == kFieldCopies) batches_.emplace_back();
    FieldCopies& b = batches_.back();
    b.in[b.count] = in;
    b.out[b.count] = out;
    b.bytes[b.count] = static_cast<int>(elementBytes);
    ++b.count;
}

void FieldCopyBatch::gather(const int* index, int count, cudaStream_t stream) const {
    if (count <= 0) return;
    for (const FieldCopies& b : batches_) {
        copyFieldsKernel<<<blocksFor(count), kThreads, 0, stream>>>(b, index, count);
        HALOEX_CUDA_CHECK_LAUNCH();
    }
}

void FieldCopyBatch::gatherAll(std::span<const Segment> segments, cudaStream_t stream) {
    const bool oneLaunch =
        segments.size() <= static_cast<std::size_t>(kGatherSegments) &&
        std::all_of(segments.begin(), segments.end(), [](const Segment& g) { return g.batch->batches_.size() <= 1; });
    if (!oneLaunch) {
        for (const Segment& g : segments) g.batch->gather(g.index, g.count, stream);
        return;
    }
    GatherSegments s;
    long long total = 0;
    for (const Segment& g : segments) {
        if (g.count <= 0 || g.batch->batches_.empty()) continue;
        s.fields[s.count] = g.batch->batches_.front();
        s.index[s.count] = g.index;
        s.size[s.count] = g.count;
        ++s.count;
        total += g.count;
    }
    if (total == 0) return;
    copySegmentsKernel<<<blocksFor(total), kThreads, 0, stream>>>(s);
    HALOEX_CUDA_CHECK_LAUNCH();
}

void accumulateIdSums(const std::int64_t* ids, int n, unsigned long long* sums, cudaStream_t stream) {
    if (n <= 0) return;
    const int blocks = std::min(blocksFor(n), 264);
    idSumsKernel<<<blocks, kThreads, 0, stream>>>(ids, n, sums);
    HALOEX_CUDA_CHECK_LAUNCH();
}

void resetMigrationStatus(int* status, cudaStream_t stream) {
    resetStatusKernel<<<1, 1, 0, stream>>>(status);
    HALOEX_CUDA_CHECK_LAUNCH();
}

WrapSummary emptyWrapSummary() { return noParticles(); }

void wrapAndSummarise(Vec3f* x, int n, const double boxLength[3], const std::int64_t* ids, WrapSummary* slots,
                      int parity, cudaStream_t stream) {
    // Even with no particle: the kernel resets the other slot.
    const int blocks = std::clamp(blocksFor(n), 1, 264);
    wrapAndSummariseKernel<<<blocks, kThreads, 0, stream>>>(x, n, Lengths{{boxLength[0], boxLength[1], boxLength[2]}},
                                                            ids, slots, parity);
    HALOEX_CUDA_CHECK_LAUNCH();
}

namespace {

// The stable lists of classifyAndSelect from the directions.
void selectByDirection(const std::uint8_t* direction, int n, int* lists, int* status,
                       cuda::DeviceBuffer<std::byte>& temp, cudaStream_t stream) {
    // Stayers and leavers down in one stable pass (their counts land in
    // kCountStay and kCountDown, which are adjacent), leavers up in another:
    // the three-way partition's third part is not documented as stable, so
    // it is discarded.
    static_assert(kCountDown == kCountStay + 1, "the partition writes both counts at once");
    const thrust::counting_iterator<int> from(0);
    const HasDirection stays{direction, kStay}, goesDown{direction, kDown};
    std::size_t bytes = 0;
    HALOEX_CUDA_CHECK(cub::DevicePartition::If(nullptr, bytes, from, lists, lists + n, thrust::make_discard_iterator(),
                                               status + kCountStay, n, stays, goesDown, stream));
    if (temp.capacity() < bytes) {
        HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));  // queued work may use the old space
        temp.reserve(bytes);
    }
    bytes = temp.capacity();
    HALOEX_CUDA_CHECK(cub::DevicePartition::If(temp.data(), bytes, from, lists, lists + n,
                                               thrust::make_discard_iterator(), status + kCountStay, n, stays, goesDown,
                                               stream));
    selectIndices(0, n, HasDirection{direction, kUp}, lists + 2LL * n, status + kCountUp, temp, stream);
}

}  // namespace

void classifyAndSelect(const Vec3f* x, int n, const DimensionCut& cut, std::uint8_t* direction, int* lists, int* status,
                       cuda::DeviceBuffer<std::byte>& temp, cudaStream_t stream) {
    if (n <= 0) return;
    classifyKernel<<<blocksFor(n), kThreads, 0, stream>>>(x, n, cut, direction, status);
    HALOEX_CUDA_CHECK_LAUNCH();
    selectByDirection(direction, n, lists, status, temp, stream);
}

void wrapClassifyAndSelect(Vec3f* x, int n, const double boxLength[3], const DimensionCut& cut, std::uint8_t* direction,
                           int* lists, int* status, cuda::DeviceBuffer<std::byte>& temp, cudaStream_t stream) {
    if (n <= 0) return;
    wrapAndClassifyKernel<<<blocksFor(n), kThreads, 0, stream>>>(x, n,
                                                                 Lengths{{boxLength[0], boxLength[1], boxLength[2]}},
                                                                 cut, direction, status);
    HALOEX_CUDA_CHECK_LAUNCH();
    selectByDirection(direction, n, lists, status, temp, stream);
}

void selectHaloCandidates(const HaloSelection& selection, int first, int count, int numHome, const SourceSlots& slots,
                          int* map, int* counters, cuda::DeviceBuffer<std::byte>& temp, cudaStream_t stream) {
    if (count <= 0) {  // no candidate: nothing selected, nothing attributed
        HALOEX_CUDA_CHECK(cudaMemsetAsync(counters, 0, kPlanCounters * sizeof(int), stream));
        return;
    }
    selectIndices(first, count, WithinHalo{selection}, map, counters + kSelected, temp, stream);
    attributeKernel<<<1, 64, 0, stream>>>(map, numHome, slots, counters);
    HALOEX_CUDA_CHECK_LAUNCH();
}

void packHaloRecords(const int* map, int count, const Vec3f* x, const std::uint8_t* image, const std::uint8_t* mask,
                     std::uint8_t imageBit, std::uint8_t maskBit, Vec3f* outX, std::uint8_t* outImage,
                     std::uint8_t* outMask, cudaStream_t stream) {
    if (count <= 0) return;
    packHaloKernel<<<blocksFor(count), kThreads, 0, stream>>>(map, count, x, image, mask, imageBit, maskBit, outX,
                                                              outImage, outMask);
    HALOEX_CUDA_CHECK_LAUNCH();
}

void writeHomePrefix(const Vec3f* homePositions, int numHome, int end, bool copyPositions, Vec3f* x,
                     std::uint8_t* image, std::uint8_t* mask, const FieldCopies& fields, cudaStream_t stream) {
    if (end <= 0) return;
    homePrefixKernel<<<blocksFor(end), kThreads, 0, stream>>>(homePositions, numHome, end, copyPositions, x, image,
                                                              mask, fields);
    HALOEX_CUDA_CHECK_LAUNCH();
}

void fillPadding(int begin, int end, Vec3f* x, std::uint8_t* image, std::uint8_t* mask, const FieldCopies& fields,
                 cudaStream_t stream) {
    if (end <= begin) return;
    fillPaddingKernel<<<blocksFor(end - begin), kThreads, 0, stream>>>(begin, end, x, image, mask, fields);
    HALOEX_CUDA_CHECK_LAUNCH();
}

}  // namespace haloex::particles::detail
