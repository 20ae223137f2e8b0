// Property tests of the staged-forwarding particle plan (docs/planner.md) over many
// decompositions: both builders agree, every halo atom is exactly the right
// periodic image of its owner, the halo is exactly the region the receiver
// needs (within rlist of its home cell, above it; the whole slab without
// corner pruning), the zone-mask and coordinate ownership rules agree, each
// pair within rc and each atom-image pair within rlist is computed by exactly
// one rank, and the dependency split is right.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "haloex/halo/collective_buffer.hpp"
#include "haloex/halo/coordinate_force_halo.hpp"
#include "test_plan_scenario.hpp"

namespace haloex::testing {
namespace {

using plan::Int3;
using plan::Pulse;

class ParticlePlanProperty : public ::testing::TestWithParam<PlanCase> {
protected:
    void SetUp() override { s_ = std::make_unique<Scenario>(buildScenario(GetParam())); }
    Scenario& s() { return *s_; }

private:
    std::unique_ptr<Scenario> s_;
};

bool sameBits(double a, double b) { return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b); }

void expectSamePulse(const Pulse& a, const Pulse& b) {
    EXPECT_EQ(a.id, b.id);
    EXPECT_EQ(a.dim, b.dim);
    EXPECT_EQ(a.stage, b.stage);
    EXPECT_EQ(a.direction, b.direction);
    EXPECT_EQ(a.sendRank, b.sendRank);
    EXPECT_EQ(a.recvRank, b.recvRank);
    EXPECT_EQ(a.shiftSign, b.shiftSign);
    EXPECT_EQ(a.sendIndices, b.sendIndices);
    EXPECT_EQ(a.numIndependent, b.numIndependent);
    EXPECT_EQ(a.recvCount, b.recvCount);
    EXPECT_EQ(a.recvOffset, b.recvOffset);
    EXPECT_EQ(a.recvCapacity, b.recvCapacity);
    EXPECT_EQ(a.recvIndices, b.recvIndices);
    EXPECT_EQ(a.remoteRecvOffset, b.remoteRecvOffset);
    EXPECT_EQ(a.remoteRecvIndices, b.remoteRecvIndices);
    EXPECT_EQ(a.waitsForward, b.waitsForward);
    EXPECT_EQ(a.waitsReverse, b.waitsReverse);
}

TEST_P(ParticlePlanProperty, CoversTheIntendedPulses) {
    const auto& c = GetParam();
    int total = 0;
    for (int d = 0; d < 3; ++d) {
        EXPECT_EQ(s().dd.pulsesInDim(d), c.pulses[d]) << "dimension " << d;
        total += c.pulses[d];
    }
    ASSERT_EQ(s().dd.totalPulses(), total);
    // The global order: dims in dimOrder, stages ascending.
    int p = 0;
    for (int d : c.dimOrder) {
        for (int k = 0; k < c.pulses[d]; ++k, ++p) {
            EXPECT_EQ(s().dd.pulseOrder()[p].dim, d);
            EXPECT_EQ(s().dd.pulseOrder()[p].stage, k);
        }
    }
    std::size_t atoms = 0;
    for (const auto& ids : s().homeIds) atoms += ids.size();
    EXPECT_EQ(atoms, s().positions.size());
    if (c.emptyRank >= 0) {
        EXPECT_TRUE(s().homeIds[c.emptyRank].empty());
    }
}

TEST_P(ParticlePlanProperty, BothBuildersGiveIdenticalPlans) {
    for (int r = 0; r < s().numRanks(); ++r) {
        SCOPED_TRACE(::testing::Message() << "rank " << r);
        const auto& a = s().inProcess.plans[r];
        const auto& b = s().overWorld[r].plan;
        EXPECT_EQ(a.rank, b.rank);
        EXPECT_EQ(a.coord, b.coord);
        EXPECT_EQ(a.numHome, b.numHome);
        EXPECT_EQ(a.numLocal, b.numLocal);
        EXPECT_EQ(a.alignment, b.alignment);
        EXPECT_EQ(a.zoneMask, b.zoneMask);
        EXPECT_EQ(a.receivedInPulse, b.receivedInPulse);
        ASSERT_EQ(a.pulses.size(), b.pulses.size());
        for (std::size_t p = 0; p < a.pulses.size(); ++p) expectSamePulse(a.pulses[p], b.pulses[p]);
        const auto& xa = s().inProcess.localPositions[r];
        const auto& xb = s().overWorld[r].localPositions;
        ASSERT_EQ(xa.size(), xb.size());
        for (std::size_t i = 0; i < xa.size(); ++i) {
            for (int d = 0; d < 3; ++d) ASSERT_TRUE(sameBits(xa[i][d], xb[i][d])) << "local atom " << i;
        }
    }
}

// Every local atom is its owner's position shifted by whole box lengths: none
// along undecomposed dims, 0 or 1 along decomposed ones (halos lie above);
// its zone mask has bit d exactly when it lies above the upper face in d.
TEST_P(ParticlePlanProperty, HaloAtomsAreExactPeriodicImagesOfTheirOwners) {
    const auto& dd = s().dd;
    const Vec3d L = dd.box().length;
    for (int r = 0; r < s().numRanks(); ++r) {
        SCOPED_TRACE(::testing::Message() << "rank " << r);
        const auto& plan = s().plan(r);
        const auto& x = s().local(r);
        const auto& ids = s().localIds[r];
        ASSERT_EQ(static_cast<int>(x.size()), plan.numLocal);
        ASSERT_EQ(static_cast<int>(plan.zoneMask.size()), plan.numLocal);
        ASSERT_EQ(static_cast<int>(plan.receivedInPulse.size()), plan.numLocal);
        for (int i = 0; i < plan.numLocal; ++i) {
            const bool padding = (plan.zoneMask[i] & plan::kPaddingMask) != 0;
            if (padding) {
                EXPECT_GE(i, plan.numHome);
                EXPECT_EQ(ids[i], -1) << "padding slot " << i << " received an atom";
                EXPECT_EQ(plan.receivedInPulse[i], -1);
                EXPECT_FALSE(isFinite(x[i])) << "padding slot " << i << " holds a finite position";
                continue;
            }
            ASSERT_GE(ids[i], 0) << "local atom " << i << " has no forwarded id";
            const Vec3d& owner = s().positions[ids[i]];
            if (i < plan.numHome) {
                EXPECT_EQ(ids[i], s().homeIds[r][i]);
                EXPECT_EQ(x[i], owner);
                EXPECT_EQ(plan.zoneMask[i], 0);
                EXPECT_EQ(dd.ownerRank(x[i]), r);
                continue;
            }
            const Int3 k = imageShift(x[i], owner, L);
            for (int d = 0; d < 3; ++d) {
                if (!dd.grid().decomposed(d)) {
                    EXPECT_EQ(k[d], 0) << "atom " << ids[i] << " shifted along undecomposed dim " << d;
                    EXPECT_TRUE(sameBits(x[i][d], owner[d])) << "atom " << ids[i] << " dim " << d;
                    EXPECT_EQ(plan.zoneMask[i] & (1u << d), 0u);
                    continue;
                }
                ASSERT_TRUE(k[d] == 0 || k[d] == 1) << "atom " << ids[i] << " image " << k[d] << " in dim " << d;
                const double expected = k[d] == 0 ? owner[d] : owner[d] + L[d];
                EXPECT_TRUE(sameBits(x[i][d], expected))
                    << "atom " << ids[i] << " dim " << d << ": " << x[i][d] << " vs " << expected;
                const bool above = x[i][d] >= dd.cellHi(r, d);
                EXPECT_EQ((plan.zoneMask[i] >> d) & 1u, above ? 1u : 0u)
                    << "zone mask of local atom " << i << " (id " << ids[i] << ") disagrees with its position in dim "
                    << d;
                EXPECT_GE(x[i][d], dd.cellLo(r, d));
                EXPECT_LT(x[i][d], dd.cellHi(r, d) + dd.rlist());
            }
            EXPECT_NE(plan.zoneMask[i], 0) << "halo atom " << i << " carries no dimension";
            // receivedInPulse names the slot the atom lies in.
            const int p = plan.receivedInPulse[i];
            ASSERT_GE(p, 0);
            const Pulse& pulse = plan.pulses[p];
            EXPECT_GE(i, pulse.recvOffset);
            EXPECT_LT(i, pulse.recvOffset + pulse.recvCount);
            EXPECT_TRUE((plan.zoneMask[i] >> pulse.dim) & 1u);
        }
    }
}

// Whether an atom image at x (rank r's frame, decomposed dims only shifted)
// belongs to r's halo: lo_d <= x_d < hi_d + rlist in every decomposed dim,
// not in the home cell, and with corner pruning, where x lies above the home
// cell in two or more dims, within rlist of it (docs/planner.md).
bool inHaloRegion(const Vec3d& x, int r, const plan::Decomposition& dd) {
    bool home = true;
    int above = 0;
    double distance2 = 0.0;
    for (int d = 0; d < 3; ++d) {
        if (!dd.grid().decomposed(d)) continue;
        if (x[d] < dd.cellLo(r, d) || x[d] >= dd.cellHi(r, d) + dd.rlist()) return false;
        if (x[d] >= dd.cellHi(r, d)) {
            home = false;
            ++above;
            distance2 += (x[d] - dd.cellHi(r, d)) * (x[d] - dd.cellHi(r, d));
        }
    }
    if (home) return false;
    return !dd.prunesCorners() || above < 2 || distance2 < dd.rlist() * dd.rlist();
}

// The halo is exactly the set of atom images in inHaloRegion: nothing
// missing, nothing twice.
TEST_P(ParticlePlanProperty, HaloIsExactlyTheRegionTheReceiverNeedsWithoutDuplicates) {
    const auto& dd = s().dd;
    const Vec3d L = dd.box().length;
    using Image = std::tuple<int, int, int, int>;  // id, shift x, y, z
    for (int r = 0; r < s().numRanks(); ++r) {
        SCOPED_TRACE(::testing::Message() << "rank " << r);
        const auto& plan = s().plan(r);
        std::vector<Image> present;
        for (int i = plan.numHome; i < plan.numLocal; ++i) {
            if (plan.zoneMask[i] & plan::kPaddingMask) continue;
            const Int3 k = imageShift(s().local(r)[i], s().positions[s().localIds[r][i]], L);
            present.emplace_back(s().localIds[r][i], k[0], k[1], k[2]);
        }
        std::sort(present.begin(), present.end());
        const auto duplicate = std::adjacent_find(present.begin(), present.end());
        EXPECT_TRUE(duplicate == present.end()) << "atom " << std::get<0>(*duplicate) << " appears twice";

        std::vector<Image> expected;
        for (int id = 0; id < static_cast<int>(s().positions.size()); ++id) {
            const Vec3d& y = s().positions[id];
            for (int shifts = 0; shifts < 8; ++shifts) {
                const Int3 k{shifts & 1, (shifts >> 1) & 1, (shifts >> 2) & 1};
                Vec3d x = y;
                bool shiftedAlongUndecomposed = false;
                for (int d = 0; d < 3; ++d) {
                    if (k[d] == 0) continue;
                    shiftedAlongUndecomposed = shiftedAlongUndecomposed || !dd.grid().decomposed(d);
                    x[d] += L[d];
                }
                if (!shiftedAlongUndecomposed && inHaloRegion(x, r, dd)) expected.emplace_back(id, k[0], k[1], k[2]);
            }
        }
        std::sort(expected.begin(), expected.end());
        std::vector<Image> missing, extra;
        std::set_difference(expected.begin(), expected.end(), present.begin(), present.end(),
                            std::back_inserter(missing));
        std::set_difference(present.begin(), present.end(), expected.begin(), expected.end(),
                            std::back_inserter(extra));
        EXPECT_TRUE(missing.empty()) << missing.size() << " atom images missing from the halo, e.g. atom "
                                     << std::get<0>(missing.front());
        EXPECT_TRUE(extra.empty()) << extra.size() << " atom images outside the halo region, e.g. atom "
                                   << std::get<0>(extra.front());
        EXPECT_EQ(plan.numHalo(), static_cast<int>(present.size()));
    }
}

// Distance in a rank's frame: plain along decomposed dims (the halo carries the
// image), minimum image along undecomposed ones.
double rankDistance2(const Vec3d& a, const Vec3d& b, const plan::Decomposition& dd) {
    double r2 = 0.0;
    for (int d = 0; d < 3; ++d) {
        double dx = a[d] - b[d];
        if (!dd.grid().decomposed(d)) dx -= dd.box().length[d] * std::round(dx / dd.box().length[d]);
        r2 += dx * dx;
    }
    return r2;
}

// Calls visit(i, j) for every pair i < j of rank r's local atoms that the
// zone rule gives that rank and that lies within radius2 in its frame: the
// pairs the rank computes.
template <class Visit>
void forEachComputedPair(const Scenario& s, int r, double radius2, Visit visit) {
    const auto& plan = s.plan(r);
    const auto& x = s.local(r);
    for (int i = 0; i < plan.numLocal; ++i) {
        for (int j = i + 1; j < plan.numLocal; ++j) {
            if (!plan::zonePairComputed(plan.zoneMask[i], plan.zoneMask[j])) continue;
            if (rankDistance2(x[i], x[j], s.dd) >= radius2) continue;
            visit(i, j);
        }
    }
}

TEST_P(ParticlePlanProperty, ZoneMaskRuleAgreesWithCoordinateRule) {
    const auto& dd = s().dd;
    const double rlist2 = dd.rlist() * dd.rlist();
    std::int64_t pairsChecked = 0;
    for (int r = 0; r < s().numRanks(); ++r) {
        const auto& plan = s().plan(r);
        const auto& x = s().local(r);
        int mismatches = 0;
        for (int i = 0; i < plan.numLocal; ++i) {
            if (plan.zoneMask[i] & plan::kPaddingMask) continue;
            for (int j = i + 1; j < plan.numLocal; ++j) {
                if (plan.zoneMask[j] & plan::kPaddingMask) continue;
                if (rankDistance2(x[i], x[j], dd) >= rlist2) continue;
                ++pairsChecked;
                bool coordinateRule = true;
                for (int d = 0; d < 3; ++d) {
                    if (dd.grid().decomposed(d))
                        coordinateRule = coordinateRule && std::min(x[i][d], x[j][d]) < dd.cellHi(r, d);
                }
                const bool maskRule = plan::zonePairComputed(plan.zoneMask[i], plan.zoneMask[j]);
                if (maskRule != coordinateRule && ++mismatches <= 5) {
                    ADD_FAILURE() << "rank " << r << ": local atoms " << i << " and " << j << " (ids "
                                  << s().localIds[r][i] << ", " << s().localIds[r][j] << ") mask rule " << maskRule
                                  << ", coordinate rule " << coordinateRule;
                }
            }
        }
        EXPECT_EQ(mismatches, 0) << "rank " << r;
    }
    if (s().positions.size() > 100) {
        EXPECT_GT(pairsChecked, 0);
    }
}

TEST_P(ParticlePlanProperty, EveryPairWithinCutoffIsComputedByExactlyOneRank) {
    const auto& dd = s().dd;
    const Vec3d L = dd.box().length;
    const double rc2 = dd.rc() * dd.rc();
    using Pair = std::pair<int, int>;
    std::vector<Pair> single;
    const int n = static_cast<int>(s().positions.size());
    for (int i = 0; i < n; ++i) {
        for (int j = i + 1; j < n; ++j) {
            if (minimumImageDistance2(s().positions[i], s().positions[j], L) < rc2) single.emplace_back(i, j);
        }
    }
    std::vector<Pair> byRanks;
    for (int r = 0; r < s().numRanks(); ++r) {
        const auto& ids = s().localIds[r];
        forEachComputedPair(s(), r, rc2, [&](int i, int j) {
            byRanks.emplace_back(std::min(ids[i], ids[j]), std::max(ids[i], ids[j]));
        });
    }
    EXPECT_EQ(byRanks.size(), single.size()) << "pair count over ranks vs single domain";
    std::sort(byRanks.begin(), byRanks.end());
    const auto twice = std::adjacent_find(byRanks.begin(), byRanks.end());
    EXPECT_TRUE(twice == byRanks.end()) << "pair (" << twice->first << ", " << twice->second
                                        << ") computed more than once";
    std::vector<Pair> missing, extra;
    std::set_difference(single.begin(), single.end(), byRanks.begin(), byRanks.end(), std::back_inserter(missing));
    std::set_difference(byRanks.begin(), byRanks.end(), single.begin(), single.end(), std::back_inserter(extra));
    EXPECT_TRUE(missing.empty()) << missing.size() << " pairs computed by no rank, e.g. (" << missing.front().first
                                 << ", " << missing.front().second << ")";
    EXPECT_TRUE(extra.empty()) << extra.size() << " pairs that are not within rc, e.g. (" << extra.front().first << ", "
                               << extra.front().second << ")";
    if (n > 100) {
        EXPECT_GT(single.size(), 0u);
    }
}

// An atom pair and the periodic image between them: x_j + k L - x_i on the
// owners' positions, written from the lower global id to the higher.
using ImagePair = std::tuple<int, int, int, int, int>;
ImagePair imagePair(int i, int j, Int3 k) {
    if (i > j) {
        std::swap(i, j);
        for (int& v : k) v = -v;
    }
    return {i, j, k[0], k[1], k[2]};
}

// The image along an undecomposed dim: the minimum image, as rankDistance2 takes it.
int minimumImage(double dx, double length) { return -static_cast<int>(std::round(dx / length)); }

// The pair list needs every atom pair image within rlist (not only within
// rc, and every image: along a decomposed dim shorter than 2 rlist a pair has
// two), each computed by exactly one rank; corner pruning must keep them all.
TEST_P(ParticlePlanProperty, EveryAtomPairImageWithinRlistIsComputedByExactlyOneRank) {
    const auto& dd = s().dd;
    const Vec3d L = dd.box().length;
    const double rlist = dd.rlist(), rlist2 = rlist * rlist;
    const int n = static_cast<int>(s().positions.size());
    std::vector<ImagePair> single;
    for (int i = 0; i < n; ++i) {
        for (int j = i + 1; j < n; ++j) {
            const Vec3d& a = s().positions[i];
            const Vec3d& b = s().positions[j];
            std::array<std::vector<int>, 3> shifts;
            for (int d = 0; d < 3; ++d) {
                const double dx = b[d] - a[d];
                if (!dd.grid().decomposed(d)) {
                    shifts[d] = {minimumImage(dx, L[d])};
                    continue;
                }
                for (int k = -1; k <= 1; ++k) {
                    if (std::abs(dx + k * L[d]) < rlist) shifts[d].push_back(k);
                }
            }
            for (int kx : shifts[0]) {
                for (int ky : shifts[1]) {
                    for (int kz : shifts[2]) {
                        const Int3 k{kx, ky, kz};
                        double r2 = 0.0;
                        for (int d = 0; d < 3; ++d) r2 += (b[d] - a[d] + k[d] * L[d]) * (b[d] - a[d] + k[d] * L[d]);
                        if (r2 < rlist2) single.push_back(imagePair(i, j, k));
                    }
                }
            }
        }
    }
    std::vector<ImagePair> byRanks;
    for (int r = 0; r < s().numRanks(); ++r) {
        const auto& x = s().local(r);
        const auto& ids = s().localIds[r];
        forEachComputedPair(s(), r, rlist2, [&](int i, int j) {
            const Int3 si = imageShift(x[i], s().positions[ids[i]], L);
            const Int3 sj = imageShift(x[j], s().positions[ids[j]], L);
            Int3 k{};
            for (int d = 0; d < 3; ++d) {
                k[d] = dd.grid().decomposed(d) ? sj[d] - si[d] : minimumImage(x[j][d] - x[i][d], L[d]);
            }
            byRanks.push_back(imagePair(ids[i], ids[j], k));
        });
    }
    std::sort(single.begin(), single.end());
    std::sort(byRanks.begin(), byRanks.end());
    const auto twice = std::adjacent_find(byRanks.begin(), byRanks.end());
    EXPECT_TRUE(twice == byRanks.end()) << "atoms " << std::get<0>(*twice) << " and " << std::get<1>(*twice)
                                        << " computed more than once";
    std::vector<ImagePair> missing, extra;
    std::set_difference(single.begin(), single.end(), byRanks.begin(), byRanks.end(), std::back_inserter(missing));
    std::set_difference(byRanks.begin(), byRanks.end(), single.begin(), single.end(), std::back_inserter(extra));
    EXPECT_TRUE(missing.empty()) << missing.size() << " pairs within rlist computed by no rank, e.g. atoms "
                                 << std::get<0>(missing.front()) << " and " << std::get<1>(missing.front());
    EXPECT_TRUE(extra.empty()) << extra.size() << " pairs computed that are not within rlist, e.g. atoms "
                               << std::get<0>(extra.front()) << " and " << std::get<1>(extra.front());
    if (n > 100) {
        EXPECT_GT(single.size(), 0u);
    }
}

int alignUp(int n, int alignment) { return (n + alignment - 1) / alignment * alignment; }

// The pulses whose receive slots [recvOffset, recvOffset + recvCount) hold
// an entry that `pulse` sends: its data dependencies, found by brute force.
std::vector<int> pulsesWrittenInto(const plan::ParticleHaloPlan& plan, const Pulse& pulse) {
    std::vector<int> written;
    for (const Pulse& q : plan.pulses) {
        const bool reads = std::any_of(pulse.sendIndices.begin(), pulse.sendIndices.end(), [&](int index) {
            return index >= q.recvOffset && index < q.recvOffset + q.recvCount;
        });
        if (reads) written.push_back(q.id);
    }
    return written;
}

// The forward exchange of every rank's plan as concurrent ranks may run it:
// a rank packs pulse p as soon as its waitsForward pulses have delivered
// there, the latest ready pulse first (the order most likely to expose a
// missing wait); or (eager false) the pulses one after another. Local slots
// start as -1; home atom i of rank r carries r * 2^32 + i + 1. Returns every
// rank's local array.
std::vector<std::vector<std::int64_t>> forwardAsTheWaitsAllow(const Scenario& s, bool eager) {
    const int ranks = s.numRanks();
    const int pulses = static_cast<int>(s.plan(0).pulses.size());
    std::vector<std::vector<std::int64_t>> local(static_cast<std::size_t>(ranks));
    std::vector<std::vector<bool>> packed(ranks, std::vector<bool>(pulses, false));
    std::vector<std::vector<bool>> delivered(ranks, std::vector<bool>(pulses, false));
    for (int r = 0; r < ranks; ++r) {
        local[r].assign(static_cast<std::size_t>(s.plan(r).numLocal), -1);
        for (int i = 0; i < s.plan(r).numHome; ++i) local[r][i] = (std::int64_t{r} << 32) + i + 1;
    }
    const auto ready = [&](int r, int p) {
        if (packed[r][p]) return false;
        if (!eager) return p == 0 || packed[r][p - 1];  // the pulse order, one after another
        const Pulse& pulse = s.plan(r).pulses[p];
        return std::all_of(pulse.waitsForward.begin(), pulse.waitsForward.end(),
                           [&](int q) { return delivered[r][q]; });
    };
    for (int done = 0; done < ranks * pulses; ++done) {
        int rank = -1, id = -1;
        for (int r = 0; r < ranks; ++r) {
            for (int p = 0; p < pulses; ++p) {
                // Eager: the latest ready pulse; in order: the earliest, so that
                // every rank packs pulse p before any packs p + 1.
                if (ready(r, p) && (eager ? p > id : id < 0 || p < id)) rank = r, id = p;
            }
        }
        if (id < 0) break;  // a wait that can never be met: reported below
        const Pulse& pulse = s.plan(rank).pulses[id];
        const Pulse& landing = s.plan(pulse.sendRank).pulses[id];
        for (int k = 0; k < pulse.sendCount(); ++k) {
            local[pulse.sendRank][landing.recvOffset + k] = local[rank][pulse.sendIndices[k]];
        }
        packed[rank][id] = true;
        delivered[pulse.sendRank][id] = true;
    }
    for (int r = 0; r < ranks; ++r) {
        for (int p = 0; p < pulses; ++p) EXPECT_TRUE(packed[r][p]) << "rank " << r << " never packed pulse " << p;
    }
    return local;
}

TEST_P(ParticlePlanProperty, DependencySplitWaitsAndReceiveSlotsAreConsistent) {
    const auto& dd = s().dd;
    const auto& grid = dd.grid();
    for (int r = 0; r < s().numRanks(); ++r) {
        SCOPED_TRACE(::testing::Message() << "rank " << r);
        const auto& plan = s().plan(r);
        ASSERT_EQ(static_cast<int>(plan.pulses.size()), dd.totalPulses());
        EXPECT_EQ(plan.numLocal % plan.alignment, 0);
        std::vector<std::set<int>> transpose(plan.pulses.size());
        int slotEnd = plan.numHome;
        for (const Pulse& pulse : plan.pulses) {
            SCOPED_TRACE(::testing::Message() << "pulse " << pulse.id);
            EXPECT_EQ(pulse.dim, dd.pulseOrder()[pulse.id].dim);
            EXPECT_EQ(pulse.stage, dd.pulseOrder()[pulse.id].stage);
            EXPECT_EQ(pulse.direction, plan::Direction::Down);
            EXPECT_EQ(pulse.sendRank, grid.neighbour(r, pulse.dim, -1));
            EXPECT_EQ(pulse.recvRank, grid.neighbour(r, pulse.dim, +1));
            EXPECT_EQ(pulse.shiftSign, plan.coord[pulse.dim] == 0 ? 1 : 0);

            // Independent entries are home atoms, dependent ones received atoms.
            ASSERT_GE(pulse.numIndependent, 0);
            ASSERT_LE(pulse.numIndependent, pulse.sendCount());
            for (int k = 0; k < pulse.sendCount(); ++k) {
                const int index = pulse.sendIndices[k];
                ASSERT_GE(index, 0);
                ASSERT_LT(index, plan.numLocal);
                EXPECT_EQ(plan.zoneMask[index] & plan::kPaddingMask, 0) << "padding in the index map";
                if (k < pulse.numIndependent) {
                    EXPECT_LT(index, plan.numHome) << "independent entry " << k;
                } else {
                    EXPECT_GE(index, plan.numHome) << "dependent entry " << k;
                }
            }
            // waitsForward is exactly the set of pulses into whose receive
            // slots the entries it sends were written (from the slot ranges,
            // not from receivedInPulse, which computeDependencies reads).
            EXPECT_EQ(pulse.waitsForward, pulsesWrittenInto(plan, pulse));
            for (int q : pulse.waitsForward) {
                EXPECT_LT(q, pulse.id);
                transpose[q].insert(pulse.id);
            }
            // Forwarding stages take only what the previous stage of this dim brought.
            if (pulse.stage > 0) {
                EXPECT_EQ(pulse.numIndependent, 0);
                const auto previous = std::find_if(plan.pulses.begin(), plan.pulses.end(), [&](const Pulse& q) {
                    return q.dim == pulse.dim && q.stage == pulse.stage - 1;
                });
                ASSERT_NE(previous, plan.pulses.end());
                for (int index : pulse.sendIndices) {
                    EXPECT_EQ(plan.receivedInPulse[index], previous->id) << "local atom " << index;
                }
            }
            // Receive slots: aligned, in pulse order, inside numLocal.
            EXPECT_EQ(pulse.recvOffset % plan.alignment, 0);
            EXPECT_EQ(pulse.recvOffset, alignUp(slotEnd, plan.alignment));
            EXPECT_EQ(pulse.recvCapacity, alignUp(pulse.recvCount, plan.alignment));
            EXPECT_LE(pulse.recvOffset + pulse.recvCapacity, plan.numLocal);
            slotEnd = pulse.recvOffset + pulse.recvCapacity;
            // Peers agree: the receiver's slot and the sender's count.
            const auto& receiver = s().plan(pulse.sendRank).pulses[pulse.id];
            const auto& sender = s().plan(pulse.recvRank).pulses[pulse.id];
            EXPECT_EQ(pulse.remoteRecvOffset, receiver.recvOffset);
            EXPECT_EQ(pulse.recvCount, sender.sendCount());
            EXPECT_EQ(pulse.sendCount(), receiver.recvCount);
            EXPECT_TRUE(pulse.recvIndices.empty());
            EXPECT_TRUE(pulse.remoteRecvIndices.empty());
        }
        EXPECT_EQ(alignUp(slotEnd, plan.alignment), plan.numLocal);
        for (const Pulse& pulse : plan.pulses) {
            EXPECT_EQ(pulse.waitsReverse, std::vector<int>(transpose[pulse.id].begin(), transpose[pulse.id].end()))
                << "waitsReverse of pulse " << pulse.id << " is not the transpose of waitsForward";
        }
    }
}

// waitsForward suffices: ranks that pack each pulse as soon as its waits are
// met, out of the pulse order wherever the waits allow, end with the halo
// that the pulses one after another give (a missing wait forwards a slot
// still -1, or a stale one).
TEST_P(ParticlePlanProperty, ExchangingAsSoonAsTheWaitsAllowGivesThePulseOrdersHalo) {
    const auto inOrder = forwardAsTheWaitsAllow(s(), /*eager=*/false);
    const auto eager = forwardAsTheWaitsAllow(s(), /*eager=*/true);
    for (int r = 0; r < s().numRanks(); ++r) {
        const auto& plan = s().plan(r);
        for (int i = plan.numHome; i < plan.numLocal; ++i) {
            if (plan.receivedInPulse[i] < 0) continue;  // padding
            ASSERT_NE(inOrder[r][i], -1) << "rank " << r << " slot " << i << " never filled in pulse order";
            ASSERT_EQ(eager[r][i], inOrder[r][i])
                << "rank " << r << " slot " << i << " (pulse " << plan.receivedInPulse[i] << ")";
        }
    }
}

// Typed fields through the reference exchange: float charges, int ids, Vec3
// positions shifted at pack time (double and float), and the reverse sum.
TEST_P(ParticlePlanProperty, ReferenceExchangeForwardsTypedFieldsAndReversesSums) {
    const auto& dd = s().dd;
    const Vec3d L = dd.box().length;
    const int n = s().numRanks();
    std::vector<std::vector<float>> charges(n);
    std::vector<std::vector<Vec3d>> xd(n);
    std::vector<std::vector<Vec3f>> xf(n);
    std::vector<std::vector<std::int64_t>> copies(n);
    const auto chargeOf = [](int id) { return 0.25f * static_cast<float>(id % 9) - 1.0f; };
    runtime::runInProcess(n, [&](runtime::World& world) {
        const int r = world.rank();
        const auto& plan = s().plan(r);
        transport::ReferenceTransport reference(world);
        reference.setPlan(plan);
        charges[r].assign(plan.numLocal, -99.0f);
        xd[r].assign(plan.numLocal, Vec3d{-1.0, -1.0, -1.0});
        xf[r].assign(plan.numLocal, Vec3f{-1.0f, -1.0f, -1.0f});
        copies[r].assign(plan.numLocal, 1);
        for (int i = 0; i < plan.numHome; ++i) {
            const int id = s().homeIds[r][i];
            charges[r][i] = chargeOf(id);
            xd[r][i] = s().positions[id];
            xf[r][i] = Vec3f(s().positions[id]);
        }
        reference.forward(std::span<float>(charges[r]));
        reference.forwardPositions(std::span<Vec3d>(xd[r]), dd.box());
        reference.forwardPositions(std::span<Vec3f>(xf[r]), dd.box());
        reference.reverseAdd(std::span<std::int64_t>(copies[r]));
    });
    std::vector<std::int64_t> imagesOf(s().positions.size(), 0);
    for (int r = 0; r < n; ++r) {
        const auto& plan = s().plan(r);
        for (int i = plan.numHome; i < plan.numLocal; ++i) {
            if (s().localIds[r][i] >= 0) ++imagesOf[s().localIds[r][i]];
        }
    }
    for (int r = 0; r < n; ++r) {
        SCOPED_TRACE(::testing::Message() << "rank " << r);
        const auto& plan = s().plan(r);
        for (int i = 0; i < plan.numLocal; ++i) {
            const int id = s().localIds[r][i];
            if (id < 0) continue;
            EXPECT_EQ(charges[r][i], chargeOf(id)) << "local atom " << i;
            for (int d = 0; d < 3; ++d) {
                EXPECT_TRUE(sameBits(xd[r][i][d], s().local(r)[i][d])) << "local atom " << i << " dim " << d;
            }
            const Int3 k = imageShift(s().local(r)[i], s().positions[id], L);
            Vec3f expected(s().positions[id]);
            for (int d = 0; d < 3; ++d) {
                if (k[d] == 1) expected[d] += static_cast<float>(L[d]);
            }
            EXPECT_EQ(xf[r][i], expected) << "float position of local atom " << i << " (id " << id << ")";
        }
        // Reverse: every home atom collects one from each of its halo images.
        for (int i = 0; i < plan.numHome; ++i) {
            EXPECT_EQ(copies[r][i], 1 + imagesOf[s().homeIds[r][i]]) << "home atom " << i;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Decompositions, ParticlePlanProperty, ::testing::ValuesIn(planCases()), caseName);

TEST(ParticlePlan, SystemWithNoAtomsGivesEmptyValidPlans) {
    PlanCase c{"empty", {4.0, 4.0, 3.0}, {2, 2, 1}, 0.9, 1.0, {1, 1, 0}};
    c.alignment = 4;
    const plan::Decomposition dd(specOf(c));
    const std::vector<std::vector<Vec3d>> none(4);
    const auto plans = plan::buildParticlePlansInProcess(dd, none, c.alignment);
    ASSERT_EQ(plans.plans.size(), 4u);
    for (const auto& plan : plans.plans) {
        EXPECT_EQ(plan.numHome, 0);
        EXPECT_EQ(plan.numHalo(), 0);
        EXPECT_EQ(plan.numLocal, 0);
        ASSERT_EQ(plan.pulses.size(), 2u);
        for (const auto& pulse : plan.pulses) {
            EXPECT_EQ(pulse.sendCount(), 0);
            EXPECT_EQ(pulse.recvCount, 0);
            EXPECT_TRUE(pulse.waitsForward.empty());
        }
    }
    runtime::runInProcess(4, [&](runtime::World& world) {
        const auto mine = runtime::buildParticlePlan(dd, {}, world, c.alignment);
        EXPECT_EQ(mine.plan.numLocal, 0);
        transport::ReferenceTransport reference(world);
        CoordinateForceHalo halo(reference);
        auto x = allocateCollective<Vec3f>(world, reference, 0);
        auto f = allocateCollective<Vec3f>(world, reference, 0);
        halo.setPlan(mine.plan, x, f);
        halo.gatherCoordinates(dd.box(), nullptr);
        halo.scatterAddForces(nullptr);
    });
}

// Cells tile the box exactly: neighbouring faces are the same number, the
// first cell starts at 0 and the last ends at L itself, even where L * n / n
// rounds to a neighbouring double; ownerRank agrees with the faces.
TEST(Decomposition, CellFacesTileTheBoxExactly) {
    int roundedBoxes = 0;
    for (int n = 2; n <= 7; ++n) {
        for (int i = 0; i < 60; ++i) {
            const double L = 2.0 + 0.01 * i;
            if (L * n / n != L) ++roundedBoxes;
            plan::DecompositionSpec spec;
            spec.box.length = {L, 2.5, 2.5};
            spec.grid = plan::RankGrid({n, 1, 1});
            spec.rc = 0.2;
            spec.rlist = 0.25;  // below every cell width here: one pulse
            const plan::Decomposition dd(spec);
            SCOPED_TRACE(::testing::Message() << "L = " << L << ", n = " << n);
            EXPECT_EQ(dd.cellLo(0, 0), 0.0);
            EXPECT_EQ(dd.cellHi(n - 1, 0), L);
            for (int c = 0; c + 1 < n; ++c) EXPECT_EQ(dd.cellHi(c, 0), dd.cellLo(c + 1, 0));
            for (int c = 0; c < n; ++c) {
                const Vec3d atFace{dd.cellLo(c, 0), 1.0, 1.0};
                EXPECT_EQ(dd.ownerRank(atFace), c) << "atom exactly on the lower face of cell " << c;
                const Vec3d belowFace{std::nextafter(dd.cellHi(c, 0), 0.0), 1.0, 1.0};
                EXPECT_EQ(dd.ownerRank(belowFace), c) << "atom just below the upper face of cell " << c;
            }
        }
    }
    EXPECT_GT(roundedBoxes, 0) << "no box length where L * n / n != L was tried";
}

TEST(ParticlePlan, PaddingWithoutPulsesKeepsNumLocalAligned) {
    PlanCase c{"single", {3.0, 3.0, 3.0}, {1, 1, 1}, 0.9, 1.0, {0, 0, 0}};
    const plan::Decomposition dd(specOf(c));
    const std::vector<std::vector<Vec3d>> home{{{0.1, 0.2, 0.3}, {1.0, 1.0, 1.0}, {2.0, 2.5, 0.5}}};
    const auto built = plan::buildParticlePlansInProcess(dd, home, 4);
    const auto& plan = built.plans[0];
    EXPECT_EQ(plan.numHome, 3);
    EXPECT_EQ(plan.numLocal, 4);
    EXPECT_EQ(plan.zoneMask[3], plan::kPaddingMask);
    ASSERT_EQ(built.localPositions[0].size(), 4u);
    EXPECT_FALSE(isFinite(built.localPositions[0][3]));
    EXPECT_FALSE(plan::zonePairComputed(plan.zoneMask[0], plan.zoneMask[3]));
    EXPECT_TRUE(plan::zonePairComputed(plan.zoneMask[0], plan.zoneMask[1]));
}

}  // namespace
}  // namespace haloex::testing
