// CPU reference of the GPU cluster-pair search (see cluster_reference.hpp).
// Mirrors the device code step by step; keep the two in sync.
#include "haloex/md/gpu/cluster_reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fmt/format.h>
#include <numeric>

#include "haloex/core/error.hpp"

namespace haloex::md::gpu {
namespace {

bool isPadding(std::span<const plan::ZoneMask> zoneMask, int i) {
    return !zoneMask.empty() && (zoneMask[i] & plan::kPaddingMask) != 0;
}

plan::ZoneMask slotZone(const ClusterLayoutHost& layout, std::span<const plan::ZoneMask> zoneMask, int slot) {
    const int atom = layout.atomOfSlot[slot];
    if (atom < 0) return plan::kPaddingMask;
    return zoneMask.empty() ? plan::ZoneMask{0} : zoneMask[atom];
}

Float3 toFloat3(const Vec3f& v) { return {v.x, v.y, v.z}; }

}  // namespace

AtomBounds boundsReference(std::span<const Vec3f> x, int begin, int end, int numHome,
                           std::span<const plan::ZoneMask> zoneMask) {
    AtomBounds b;
    for (int i = begin; i < end; ++i) {
        if (i >= numHome && isPadding(zoneMask, i)) continue;  // home atoms are never padding
        if (!isFinite(x[i])) {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("pair search: local atom {} has a non-finite position ({}, {}, {})", i, x[i].x,
                                   x[i].y, x[i].z));
        }
        if (b.count == 0) {
            b.lo = b.hi = toFloat3(x[i]);
        } else {
            b.lo = {minf(b.lo.x, x[i].x), minf(b.lo.y, x[i].y), minf(b.lo.z, x[i].z)};
            b.hi = {maxf(b.hi.x, x[i].x), maxf(b.hi.y, x[i].y), maxf(b.hi.z, x[i].z)};
        }
        ++b.count;
    }
    return b;
}

std::vector<int> cellOrderReference(std::span<const Vec3f> home) {
    const int n = static_cast<int>(home.size());
    std::vector<int> order(home.size());
    std::iota(order.begin(), order.end(), 0);
    if (!std::all_of(home.begin(), home.end(), [](const Vec3f& p) { return isFinite(p); })) return order;
    const ColumnGrid g = chooseGrids(boundsReference(home, 0, n, n, {}), AtomBounds{}).home;
    std::vector<std::uint64_t> keys(home.size());
    for (int i = 0; i < n; ++i) keys[i] = cellOrderKey(g, home[i].x, home[i].y, home[i].z);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return keys[a] < keys[b]; });
    return order;
}

ClusterLayoutHost buildLayoutReference(std::span<const Vec3f> x, std::span<const plan::ZoneMask> zoneMask,
                                       int numHome) {
    const int numLocal = static_cast<int>(x.size());
    HALOEX_ASSERT(numHome >= 0 && numHome <= numLocal, "numHome within the local atoms");
    HALOEX_ASSERT(zoneMask.empty() ? numHome == numLocal : zoneMask.size() == x.size(), "one zone mask per atom");
    ClusterLayoutHost layout;
    const AtomBounds home = boundsReference(x, 0, numHome, numHome, zoneMask);
    const AtomBounds halo = boundsReference(x, numHome, numLocal, numHome, zoneMask);
    layout.grids = chooseGrids(home, halo);
    const int numColumns = layout.grids.numColumns();

    std::vector<std::uint32_t> keys(numLocal);
    std::vector<int> columnCount(numColumns, 0);
    for (int i = 0; i < numLocal; ++i) {
        if (i >= numHome && isPadding(zoneMask, i)) {
            keys[i] = kNoAtomKey;
            continue;
        }
        const ColumnGrid& g = i < numHome ? layout.grids.home : layout.grids.halo;
        const int column = columnOf(g, x[i].x, x[i].y);
        keys[i] = sortKey(g, column, x[i].z);
        ++columnCount[column];
    }
    std::vector<int> order(numLocal);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return keys[a] < keys[b]; });

    layout.columnClusterStart.assign(numColumns + 1, 0);
    std::vector<int> columnAtomStart(numColumns + 1, 0);
    for (int c = 0; c < numColumns; ++c) {
        columnAtomStart[c + 1] = columnAtomStart[c] + columnCount[c];
        layout.columnClusterStart[c + 1] =
            layout.columnClusterStart[c] + (columnCount[c] + kClusterSize - 1) / kClusterSize;
    }
    layout.numClusters = layout.columnClusterStart[numColumns];
    layout.numHomeClusters = layout.columnClusterStart[layout.grids.home.numColumns()];
    layout.atomOfSlot.assign(static_cast<std::size_t>(layout.numClusters) * kClusterSize, -1);
    for (int c = 0; c < numColumns; ++c) {
        for (int k = 0; k < columnCount[c]; ++k) {
            layout.atomOfSlot[layout.columnClusterStart[c] * kClusterSize + k] = order[columnAtomStart[c] + k];
        }
    }
    layout.bboxLo.resize(layout.numClusters);
    layout.bboxHi.resize(layout.numClusters);
    for (int ci = 0; ci < layout.numClusters; ++ci) {
        bool first = true;
        for (int a = 0; a < kClusterSize; ++a) {
            const int atom = layout.atomOfSlot[ci * kClusterSize + a];
            if (atom < 0) continue;
            const Vec3f& p = x[atom];
            if (first) {
                layout.bboxLo[ci] = layout.bboxHi[ci] = toFloat3(p);
                first = false;
            } else {
                Float3& lo = layout.bboxLo[ci];
                Float3& hi = layout.bboxHi[ci];
                lo = {minf(lo.x, p.x), minf(lo.y, p.y), minf(lo.z, p.z)};
                hi = {maxf(hi.x, p.x), maxf(hi.y, p.y), maxf(hi.z, p.z)};
            }
        }
    }
    return layout;
}

PairListHost searchReference(const ClusterLayoutHost& layout, std::span<const Vec3f> x,
                             std::span<const plan::ZoneMask> zoneMask, bool nonlocal, const SearchSettings& settings) {
    validateSearchSettings(settings, "pair search reference");
    const float rlist2 = rlistSquared(settings.rlist);
    const float radius = columnSearchRadius(settings.rlist);
    const Float3 lengths = boxLengthsF(settings.box);
    const ColumnGrid& jGrid = nonlocal ? layout.grids.halo : layout.grids.home;
    const int numTasks = nonlocal ? layout.numClusters : layout.numHomeClusters;

    PairListHost list;
    std::vector<ClusterPair> found;
    for (int ci = 0; ci < numTasks; ++ci) {
        const bool sameGrid = !nonlocal || ci >= layout.numHomeClusters;
        const Float3 iLo = layout.bboxLo[ci], iHi = layout.bboxHi[ci];
        found.clear();
        for (int s = 0; s < kNumShifts; ++s) {
            if (!shiftAllowed(s, settings.periodic[0], settings.periodic[1], settings.periodic[2])) continue;
            const Float3 sv = shiftVector(s, lengths);
            if (!zShiftReachesGrid(jGrid, iLo.z, iHi.z, sv.z, radius)) continue;
            const IndexRange rx = cellRange(regionLo(iLo.x, sv.x, radius), regionHi(iHi.x, sv.x, radius), jGrid.x0,
                                            jGrid.invCellX, jGrid.nx);
            const IndexRange ry = cellRange(regionLo(iLo.y, sv.y, radius), regionHi(iHi.y, sv.y, radius), jGrid.y0,
                                            jGrid.invCellY, jGrid.ny);
            for (int cy = ry.lo; cy <= ry.hi; ++cy) {
                for (int cx = rx.lo; cx <= rx.hi; ++cx) {
                    const int column = jGrid.firstColumn + cx + jGrid.nx * cy;
                    for (int cj = layout.columnClusterStart[column]; cj < layout.columnClusterStart[column + 1]; ++cj) {
                        if (!clusterPairInHalfList(ci, cj, s, sameGrid)) continue;
                        if (!(boxDistance2(iLo, iHi, layout.bboxLo[cj], layout.bboxHi[cj], sv) < rlist2)) continue;
                        std::uint32_t lo = 0, hi = 0;
                        bool anyWithin = false;
                        for (int a = 0; a < kClusterSize; ++a) {
                            const int si = ci * kClusterSize + a;
                            const plan::ZoneMask zi = slotZone(layout, zoneMask, si);
                            for (int b = 0; b < kClusterSize; ++b) {
                                const int sj = cj * kClusterSize + b;
                                const plan::ZoneMask zj = slotZone(layout, zoneMask, sj);
                                if (!atomPairInList(zi, zj, a, b, ci == cj, s)) continue;
                                const int bit = a * kClusterSize + b;
                                if (bit < 32) lo |= 1u << bit;
                                else hi |= 1u << (bit - 32);
                                const float r2 = atomDistance2(toFloat3(x[layout.atomOfSlot[si]]),
                                                               toFloat3(x[layout.atomOfSlot[sj]]), sv);
                                anyWithin = anyWithin || r2 < rlist2;
                            }
                        }
                        if (anyWithin) found.push_back({cj, s, lo, hi});
                    }
                }
            }
        }
        const int begin = static_cast<int>(list.pairs.size());
        const int count = static_cast<int>(found.size());
        for (int e = 0; e < count; e += settings.maxJClustersPerEntry) {
            list.entries.push_back({ci, begin + e, begin + std::min(count, e + settings.maxJClustersPerEntry), 0});
        }
        list.pairs.insert(list.pairs.end(), found.begin(), found.end());
    }
    return list;
}

PairListHost pruneReference(const ClusterLayoutHost& layout, const PairListHost& outer, std::span<const Vec3f> x,
                            const SearchSettings& settings, double rlistInner, int entryBegin, int entryEnd) {
    const float rlistInner2 = rlistSquared(rlistInner);
    const Float3 lengths = boxLengthsF(settings.box);
    const int numEntries = static_cast<int>(outer.entries.size());
    if (entryEnd < 0) entryEnd = numEntries;
    PairListHost inner;
    inner.entries.reserve(outer.entries.size());
    for (int e = 0; e < numEntries; ++e) {
        const ClusterEntry& entry = outer.entries[e];
        const bool prune = e >= entryBegin && e < entryEnd;
        const int begin = static_cast<int>(inner.pairs.size());
        for (int k = entry.jBegin; k < entry.jEnd; ++k) {
            const ClusterPair& p = outer.pairs[k];
            const Float3 sv = shiftVector(p.shift, lengths);
            bool near = !prune;
            for (int bit = 0; bit < kClusterSize * kClusterSize && !near; ++bit) {
                const bool inMask = ((bit < 32 ? p.maskLo >> bit : p.maskHi >> (bit - 32)) & 1u) != 0;
                if (!inMask) continue;
                const int ai = layout.atomOfSlot[entry.ci * kClusterSize + bit / kClusterSize];
                const int aj = layout.atomOfSlot[p.cj * kClusterSize + bit % kClusterSize];
                near = atomDistance2(toFloat3(x[ai]), toFloat3(x[aj]), sv) < rlistInner2;
            }
            if (near) inner.pairs.push_back(p);
        }
        inner.entries.push_back({entry.ci, begin, static_cast<int>(inner.pairs.size()), 0});
    }
    return inner;
}

ListEnergies evaluateListReference(const ClusterLayoutHost& layout, const PairListHost& list, std::span<const Vec3f> x,
                                   std::span<const float> charges, const SearchSettings& settings, const ForceField& ff,
                                   std::span<Vec3f> forces) {
    const PairConstants c = makePairConstants(ff);
    const Float3 lengths = boxLengthsF(settings.box);
    ListEnergies e;
    for (const ClusterEntry& entry : list.entries) {
        for (int k = entry.jBegin; k < entry.jEnd; ++k) {
            const ClusterPair& p = list.pairs[k];
            const Float3 sv = shiftVector(p.shift, lengths);
            for (int a = 0; a < kClusterSize; ++a) {
                const int ai = layout.atomOfSlot[entry.ci * kClusterSize + a];
                for (int b = 0; b < kClusterSize; ++b) {
                    const int bit = a * kClusterSize + b;
                    const bool inMask = ((bit < 32 ? p.maskLo >> bit : p.maskHi >> (bit - 32)) & 1u) != 0;
                    if (!inMask) continue;
                    const int aj = layout.atomOfSlot[p.cj * kClusterSize + b];
                    const float dx = x[ai].x - (x[aj].x + sv.x);
                    const float dy = x[ai].y - (x[aj].y + sv.y);
                    const float dz = x[ai].z - (x[aj].z + sv.z);
                    const float r2 = dx * dx + dy * dy + dz * dz;
                    const bool interacts = r2 < c.rc2;
                    const float r2Exact = atomDistance2({x[ai].x, x[ai].y, x[ai].z}, {x[aj].x, x[aj].y, x[aj].z}, sv);
                    if (r2Exact < c.rc2) ++e.pairsWithinCutoff;
                    const float qq = (charges[ai] * c.sqrtCoulomb) * (charges[aj] * c.sqrtCoulomb);
                    float vlj = 0.f, vc = 0.f;
                    const float fscal = pairForceOverR<true>(c, r2, qq, interacts, vlj, vc);
                    forces[ai] += Vec3f{dx, dy, dz} * fscal;
                    forces[aj] -= Vec3f{dx, dy, dz} * fscal;
                    if (interacts) {
                        const double virial = -0.5 * static_cast<double>(fscal) * static_cast<double>(r2);
                        e.lj += vlj;
                        e.coulomb += vc;
                        e.virial += virial;
                        e.ljMagnitude += std::abs(static_cast<double>(vlj));
                        e.coulombMagnitude += std::abs(static_cast<double>(vc));
                        e.virialMagnitude += std::abs(virial);
                    }
                }
            }
        }
    }
    return e;
}

}  // namespace haloex::md::gpu
