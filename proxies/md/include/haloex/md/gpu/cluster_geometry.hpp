#pragma once
// The cluster-pair list's geometry and rules, shared bit for bit by the GPU
// search kernels and the CPU reference (cluster_reference.hpp): what is a
// column, which cluster pairs and which atom pairs enter the list.
//
// Every float operation here that decides list membership uses explicitly
// rounded arithmetic (no fused multiply-add on the device), so the CPU
// reference and the GPU build the *identical* list and tests can compare them
// element by element. Plain C++ when compiled without nvcc.
#include <cstdint>
#include <cstring>

#include "haloex/core/vec3.hpp"
#include "haloex/plan/particle_plan.hpp"

namespace haloex::md::gpu {

// Atoms per cluster (both i and j side): a warp computes an 8x8 tile.
inline constexpr int kClusterSize = 8;
// The longest list entry (NonbondedOptions::maxJClustersPerEntry): four
// chunks of 32 records, one warp's load each.
inline constexpr int kMaxJClustersPerEntry = 128;
// Shift vectors: index = (sx+1) + 3 (sy+1) + 9 (sz+1), s in {-1,0,1}^3,
// applied to the j cluster (x_j + s L). Only dims flagged periodic get s != 0.
inline constexpr int kNumShifts = 27;
inline constexpr int kCentralShift = 13;
// Position of empty cluster slots: finite and far from everything, so a
// masked-out pair can never produce a NaN.
inline constexpr float kFarAway = -1.0e5f;

// One i-cluster work item of the pair-list kernel: j-pairs [jBegin, jEnd).
struct alignas(16) ClusterEntry {
    int ci;
    int jBegin;
    int jEnd;
    int unused;
};

// One cluster pair: j cluster, shift index and the 64-bit interaction mask.
// Bit (a * 8 + b) set = pair (i-slot a, j-slot b) is computed: maskLo holds
// i-slots 0..3, maskHi i-slots 4..7. In the force kernel lane 16 h + 8 u + b
// handles i-slots u, u + 2, u + 4, u + 6 with j-slot b, so its bits are bits
// 8 u + b and 8 u + b + 16 of maskLo and of maskHi.
struct alignas(16) ClusterPair {
    int cj;
    int shift;
    std::uint32_t maskLo;
    std::uint32_t maskHi;
};
static_assert(sizeof(ClusterEntry) == 16 && sizeof(ClusterPair) == 16, "16-byte loads in the kernels");

// A grid of columns in x-y over one set of atoms (home or halo); atoms are
// sorted by z inside a column and cut into clusters of 8.
struct ColumnGrid {
    float x0 = 0.f, y0 = 0.f, z0 = 0.f;  // lower corner of the atoms' bounding box
    float z1 = 0.f;                      // its upper z (columns span the whole z extent)
    float invCellX = 0.f, invCellY = 0.f;
    int nx = 1, ny = 1;
    int firstColumn = 0;  // columns of all grids are numbered globally: home first, then halo
    // The z part of the sort key: (z - z0) * zScale rounded down, zBits bits
    // (chooseGrids sets both for the grids' total column count; zScale 0: one z).
    int zBits = 0;
    float zScale = 0.f;
    HALOEX_HD int numColumns() const { return nx * ny; }
};

struct Float3 {
    float x, y, z;
};

// IEEE-rounded float arithmetic: nvcc would otherwise contract a*b+c into an
// FMA and the device would decide differently from the host in the last bit.
HALOEX_HD inline float addRn(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fadd_rn(a, b);
#else
    return a + b;
#endif
}
HALOEX_HD inline float subRn(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fsub_rn(a, b);
#else
    return a - b;
#endif
}
HALOEX_HD inline float mulRn(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fmul_rn(a, b);
#else
    return a * b;
#endif
}
HALOEX_HD inline float maxf(float a, float b) { return a > b ? a : b; }
HALOEX_HD inline float minf(float a, float b) { return a < b ? a : b; }

// floor() of a float that may be far outside int range, clamped to [0, n-1];
// callers that need "completely outside" use cellIndexUnclamped.
HALOEX_HD inline int cellIndexUnclamped(float offset, float invCell) {
    const float t = mulRn(offset, invCell);
    // Keep far-away values in int range before converting (no UB on the host).
    const float c = t < -1.0e6f ? -1.0e6f : (t > 1.0e6f ? 1.0e6f : t);
    const int i = static_cast<int>(c);
    return (static_cast<float>(i) > c) ? i - 1 : i;  // floor for negative values
}
HALOEX_HD inline int clampIndex(int i, int n) { return i < 0 ? 0 : (i >= n ? n - 1 : i); }

HALOEX_HD inline int columnOf(const ColumnGrid& g, float x, float y) {
    const int cx = clampIndex(cellIndexUnclamped(subRn(x, g.x0), g.invCellX), g.nx);
    const int cy = clampIndex(cellIndexUnclamped(subRn(y, g.y0), g.invCellY), g.ny);
    return g.firstColumn + cx + g.nx * cy;
}

// Columns [lo, hi] of one grid dimension that a search region
// [regionLo, regionHi] touches; lo > hi when it misses the grid entirely.
struct IndexRange {
    int lo, hi;
};
HALOEX_HD inline IndexRange cellRange(float regionLo, float regionHi, float origin, float invCell, int n) {
    const int a = cellIndexUnclamped(subRn(regionLo, origin), invCell);
    const int b = cellIndexUnclamped(subRn(regionHi, origin), invCell);
    // Atoms at exactly the grid's upper edge sit in cell n (clamped to n - 1).
    if (b < 0 || a > n) return {1, 0};
    return {clampIndex(a, n), clampIndex(b, n)};
}
// Search region of the j atoms for i box [lo, hi] and shift s: the j atoms
// shifted by s must come within `radius` of the i box.
HALOEX_HD inline float regionLo(float iLo, float shift, float radius) { return subRn(subRn(iLo, shift), radius); }
HALOEX_HD inline float regionHi(float iHi, float shift, float radius) { return addRn(subRn(iHi, shift), radius); }

// Whether the grid's atoms moved by a shift of z component `shift` can come
// within `radius` of the i box [iLo, iHi] along z at all. The column ranges
// test x and y only, and a column spans the grid's whole z extent, so without
// this a z shift (periodic z, one rank along it) would walk every column of the
// i box's neighbourhood again -- twice more bounding-box tests, all failing,
// for every i cluster not near a z face.
HALOEX_HD inline bool zShiftReachesGrid(const ColumnGrid& g, float iLo, float iHi, float shift, float radius) {
    return !(regionLo(iLo, shift, radius) > g.z1 || regionHi(iHi, shift, radius) < g.z0);
}

// Sort key of an atom, 32 bits so the radix sort takes four passes: the
// column above the zBits low bits, which hold z quantised over the grid's z
// extent (monotone in z: atoms sort by z up to one quantum, 1 / zScale,
// which the search's cut of a column's upper part allows for). Equal keys
// keep the atoms' index order (a stable sort).
HALOEX_HD inline std::uint32_t sortKey(const ColumnGrid& g, int column, float z) {
    float t = mulRn(subRn(z, g.z0), g.zScale);
    if (!(t > 0.f)) t = 0.f;  // also NaN and -0
    const auto top = static_cast<float>((1u << g.zBits) - 1u);
    const std::uint32_t q = t >= top ? static_cast<std::uint32_t>(top) : static_cast<std::uint32_t>(t);
    return (static_cast<std::uint32_t>(column) << g.zBits) | q;
}
// gpu::CellOrder's key of a home atom at (x, y, z) in the home grid g: its
// column above the exact z offset from the grid's lower z (a non-negative
// float, whose bits order as its value), so atoms sorted by it are in the
// order of any monotone quantisation of z, sortKey's included. The same on
// the host (cellOrderReference) and the device.
HALOEX_HD inline std::uint64_t cellOrderKey(const ColumnGrid& g, float x, float y, float z) {
    float dz = subRn(z, g.z0);
    if (!(dz > 0.f)) dz = 0.f;  // also -0
    std::uint32_t bits = 0;
    memcpy(&bits, &dz, sizeof bits);
    return (static_cast<std::uint64_t>(columnOf(g, x, y)) << 32) | bits;
}
// Key of atoms that take no part (padding): sorts after every real atom
// (chooseGrids leaves a column number's top value unused).
inline constexpr std::uint32_t kNoAtomKey = ~std::uint32_t{0};

HALOEX_HD inline Float3 shiftVector(int shiftIndex, Float3 boxLength) {
    const int sx = shiftIndex % 3 - 1;
    const int sy = (shiftIndex / 3) % 3 - 1;
    const int sz = shiftIndex / 9 - 1;
    return {static_cast<float>(sx) * boxLength.x, static_cast<float>(sy) * boxLength.y,
            static_cast<float>(sz) * boxLength.z};
}
// Shifts the search visits: nonzero components only along periodic dims.
HALOEX_HD inline bool shiftAllowed(int shiftIndex, bool px, bool py, bool pz) {
    const int sx = shiftIndex % 3 - 1;
    const int sy = (shiftIndex / 3) % 3 - 1;
    const int sz = shiftIndex / 9 - 1;
    return (px || sx == 0) && (py || sy == 0) && (pz || sz == 0);
}

// Squared distance between the i box and the j box moved by `shift`.
HALOEX_HD inline float boxDistance2(Float3 iLo, Float3 iHi, Float3 jLo, Float3 jHi, Float3 shift) {
    const float lx = addRn(jLo.x, shift.x), hx = addRn(jHi.x, shift.x);
    const float ly = addRn(jLo.y, shift.y), hy = addRn(jHi.y, shift.y);
    const float lz = addRn(jLo.z, shift.z), hz = addRn(jHi.z, shift.z);
    const float dx = maxf(0.f, maxf(subRn(lx, iHi.x), subRn(iLo.x, hx)));
    const float dy = maxf(0.f, maxf(subRn(ly, iHi.y), subRn(iLo.y, hy)));
    const float dz = maxf(0.f, maxf(subRn(lz, iHi.z), subRn(iLo.z, hz)));
    return addRn(addRn(mulRn(dx, dx), mulRn(dy, dy)), mulRn(dz, dz));
}

// Squared distance between atom i and the shifted atom j.
HALOEX_HD inline float atomDistance2(Float3 xi, Float3 xj, Float3 shift) {
    const float dx = subRn(xi.x, addRn(xj.x, shift.x));
    const float dy = subRn(xi.y, addRn(xj.y, shift.y));
    const float dz = subRn(xi.z, addRn(xj.z, shift.z));
    return addRn(addRn(mulRn(dx, dx), mulRn(dy, dy)), mulRn(dz, dz));
}

// Half-list rule for two clusters of the same grid (home-home, halo-halo): of
// (ci, cj, s) and (cj, ci, -s), which give the same atom pairs, exactly one
// is kept. For cj != ci: the higher index when both have the same parity,
// the lower when not -- so every cluster keeps about half of its
// neighbours whatever its index. (With "cj > ci" the first clusters kept all
// their neighbours and the last none: the search, one warp per i cluster and
// every warp resident at small sizes, lasted as long as the first clusters'
// warps, twice the average.) For cj == ci: the central shift (then only
// slots a < b) or a "positive" shift (index > 13). Clusters of different
// grids (home i, halo j) keep every shift.
HALOEX_HD inline bool clusterPairInHalfList(int ci, int cj, int shiftIndex, bool sameGrid) {
    if (!sameGrid) return true;
    if (cj == ci) return shiftIndex >= kCentralShift;
    const bool sameParity = ((ci ^ cj) & 1) == 0;
    return (cj > ci) == sameParity;
}

// Whether some i cluster of [first, first + count) keeps j cluster cj under
// clusterPairInHalfList: the pre-filter of a group of i clusters. Two
// consecutive clusters have both parities, so one of them always does.
HALOEX_HD inline bool clusterGroupInHalfList(int first, int count, int cj, int shiftIndex, bool sameGrid) {
    return count > 1 || clusterPairInHalfList(first, cj, shiftIndex, sameGrid);
}

// Whether atom pair (i-slot a, j-slot b) of a kept cluster pair is computed.
// Empty slots carry kPaddingMask; zone masks decide ownership (docs/planner.md).
// plan::zonePairComputed for device code (that one is host-only constexpr);
// the unit tests check the two agree on all 256 x 256 masks.
HALOEX_HD inline bool zonePairAllowed(plan::ZoneMask a, plan::ZoneMask b) {
    return ((a | b) & plan::kPaddingMask) == 0 && (a & b) == 0;
}

HALOEX_HD inline bool atomPairInList(plan::ZoneMask zi, plan::ZoneMask zj, int a, int b, bool sameCluster,
                                     int shiftIndex) {
    if (!zonePairAllowed(zi, zj)) return false;
    if (sameCluster) {
        if (shiftIndex == kCentralShift) return a < b;
        return a != b;  // an atom and its own image are > 2 rc apart anyway
    }
    return true;
}

// Rolling pruning (nonbonded.hpp, NonbondedOptions::pruneParts): part k of
// `parts` is the contiguous entry range [prunePartBegin(k), prunePartBegin(k+1));
// sizes differ by at most one. Contiguous rather than strided so a part's
// pair records are one stretch of memory.
HALOEX_HD inline int prunePartBegin(int numEntries, int parts, int k) {
    return static_cast<int>(static_cast<long long>(numEntries) * k / parts);
}

// The grid choice itself (cell size, density, grids): grid_choice.hpp.

}  // namespace haloex::md::gpu
