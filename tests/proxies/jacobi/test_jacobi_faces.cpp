// From the structured-grid plan to the stencil's face lines: every message is
// one face of the sender's interior and lands exactly where the receiver
// expects it; the lines deliver what the plan's own pulse-by-pulse exchange
// delivers to every face halo cell; the boundary band is covered, and each of
// its cells counted once towards the norm.
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <ostream>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "core/jacobi_faces.hpp"
#include "core/jacobi_problem.hpp"
#include "haloex/core/error.hpp"
#include "haloex/runtime/world.hpp"
#include "haloex/detail/transport/host_exchange.hpp"

namespace haloex::jacobi {
namespace {

struct FaceCase {
    std::string name;
    int nx, ny, px, py;
    Boundary boundary;
};

void PrintTo(const FaceCase& c, std::ostream* os) { *os << c.name; }

std::vector<FaceCase> faceCases() {
    std::vector<FaceCase> c;
    for (Boundary b : {Boundary::Periodic, Boundary::Fixed}) {
        const std::string s = b == Boundary::Periodic ? "_periodic" : "_fixed";
        c.push_back({"rows_1x3" + s, 12, 9, 1, 3, b});
        c.push_back({"columns_3x1" + s, 12, 9, 3, 1, b});
        c.push_back({"grid_2x2" + s, 12, 8, 2, 2, b});
        c.push_back({"grid_3x3" + s, 12, 9, 3, 3, b});
        c.push_back({"grid_3x2" + s, 9, 4, 3, 2, b});
        c.push_back({"single_rank" + s, 6, 5, 1, 1, b});
        c.push_back({"one_cell_blocks_2x3" + s, 2, 3, 2, 3, b});
        c.push_back({"one_row_blocks_1x2" + s, 4, 2, 1, 2, b});
        c.push_back({"two_by_two_blocks_2x2" + s, 4, 4, 2, 2, b});
    }
    return c;
}

ProblemSpec problemOf(const FaceCase& c) {
    ProblemSpec s;
    s.nx = c.nx;
    s.ny = c.ny;
    s.px = c.px;
    s.py = c.py;
    s.boundary = c.boundary;
    s.niter = 1;
    validate(s, c.px * c.py);
    return s;
}

class JacobiFaces : public ::testing::TestWithParam<FaceCase> {};

TEST_P(JacobiFaces, MessagesAreFacesAndLandWhereTheReceiverExpects) {
    const ProblemSpec spec = problemOf(GetParam());
    const int n = spec.ranks();
    std::vector<stencil::LocalStencil> all;
    for (int r = 0; r < n; ++r) all.push_back(buildLocalStencil(plan::buildGridPlan(gridSpec(spec), r)));
    int sends = 0, receives = 0;
    for (const auto& s : all) {
        receives += static_cast<int>(s.receives.size());
        for (const auto& m : s.sends) {
            ++sends;
            ASSERT_EQ(m.send.count, m.dim == 0 ? s.ny : s.nx);
            for (int k = 0; k < m.send.count; ++k) {
                const auto c = m.send.at(k);
                const int i = static_cast<int>(c % s.ax) - 1, j = static_cast<int>(c / s.ax) - 1;
                ASSERT_TRUE(i >= 0 && i < s.nx && j >= 0 && j < s.ny) << "rank " << s.rank << " sends a halo cell";
                const int along = m.dim == 0 ? i : j;
                const int extent = m.dim == 0 ? s.nx : s.ny;
                EXPECT_EQ(along, m.direction < 0 ? 0 : extent - 1) << "rank " << s.rank << " pulse " << m.pulse;
            }
            // The peer receives this pulse from us, at exactly the remote line.
            const auto& peer = all[static_cast<std::size_t>(m.peer)];
            int matches = 0;
            for (const auto& r : peer.receives) {
                if (r.pulse != m.pulse) continue;
                ++matches;
                EXPECT_EQ(r.peer, s.rank);
                EXPECT_EQ(r.recv.start, m.remote.start);
                EXPECT_EQ(r.recv.stride, m.remote.stride);
                EXPECT_EQ(r.recv.count, m.remote.count);
                // A receive fills the halo beyond the face it faces.
                for (int k = 0; k < r.recv.count; ++k) {
                    const auto c = r.recv.at(k);
                    const int i = static_cast<int>(c % peer.ax) - 1, j = static_cast<int>(c / peer.ax) - 1;
                    const int along = m.dim == 0 ? i : j, across = m.dim == 0 ? j : i;
                    const int extent = m.dim == 0 ? peer.nx : peer.ny;
                    const int acrossExtent = m.dim == 0 ? peer.ny : peer.nx;
                    EXPECT_EQ(along, m.direction < 0 ? extent : -1);
                    EXPECT_TRUE(across >= 0 && across < acrossExtent) << "a corner cell is received";
                }
            }
            EXPECT_EQ(matches, 1) << "rank " << m.peer << " receives pulse " << m.pulse << " once";
        }
    }
    EXPECT_EQ(sends, receives);
    // Periodic: every rank has all four faces. Fixed: only the inner ones.
    for (const auto& s : all) {
        std::size_t expected = 0;
        const int cx = s.originX / spec.localNx(), cy = s.originY / spec.localNy();
        const int coord[2] = {cx, cy}, dims[2] = {spec.px, spec.py};
        for (int d = 0; d < 2; ++d) {
            if (spec.boundary == Boundary::Periodic) {
                expected += 2;
            } else {
                expected += (coord[d] > 0 ? 1 : 0) + (coord[d] < dims[d] - 1 ? 1 : 0);
            }
        }
        EXPECT_EQ(s.sends.size(), expected) << "rank " << s.rank;
        EXPECT_EQ(s.receives.size(), expected) << "rank " << s.rank;
    }
}

// The pack hook's mapping (halo_variant.cpp): each face line is a run of its
// pulse's send indices, so the boundary kernel can store the line into the
// halo's send staging at the run's slots.
TEST_P(JacobiFaces, EveryFaceLineIsARunOfItsPulsesSends) {
    const ProblemSpec spec = problemOf(GetParam());
    for (int r = 0; r < spec.ranks(); ++r) {
        const plan::GridHaloPlan plan = plan::buildGridPlan(gridSpec(spec), r);
        const stencil::LocalStencil s = buildLocalStencil(plan);
        for (const auto& m : s.sends) {
            const plan::Pulse& pulse = plan.pulses[static_cast<std::size_t>(m.pulse)];
            const int first = sendSlotOf(pulse, m.send);
            ASSERT_LE(first + m.send.count, static_cast<int>(pulse.sendIndices.size()));
            for (int k = 0; k < m.send.count; ++k) {
                EXPECT_EQ(pulse.sendIndices[static_cast<std::size_t>(first + k)], m.send.at(k))
                    << "rank " << r << " pulse " << m.pulse << " cell " << k;
            }
        }
    }
}

TEST(JacobiFacesSlots, ALineThatIsNotARunOfTheSendsIsAnInternalError) {
    plan::Pulse pulse;
    pulse.id = 3;
    pulse.sendIndices = {5, 6, 7, 9};
    EXPECT_EQ(sendSlotOf(pulse, stencil::Line{6, 1, 2}), 1);
    try {
        sendSlotOf(pulse, stencil::Line{7, 1, 2});  // 7, 8: 8 is not sent
        FAIL() << "expected an Internal error";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::Internal);
        EXPECT_NE(std::string(e.what()).find("is not a run of its 4 send indices"), std::string::npos) << e.what();
    }
}

TEST_P(JacobiFaces, LinesDeliverWhatThePlanDelivers) {
    const ProblemSpec spec = problemOf(GetParam());
    std::mutex failuresMutex;
    std::vector<std::string> failures;
    runtime::runInProcess(spec.ranks(), [&](runtime::World& world) {
        const plan::GridHaloPlan plan = plan::buildGridPlan(gridSpec(spec), world.rank());
        const stencil::LocalStencil s = buildLocalStencil(plan);
        // Interior cells carry their global id, halo cells -1.
        std::vector<double> data(static_cast<std::size_t>(s.numLocal()), -1.0);
        for (int j = 0; j < s.ny; ++j)
            for (int i = 0; i < s.nx; ++i)
                data[static_cast<std::size_t>(s.index(i, j))] = (s.originX + i) + 1000.0 * (s.originY + j);
        std::vector<double> viaPlan = data, viaLines = data;
        transport::forwardPulses(world, plan.pulses, std::span<double>(viaPlan.data(), viaPlan.size()));
        for (int p = 0; p < s.numPulses; ++p) {
            std::vector<double> out, in;
            int dest = -1, src = -1;
            const stencil::FaceReceive* receive = nullptr;
            for (const auto& m : s.sends) {
                if (m.pulse != p) continue;
                for (int k = 0; k < m.send.count; ++k) out.push_back(viaLines[static_cast<std::size_t>(m.send.at(k))]);
                dest = m.peer;
            }
            for (const auto& r : s.receives) {
                if (r.pulse != p) continue;
                receive = &r;
                src = r.peer;
                in.resize(static_cast<std::size_t>(r.recv.count));
            }
            world.sendRecvBytes(std::as_bytes(std::span<const double>(out.data(), out.size())), dest,
                                std::as_writable_bytes(std::span<double>(in.data(), in.size())), src, p);
            if (receive) {
                for (int k = 0; k < receive->recv.count; ++k)
                    viaLines[static_cast<std::size_t>(receive->recv.at(k))] = in[static_cast<std::size_t>(k)];
            }
        }
        // Every face halo cell (not a corner) holds what the plan put there.
        for (int j = -1; j <= s.ny; ++j) {
            for (int i = -1; i <= s.nx; ++i) {
                const int outside = (i < 0 || i >= s.nx) + (j < 0 || j >= s.ny);
                if (outside != 1) continue;
                const auto c = static_cast<std::size_t>(s.index(i, j));
                if (viaLines[c] != viaPlan[c]) {
                    std::lock_guard<std::mutex> lock(failuresMutex);
                    failures.push_back("rank " + std::to_string(world.rank()) + " cell (" + std::to_string(i) + ", " +
                                       std::to_string(j) + "): lines " + std::to_string(viaLines[c]) + ", plan " +
                                       std::to_string(viaPlan[c]));
                }
            }
        }
    });
    EXPECT_TRUE(failures.empty()) << failures.size() << " face halo cells differ; first: " << failures.front();
}

// The app's faces-only plan and one with corners give the same lines (the
// corners are dropped either way), so every variant sees one stencil.
TEST_P(JacobiFaces, FacesOnlyPlanGivesTheLinesOfThePlanWithCorners) {
    const ProblemSpec spec = problemOf(GetParam());
    plan::GridSpec withCorners = gridSpec(spec);
    ASSERT_FALSE(withCorners.edgesAndCorners);
    withCorners.edgesAndCorners = true;
    auto same = [](const stencil::Line& a, const stencil::Line& b) {
        return a.start == b.start && a.stride == b.stride && a.count == b.count;
    };
    for (int r = 0; r < spec.ranks(); ++r) {
        SCOPED_TRACE(::testing::Message() << "rank " << r);
        const stencil::LocalStencil a = buildLocalStencil(plan::buildGridPlan(gridSpec(spec), r));
        const stencil::LocalStencil b = buildLocalStencil(plan::buildGridPlan(withCorners, r));
        ASSERT_EQ(a.sends.size(), b.sends.size());
        for (std::size_t m = 0; m < a.sends.size(); ++m) {
            EXPECT_TRUE(same(a.sends[m].send, b.sends[m].send) && same(a.sends[m].remote, b.sends[m].remote) &&
                        a.sends[m].peer == b.sends[m].peer && a.sends[m].pulse == b.sends[m].pulse &&
                        a.sends[m].normBegin == b.sends[m].normBegin && a.sends[m].normEnd == b.sends[m].normEnd)
                << "message " << m;
        }
        ASSERT_EQ(a.receives.size(), b.receives.size());
        for (std::size_t i = 0; i < a.receives.size(); ++i) {
            EXPECT_TRUE(same(a.receives[i].recv, b.receives[i].recv) && a.receives[i].peer == b.receives[i].peer)
                << "receive " << i;
        }
        ASSERT_EQ(a.unsentLines.size(), b.unsentLines.size());
        for (std::size_t u = 0; u < a.unsentLines.size(); ++u) {
            EXPECT_TRUE(same(a.unsentLines[u].cells, b.unsentLines[u].cells) &&
                        a.unsentLines[u].normBegin == b.unsentLines[u].normBegin &&
                        a.unsentLines[u].normEnd == b.unsentLines[u].normEnd)
                << "unsent line " << u;
        }
    }
}

TEST_P(JacobiFaces, BoundaryBandCoveredAndCountedOnce) {
    const ProblemSpec spec = problemOf(GetParam());
    for (int rank = 0; rank < spec.ranks(); ++rank) {
        const stencil::LocalStencil s = buildLocalStencil(plan::buildGridPlan(gridSpec(spec), rank));
        std::multiset<std::int64_t> counted;
        std::set<std::int64_t> covered;
        auto walk = [&](const stencil::Line& line, int normBegin, int normEnd) {
            EXPECT_LE(0, normBegin);
            EXPECT_LE(normBegin, normEnd);
            EXPECT_LE(normEnd, line.count);
            for (int k = 0; k < line.count; ++k) {
                covered.insert(line.at(k));
                if (k >= normBegin && k < normEnd) counted.insert(line.at(k));
            }
        };
        for (const auto& m : s.sends) walk(m.send, m.normBegin, m.normEnd);
        for (const auto& u : s.unsentLines) walk(u.cells, u.normBegin, u.normEnd);
        std::set<std::int64_t> band;
        for (int j = 0; j < s.ny; ++j)
            for (int i = 0; i < s.nx; ++i)
                if (i == 0 || j == 0 || i == s.nx - 1 || j == s.ny - 1) band.insert(s.index(i, j));
        EXPECT_EQ(covered, band) << "rank " << rank << ": the lines are exactly the boundary band";
        EXPECT_EQ(counted.size(), band.size()) << "rank " << rank << ": each band cell counted once";
        EXPECT_EQ(std::set<std::int64_t>(counted.begin(), counted.end()), band);
        EXPECT_EQ(static_cast<std::size_t>(s.interiorCols()) * s.interiorRows() + band.size(),
                  static_cast<std::size_t>(s.nx) * s.ny)
            << "interior and band partition the block";
    }
}

INSTANTIATE_TEST_SUITE_P(Grids, JacobiFaces, ::testing::ValuesIn(faceCases()),
                         [](const ::testing::TestParamInfo<FaceCase>& p) { return p.param.name; });

TEST(JacobiLines, IndexListsMustBeEquallySpaced) {
    const stencil::Line line = toLine({5, 9, 13, 17}, "test");
    EXPECT_EQ(line.start, 5);
    EXPECT_EQ(line.stride, 4);
    EXPECT_EQ(line.count, 4);
    EXPECT_EQ(toLine({7}, "test").stride, 1);
    EXPECT_EQ(toLine({}, "test").count, 0);
    try {
        toLine({5, 9, 14}, "rank 3 pulse 1 send");
        ADD_FAILURE() << "unequal spacing accepted";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::Internal);
        EXPECT_NE(std::string(e.what()).find("rank 3 pulse 1 send: entry 2 is local index 14"), std::string::npos);
    }
}

}  // namespace
}  // namespace haloex::jacobi
