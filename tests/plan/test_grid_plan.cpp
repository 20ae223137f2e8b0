// Structured-grid halo plans (buildGridPlan): after a forward exchange over
// the thread world every halo cell, corners included, holds its neighbour's
// value (wrapped where periodic); halo cells beyond a non-periodic edge keep
// their boundary values; the reverse exchange returns every copy to its
// owner; corners are dependent entries and the waits say so. Faces-only
// plans send their own face cells only, fill face halo cells only, and no
// pulse waits for another.
#include <gtest/gtest.h>

#include <map>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "grid_case.hpp"
#include "haloex/plan/grid_plan.hpp"
#include "haloex/runtime/world.hpp"
#include "haloex/detail/transport/host_exchange.hpp"

namespace haloex::testing {
namespace {

using plan::Int3;

using testsupport::GridCase;
using testsupport::specOf;

std::vector<GridCase> gridCases() {
    const std::array<bool, 3> P{true, true, true};
    const std::array<bool, 3> N{false, false, false};
    std::vector<GridCase> c;
    // 1D (blocks of 4, 4, 5 and 3, 3, 3, 4: uneven)
    c.push_back({"d1_periodic_h1", {13, 1, 1}, {3, 1, 1}, 1, P});
    c.push_back({"d1_periodic_h2", {13, 1, 1}, {3, 1, 1}, 2, P});
    c.push_back({"d1_open_h1", {13, 1, 1}, {4, 1, 1}, 1, N});
    c.push_back({"d1_open_h2", {13, 1, 1}, {4, 1, 1}, 2, N});
    c.push_back({"d1_two_ranks_periodic_h2", {9, 1, 1}, {2, 1, 1}, 2, P});
    c.push_back({"d1_self_periodic_h2", {7, 1, 1}, {1, 1, 1}, 2, P});
    c.push_back({"d1_self_open_h1", {7, 1, 1}, {1, 1, 1}, 1, N});
    // 2D
    c.push_back({"d2_periodic_h1", {11, 7, 1}, {3, 2, 1}, 1, P});
    c.push_back({"d2_periodic_h2", {11, 7, 1}, {3, 2, 1}, 2, P});
    c.push_back({"d2_open_h1", {11, 9, 1}, {3, 2, 1}, 1, N});
    c.push_back({"d2_open_h2", {11, 9, 1}, {3, 2, 1}, 2, N});
    c.push_back({"d2_periodicX_openY_h2", {10, 9, 1}, {4, 2, 1}, 2, {true, false, true}});
    c.push_back({"d2_openX_periodicY_h1", {9, 8, 1}, {2, 3, 1}, 1, {false, true, true}});
    c.push_back({"d2_selfX_periodic_h2", {6, 9, 1}, {1, 3, 1}, 2, P});
    c.push_back({"d2_selfX_openY_h1", {6, 9, 1}, {1, 3, 1}, 1, {true, false, true}});
    c.push_back({"d2_single_rank_periodic_h1", {5, 4, 1}, {1, 1, 1}, 1, P});
    c.push_back({"d2_order_xy_openY_h2", {11, 9, 1}, {3, 2, 1}, 2, {true, false, true}, {0, 1, 2}});
    // 3D
    c.push_back({"d3_periodic_h1", {7, 6, 5}, {2, 2, 2}, 1, P});
    c.push_back({"d3_mixed_h2", {8, 7, 5}, {3, 2, 2}, 2, {true, false, true}});
    c.push_back({"d3_open_order_yzx_h1", {6, 5, 7}, {2, 1, 3}, 1, N, {1, 2, 0}});
    return c;
}

// A local cell seen globally: its global index (wrapped along periodic dims)
// and whether it exists (inside the grid along non-periodic dims).
struct GlobalCell {
    Int3 index;
    bool exists;
};

GlobalCell globalCell(const plan::GridHaloPlan& p, const GridCase& c, const Int3& local) {
    GlobalCell g{{}, true};
    for (int d = 0; d < 3; ++d) {
        int x = p.origin[d] + local[d];
        if (c.periodic[d]) {
            x = ((x % c.cells[d]) + c.cells[d]) % c.cells[d];
        } else if (x < 0 || x >= c.cells[d]) {
            g.exists = false;
        }
        g.index[d] = x;
    }
    return g;
}

double interiorValue(const Int3& g) { return 1.0 + g[0] + 100.0 * g[1] + 10000.0 * g[2]; }
// Beyond a non-periodic edge: a value of the global position, so that
// forwarding one rank's boundary cell into another's corner changes nothing.
double boundaryValue(const Int3& g) { return -(1.0 + (g[0] + 10) + 100.0 * (g[1] + 10) + 10000.0 * (g[2] + 10)); }

Int3 decode(const plan::GridHaloPlan& p, int index) {
    return {index % p.allocated[0] - p.halo[0], (index / p.allocated[0]) % p.allocated[1] - p.halo[1],
            index / (p.allocated[0] * p.allocated[1]) - p.halo[2]};
}

bool isInterior(const plan::GridHaloPlan& p, const Int3& x) {
    for (int d = 0; d < 3; ++d) {
        if (x[d] < 0 || x[d] >= p.interior[d]) return false;
    }
    return true;
}

template <class F>
void forEachLocalCell(const plan::GridHaloPlan& p, F&& f) {
    for (int k = -p.halo[2]; k < p.interior[2] + p.halo[2]; ++k)
        for (int j = -p.halo[1]; j < p.interior[1] + p.halo[1]; ++j)
            for (int i = -p.halo[0]; i < p.interior[0] + p.halo[0]; ++i) f(Int3{i, j, k});
}

class GridPlanExchange : public ::testing::TestWithParam<GridCase> {
protected:
    void SetUp() override {
        const auto spec = specOf(GetParam());
        for (int r = 0; r < spec.grid.size(); ++r) plans_.push_back(plan::buildGridPlan(spec, r));
    }
    int numRanks() const { return static_cast<int>(plans_.size()); }
    std::vector<plan::GridHaloPlan> plans_;
};

TEST_P(GridPlanExchange, BlocksTileTheGridAndPulsesMatchTheHaloDims) {
    const auto& c = GetParam();
    int haloDims = 0;
    for (int d = 0; d < 3; ++d) {
        haloDims += c.cells[d] > 1;
        int total = 0;
        for (int b = 0; b < c.ranks[d]; ++b) {
            EXPECT_EQ(plan::blockStart(c.cells[d], c.ranks[d], b), total);
            const int extent = plan::blockExtent(c.cells[d], c.ranks[d], b);
            EXPECT_GE(extent, c.cells[d] / c.ranks[d]);
            EXPECT_LE(extent, c.cells[d] / c.ranks[d] + 1);
            total += extent;
        }
        EXPECT_EQ(total, c.cells[d]);
    }
    for (const auto& p : plans_) {
        ASSERT_EQ(static_cast<int>(p.pulses.size()), 2 * haloDims);
        EXPECT_EQ(static_cast<int>(p.receivedInPulse.size()), p.numLocal());
        for (int d = 0; d < 3; ++d) {
            EXPECT_EQ(p.halo[d], c.cells[d] > 1 ? c.haloWidth : 0);
            EXPECT_EQ(p.allocated[d], p.interior[d] + 2 * p.halo[d]);
        }
        // Pulses: dims in dimOrder, Down then Up; peers per periodicity.
        int id = 0;
        for (int d : c.dimOrder) {
            if (c.cells[d] == 1) continue;
            for (plan::Direction dir : {plan::Direction::Down, plan::Direction::Up}) {
                const plan::Pulse& pulse = p.pulses[id];
                EXPECT_EQ(pulse.id, id);
                EXPECT_EQ(pulse.dim, d);
                EXPECT_EQ(pulse.direction, dir);
                EXPECT_EQ(pulse.shiftSign, 0);
                EXPECT_EQ(pulse.recvOffset, -1);
                const int step = dir == plan::Direction::Down ? -1 : +1;
                const int c0 = p.coord[d];
                const bool sendEdge = !c.periodic[d] && (step < 0 ? c0 == 0 : c0 == c.ranks[d] - 1);
                const bool recvEdge = !c.periodic[d] && (step < 0 ? c0 == c.ranks[d] - 1 : c0 == 0);
                const plan::RankGrid grid(c.ranks);
                EXPECT_EQ(pulse.sendRank, sendEdge ? -1 : grid.neighbour(p.rank, d, step));
                EXPECT_EQ(pulse.recvRank, recvEdge ? -1 : grid.neighbour(p.rank, d, -step));
                ++id;
            }
        }
    }
}

TEST_P(GridPlanExchange, ForwardFillsEveryHaloCellCornersIncluded) {
    const auto& c = GetParam();
    std::vector<std::vector<double>> data(numRanks());
    runtime::runInProcess(numRanks(), [&](runtime::World& world) {
        const int r = world.rank();
        const auto& p = plans_[r];
        std::vector<double> mine(p.numLocal(), 0.0);
        forEachLocalCell(p, [&](const Int3& x) {
            const GlobalCell g = globalCell(p, c, x);
            double v = -1e9 - r;  // a halo cell to be filled: rank-specific garbage
            if (isInterior(p, x)) v = interiorValue(g.index);
            else if (!g.exists) v = boundaryValue(g.index);
            mine[p.localIndex(x[0], x[1], x[2])] = v;
        });
        transport::forwardPulses(world, p.pulses, std::span<double>(mine));
        data[r] = std::move(mine);
    });
    for (int r = 0; r < numRanks(); ++r) {
        const auto& p = plans_[r];
        int wrong = 0;
        forEachLocalCell(p, [&](const Int3& x) {
            const GlobalCell g = globalCell(p, c, x);
            const double expected = g.exists ? interiorValue(g.index) : boundaryValue(g.index);
            const double got = data[r][p.localIndex(x[0], x[1], x[2])];
            if (got != expected && ++wrong <= 5) {
                ADD_FAILURE() << "rank " << r << " cell (" << x[0] << ", " << x[1] << ", " << x[2] << "): got " << got
                              << ", expected " << expected << (g.exists ? "" : " (beyond an open edge)");
            }
        });
        EXPECT_EQ(wrong, 0) << "rank " << r;
    }
}

// The cell is filled by the last pulse (in pulse order) of a dimension in
// which it lies in the halo: earlier dims' halos are forwarded by later ones.
TEST_P(GridPlanExchange, ReceivedInPulseNamesTheLastFillingPulse) {
    const auto& c = GetParam();
    for (const auto& p : plans_) {
        forEachLocalCell(p, [&](const Int3& x) {
            const int got = p.receivedInPulse[p.localIndex(x[0], x[1], x[2])];
            if (isInterior(p, x)) {
                EXPECT_EQ(got, -1);
                return;
            }
            if (!globalCell(p, c, x).exists) {
                // Beyond an open edge and inside the interior in every other
                // dim: no pulse may write it.
                int outside = 0;
                for (int d = 0; d < 3; ++d) outside += x[d] < 0 || x[d] >= p.interior[d];
                if (outside == 1) {
                    EXPECT_EQ(got, -1) << "rank " << p.rank << " writes cell (" << x[0] << ", " << x[1] << ", " << x[2]
                                       << ") beyond an open edge";
                }
                return;
            }
            int expected = -1, id = 0;
            for (int d : c.dimOrder) {
                if (c.cells[d] == 1) continue;
                if (x[d] >= p.interior[d]) expected = id;  // Down fills the upper halo
                if (x[d] < 0) expected = id + 1;           // Up fills the lower halo
                id += 2;
            }
            EXPECT_EQ(got, expected) << "rank " << p.rank << " cell (" << x[0] << ", " << x[1] << ", " << x[2] << ")";
        });
    }
}

TEST_P(GridPlanExchange, ReverseReturnsEveryHaloCopyToItsOwner) {
    const auto& c = GetParam();
    std::map<Int3, double> copies;  // global cell -> halo copies in the job
    for (const auto& p : plans_) {
        forEachLocalCell(p, [&](const Int3& x) {
            const GlobalCell g = globalCell(p, c, x);
            if (!isInterior(p, x) && g.exists) copies[g.index] += 1.0;
        });
    }
    std::vector<std::vector<double>> data(numRanks());
    runtime::runInProcess(numRanks(), [&](runtime::World& world) {
        const int r = world.rank();
        const auto& p = plans_[r];
        std::vector<double> mine(p.numLocal(), 0.0);
        forEachLocalCell(p, [&](const Int3& x) {
            if (!isInterior(p, x) && globalCell(p, c, x).exists) mine[p.localIndex(x[0], x[1], x[2])] = 1.0;
        });
        transport::reversePulses(world, p.pulses, std::span<double>(mine));
        data[r] = std::move(mine);
    });
    for (int r = 0; r < numRanks(); ++r) {
        const auto& p = plans_[r];
        forEachLocalCell(p, [&](const Int3& x) {
            if (!isInterior(p, x)) return;
            const Int3 g = globalCell(p, c, x).index;
            const auto it = copies.find(g);
            EXPECT_EQ(data[r][p.localIndex(x[0], x[1], x[2])], it == copies.end() ? 0.0 : it->second)
                << "rank " << r << " cell (" << x[0] << ", " << x[1] << ", " << x[2] << ")";
        });
    }
}

TEST_P(GridPlanExchange, CornersAreDependentEntriesAndWaitsMatch) {
    const auto& c = GetParam();
    const bool allPeriodic = c.periodic[0] && c.periodic[1] && c.periodic[2];
    for (const auto& p : plans_) {
        SCOPED_TRACE(::testing::Message() << "rank " << p.rank);
        std::vector<std::set<int>> transpose(p.pulses.size());
        std::set<int> earlierDimPulses;
        for (const auto& pulse : p.pulses) {
            SCOPED_TRACE(::testing::Message() << "pulse " << pulse.id);
            std::set<int> sources;
            for (int k = 0; k < pulse.sendCount(); ++k) {
                const int index = pulse.sendIndices[k];
                ASSERT_GE(index, 0);
                ASSERT_LT(index, p.numLocal());
                const Int3 x = decode(p, index);
                const int source = p.receivedInPulse[index];
                if (k < pulse.numIndependent) {
                    EXPECT_EQ(source, -1) << "independent entry " << k;
                } else {
                    EXPECT_GE(source, 0) << "dependent entry " << k;
                    EXPECT_FALSE(isInterior(p, x)) << "interior cell among dependent entries";
                    sources.insert(source);
                }
                // A cell outside the interior that a neighbour fills must wait for it.
                if (!isInterior(p, x) && globalCell(p, c, x).exists) {
                    EXPECT_GE(k, pulse.numIndependent) << "halo cell sent before its arrival";
                }
                // Only the pulse's layers along its own dim are sent.
                const int d = pulse.dim;
                if (pulse.direction == plan::Direction::Down) {
                    EXPECT_TRUE(x[d] >= 0 && x[d] < c.haloWidth);
                } else {
                    EXPECT_TRUE(x[d] >= p.interior[d] - c.haloWidth && x[d] < p.interior[d]);
                }
            }
            EXPECT_EQ(pulse.waitsForward, std::vector<int>(sources.begin(), sources.end()));
            for (int q : pulse.waitsForward) transpose[q].insert(pulse.id);
            if (allPeriodic && pulse.sends()) {
                // Corners: every pulse of a later dim forwards both halos of every earlier dim.
                EXPECT_EQ(std::set<int>(pulse.waitsForward.begin(), pulse.waitsForward.end()), earlierDimPulses);
                EXPECT_EQ(pulse.numDependent() > 0, !earlierDimPulses.empty());
            }
            if (pulse.direction == plan::Direction::Up) {
                earlierDimPulses.insert(pulse.id - 1);
                earlierDimPulses.insert(pulse.id);
            }
            // The peers agree on sizes and placement.
            EXPECT_EQ(static_cast<int>(pulse.recvIndices.size()), pulse.recvCount);
            if (pulse.sends()) {
                const auto& receiver = plans_[pulse.sendRank].pulses[pulse.id];
                EXPECT_EQ(pulse.remoteRecvIndices, receiver.recvIndices);
                EXPECT_EQ(receiver.recvRank, p.rank);
            } else {
                EXPECT_TRUE(pulse.remoteRecvIndices.empty());
                EXPECT_EQ(pulse.sendCount(), 0);
            }
            if (pulse.receives()) {
                EXPECT_EQ(pulse.recvCount, plans_[pulse.recvRank].pulses[pulse.id].sendCount());
            } else {
                EXPECT_EQ(pulse.recvCount, 0);
            }
        }
        for (const auto& pulse : p.pulses) {
            EXPECT_EQ(pulse.waitsReverse, std::vector<int>(transpose[pulse.id].begin(), transpose[pulse.id].end()));
        }
    }
}

// Dimensions along which a local cell lies outside the interior.
int outsideDims(const plan::GridHaloPlan& p, const Int3& x) {
    int n = 0;
    for (int d = 0; d < 3; ++d) n += x[d] < 0 || x[d] >= p.interior[d];
    return n;
}

TEST(GridPlanFacesOnly, PulsesAreIndependentFacesOfOwnCells) {
    for (GridCase c : gridCases()) {
        SCOPED_TRACE(c.name);
        plan::GridSpec spec = specOf(c);
        spec.edgesAndCorners = false;
        for (int r = 0; r < spec.grid.size(); ++r) {
            const plan::GridHaloPlan p = plan::buildGridPlan(spec, r);
            SCOPED_TRACE(::testing::Message() << "rank " << r);
            for (const auto& pulse : p.pulses) {
                EXPECT_TRUE(pulse.waitsForward.empty()) << "pulse " << pulse.id;
                EXPECT_EQ(pulse.numIndependent, pulse.sendCount()) << "pulse " << pulse.id;
                for (int index : pulse.sendIndices) EXPECT_TRUE(isInterior(p, decode(p, index)));
                for (int index : pulse.recvIndices) EXPECT_EQ(outsideDims(p, decode(p, index)), 1);
                if (pulse.sends()) {
                    // One face: the interior extents across the pulse's dim, haloWidth layers deep.
                    int face = c.haloWidth;
                    for (int d = 0; d < 3; ++d) face *= d == pulse.dim ? 1 : p.interior[d];
                    EXPECT_EQ(pulse.sendCount(), face) << "pulse " << pulse.id;
                }
            }
            // Exactly the face halo cells that exist are filled, by one pulse each.
            forEachLocalCell(p, [&](const Int3& x) {
                const int index = p.localIndex(x[0], x[1], x[2]);
                const bool face = outsideDims(p, x) == 1 && globalCell(p, c, x).exists;
                EXPECT_EQ(p.receivedInPulse[index] >= 0, face) << "cell " << x[0] << "," << x[1] << "," << x[2];
            });
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Grids, GridPlanExchange, ::testing::ValuesIn(gridCases()),
                         [](const ::testing::TestParamInfo<GridCase>& param) { return param.param.name; });

}  // namespace
}  // namespace haloex::testing
