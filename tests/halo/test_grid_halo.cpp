// The typed halo operations on structured-grid fields (halo/grid_halo.hpp)
// with the reference backend on thread ranks, against a direct computation
// from global cell indices: after gather every halo cell that maps to a cell
// of the grid (wrapped along periodic dimensions) holds that cell's value and
// the others keep the caller's boundary values; after scatterAdd every
// interior cell holds its own value plus the value of every halo copy of it
// on any rank. 1D, 2D and 3D, periodic, open and mixed, halo widths 1 and 2,
// a dimension with one rank (self-exchange), several element types; and
// faces-only plans (GridSpec::edgesAndCorners = false), whose gather fills
// face halo cells only and moves every pulse in one exchangeBlocks call.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <fmt/format.h>
#include <map>
#include <memory>
#include <numeric>
#include <span>
#include <ostream>
#include <string>
#include <vector>

#include "grid_case.hpp"
#include "haloex/halo/backend.hpp"
#include "haloex/halo/grid_halo.hpp"
#include "haloex/plan/grid_plan.hpp"
#include "haloex/runtime/world.hpp"

namespace {

using namespace haloex;
using plan::Int3;

using testsupport::GridCase;
using testsupport::specOf;

std::vector<GridCase> gridCases() {
    const std::array<bool, 3> P{true, true, true};
    const std::array<bool, 3> N{false, false, false};
    return {
        {"d1_periodic_h2", {13, 1, 1}, {3, 1, 1}, 2, P},
        {"d1_open_h1", {13, 1, 1}, {4, 1, 1}, 1, N},
        {"d1_self_periodic_h2", {7, 1, 1}, {1, 1, 1}, 2, P},
        {"d2_periodic_h1", {11, 7, 1}, {3, 2, 1}, 1, P},
        {"d2_periodicX_openY_h2", {10, 9, 1}, {4, 2, 1}, 2, {true, false, true}},
        {"d2_selfX_periodic_h2", {6, 9, 1}, {1, 3, 1}, 2, P},
        {"d3_periodic_h1", {7, 6, 5}, {2, 2, 2}, 1, P},
        {"d3_mixed_h2", {8, 7, 5}, {3, 2, 2}, 2, {true, false, true}},
        {"d3_open_order_yzx_h1", {6, 5, 7}, {2, 1, 3}, 1, N, {1, 2, 0}},
        {"d2_periodic_h1_faces", {11, 7, 1}, {3, 2, 1}, 1, P, {2, 1, 0}, false},
        {"d2_periodicX_openY_h2_faces", {10, 9, 1}, {4, 2, 1}, 2, {true, false, true}, {2, 1, 0}, false},
        {"d2_selfX_periodic_h1_faces", {6, 9, 1}, {1, 3, 1}, 1, P, {2, 1, 0}, false},
        {"d3_mixed_h2_faces", {8, 7, 5}, {3, 2, 2}, 2, {true, false, true}, {2, 1, 0}, false},
    };
}

// The global cell a local cell stands for, or exists = false beyond a
// non-periodic edge.
struct GlobalCell {
    Int3 index;
    bool exists;
};

GlobalCell globalCell(const plan::GridHaloPlan& p, const GridCase& c, int local) {
    const Int3 x{local % p.allocated[0] - p.halo[0], (local / p.allocated[0]) % p.allocated[1] - p.halo[1],
                 local / (p.allocated[0] * p.allocated[1]) - p.halo[2]};
    GlobalCell g{{}, true};
    for (int d = 0; d < 3; ++d) {
        int v = p.origin[d] + x[d];
        if (c.periodic[d]) {
            v = ((v % c.cells[d]) + c.cells[d]) % c.cells[d];
        } else if (v < 0 || v >= c.cells[d]) {
            g.exists = false;
        }
        g.index[d] = v;
    }
    return g;
}

// Dimensions along which a local cell lies outside the interior (0: interior,
// 1: a face halo cell, more: an edge or a corner).
int outsideDims(const plan::GridHaloPlan& p, int local) {
    const Int3 x{local % p.allocated[0] - p.halo[0], (local / p.allocated[0]) % p.allocated[1] - p.halo[1],
                 local / (p.allocated[0] * p.allocated[1]) - p.halo[2]};
    int outside = 0;
    for (int d = 0; d < 3; ++d) outside += x[d] < 0 || x[d] >= p.interior[d];
    return outside;
}

bool isInterior(const plan::GridHaloPlan& p, int local) { return outsideDims(p, local) == 0; }

// Whether the plan moves a copy of its global cell into this local cell (or
// it is the cell itself): it exists, and a faces-only plan fills no edge or
// corner cell.
bool filled(const plan::GridHaloPlan& p, const GridCase& c, int local) {
    return globalCell(p, c, local).exists && (c.edgesAndCorners || outsideDims(p, local) <= 1);
}

int flat(const Int3& g, const GridCase& c) { return g[0] + c.cells[0] * (g[1] + c.cells[1] * g[2]); }

// A record moved as bytes (not component-wise).
struct CellState {
    float rho;
    float u[3];
    std::int16_t phase;
};
CellState stateOf(int g) {
    CellState s;
    std::memset(&s, 0, sizeof(s));
    s.rho = 1.0f + static_cast<float>(g);
    s.u[0] = -static_cast<float>(g);
    s.u[1] = 0.5f * static_cast<float>(g);
    s.u[2] = 3.0f;
    s.phase = static_cast<std::int16_t>(g % 5);
    return s;
}

class GridHaloCase : public ::testing::TestWithParam<GridCase> {};

TEST_P(GridHaloCase, GatherFillsEveryHaloCellThatExists) {
    const GridCase c = GetParam();
    const plan::GridSpec spec = specOf(c);
    const int n = spec.grid.size();
    std::vector<std::string> errors(static_cast<std::size_t>(n));
    runtime::runInProcess(n, [&](runtime::World& w) {
        const plan::GridHaloPlan p = plan::buildGridPlan(spec, w.rank());
        transport::TransportOptions host;
        host.memorySpace = transport::MemorySpace::Host;
        auto t = makeTransport(Backend::Reference, w, host);
        GridHalo halo(*t, p);
        ASSERT_EQ(halo.numLocal(), p.numLocal());
        const auto size = static_cast<std::size_t>(p.numLocal());
        std::vector<double> u(size);
        std::vector<CellState> state(size);
        std::vector<double> boundary(size);
        for (int i = 0; i < p.numLocal(); ++i) {
            const GlobalCell g = globalCell(p, c, i);
            // Interior: the cell's value; halo: a boundary value of its global position.
            boundary[i] = -1.0 - (g.index[0] + 10) - 100.0 * (g.index[1] + 10) - 10000.0 * (g.index[2] + 10);
            u[i] = isInterior(p, i) ? flat(g.index, c) + 0.5 : boundary[i];
            state[i] = isInterior(p, i) ? stateOf(flat(g.index, c)) : stateOf(-1);
        }
        halo.gather(u.data());
        halo.gather(state.data());
        int bad = 0;
        std::string first;
        for (int i = 0; i < p.numLocal(); ++i) {
            const GlobalCell g = globalCell(p, c, i);
            const bool reached = filled(p, c, i);
            const double want = reached ? flat(g.index, c) + 0.5 : boundary[i];
            const CellState wantState = reached ? stateOf(flat(g.index, c)) : stateOf(-1);
            // The halo copies bytes: compared bitwise on purpose.
            // NOLINTNEXTLINE(bugprone-suspicious-memory-comparison)
            const bool ok = u[i] == want && std::memcmp(&state[i], &wantState, sizeof(CellState)) == 0;
            if (!ok && bad++ == 0) first = fmt::format("local cell {}: {} want {}", i, u[i], want);
        }
        if (bad) errors[static_cast<std::size_t>(w.rank())] = fmt::format("{} cells differ, first {}", bad, first);
    });
    for (int r = 0; r < n; ++r) EXPECT_EQ(errors[static_cast<std::size_t>(r)], "") << "rank " << r;
}

TEST_P(GridHaloCase, ScatterAddReturnsEveryHaloCopyToItsCell) {
    const GridCase c = GetParam();
    const plan::GridSpec spec = specOf(c);
    const int n = spec.grid.size();
    // Integer-valued contributions: exact in any order.
    const auto contribution = [](int rank, int local) { return static_cast<double>(1 + rank * 1000 + local % 977); };
    std::vector<plan::GridHaloPlan> plans;
    for (int r = 0; r < n; ++r) plans.push_back(plan::buildGridPlan(spec, r));
    std::map<int, double> wantSum;  // global cell -> own value + every halo copy's
    std::map<int, int> wantCopies;
    for (int r = 0; r < n; ++r) {
        for (int i = 0; i < plans[r].numLocal(); ++i) {
            const GlobalCell g = globalCell(plans[r], c, i);
            if (!filled(plans[r], c, i)) continue;
            wantSum[flat(g.index, c)] += contribution(r, i);
            wantCopies[flat(g.index, c)] += 1;
        }
    }
    std::vector<std::string> errors(static_cast<std::size_t>(n));
    runtime::runInProcess(n, [&](runtime::World& w) {
        const plan::GridHaloPlan& p = plans[static_cast<std::size_t>(w.rank())];
        transport::TransportOptions host;
        host.memorySpace = transport::MemorySpace::Host;
        auto t = makeTransport(Backend::Reference, w, host);
        GridHalo halo(*t, p);
        const auto size = static_cast<std::size_t>(p.numLocal());
        std::vector<double> v(size);
        std::vector<std::int64_t> copies(size);
        std::vector<std::array<float, 4>> f4(size);
        for (int i = 0; i < p.numLocal(); ++i) {
            v[i] = contribution(w.rank(), i);
            copies[i] = 1;
            f4[i] = {static_cast<float>(v[i]), -static_cast<float>(v[i]), 1.0f, 0.0f};
        }
        halo.scatterAdd(v.data());
        halo.scatterAdd(copies.data());
        halo.scatterAdd(f4.data());
        int bad = 0;
        std::string first;
        for (int i = 0; i < p.numLocal(); ++i) {
            if (!isInterior(p, i)) continue;
            const int g = flat(globalCell(p, c, i).index, c);
            const double want = wantSum.at(g);
            const int count = wantCopies.at(g);
            const bool ok = v[i] == want && copies[i] == count && f4[i][0] == static_cast<float>(want) &&
                            f4[i][1] == -static_cast<float>(want) && f4[i][2] == static_cast<float>(count) &&
                            f4[i][3] == 0.0f;
            if (!ok && bad++ == 0) {
                first = fmt::format("interior cell {} (global {}): {} want {}, {} copies want {}", i, g, v[i], want,
                                    copies[i], count);
            }
        }
        if (bad) errors[static_cast<std::size_t>(w.rank())] = fmt::format("{} cells differ, first {}", bad, first);
    });
    for (int r = 0; r < n; ++r) EXPECT_EQ(errors[static_cast<std::size_t>(r)], "") << "rank " << r;
}

// The reference transport, counting how the halo calls it.
class CountingTransport final : public transport::BlockTransport {
public:
    explicit CountingTransport(std::unique_ptr<transport::BlockTransport> inner) : inner_(std::move(inner)) {}
    std::string name() const override { return inner_->name(); }
    transport::MemorySpace memorySpace() const override { return inner_->memorySpace(); }
    void exchangeBlocks(std::span<const transport::BlockExchange> blocks, transport::StreamHandle s) override {
        batchSizes.push_back(static_cast<int>(blocks.size()));
        inner_->exchangeBlocks(blocks, s);
    }

    std::vector<int> batchSizes;  // blocks per exchangeBlocks call

private:
    std::unique_ptr<transport::BlockTransport> inner_;
};

// gather moves independent pulses together: a faces-only plan in one
// exchangeBlocks call, a plan with corners one call per dimension (the later
// dimensions forward the earlier ones' halos). The calls are the same on
// every rank, also beside non-periodic edges, where a rank has received
// nothing to forward (transports such as ipc pair the ranks' calls one for
// one). scatterAdd stays pulse by pulse.
TEST(GridHaloBatches, GatherMovesIndependentPulsesInOneCall) {
    const std::array<bool, 3> P{true, true, true};
    const std::array<bool, 3> open{false, false, false};
    const std::vector<GridCase> grids{
        {"d2_corners", {11, 7, 1}, {3, 2, 1}, 1, P},
        {"d2_faces", {11, 7, 1}, {3, 2, 1}, 1, P, {2, 1, 0}, false},
        {"d3_corners", {7, 6, 5}, {2, 2, 2}, 1, P},
        {"d3_faces", {7, 6, 5}, {2, 2, 2}, 1, P, {2, 1, 0}, false},
        {"d2_corners_open", {11, 7, 1}, {3, 2, 1}, 1, open},
        {"d3_corners_open", {7, 6, 5}, {2, 2, 2}, 1, {false, true, false}},
        {"d2_faces_open", {11, 7, 1}, {3, 2, 1}, 1, open, {2, 1, 0}, false},
    };
    const std::vector<std::vector<int>> wantBatches{{2, 2}, {4}, {2, 2, 2}, {6}, {2, 2}, {2, 2, 2}, {4}};
    for (std::size_t g = 0; g < grids.size(); ++g) {
        SCOPED_TRACE(grids[g].name);
        const plan::GridSpec spec = specOf(grids[g]);
        const int n = spec.grid.size();
        std::vector<std::vector<int>> batches(static_cast<std::size_t>(n));
        std::vector<int> singles(static_cast<std::size_t>(n));
        runtime::runInProcess(n, [&](runtime::World& w) {
            const plan::GridHaloPlan p = plan::buildGridPlan(spec, w.rank());
            transport::TransportOptions host;
            host.memorySpace = transport::MemorySpace::Host;
            CountingTransport t(makeTransport(Backend::Reference, w, host));
            GridHalo halo(t, p);
            std::vector<double> u(static_cast<std::size_t>(p.numLocal()), 1.0);
            halo.gather(u.data());
            batches[static_cast<std::size_t>(w.rank())] = t.batchSizes;
            const std::size_t gatherCalls = t.batchSizes.size();
            halo.scatterAdd(u.data());
            // scatterAdd's calls, each of one block.
            int& single = singles[static_cast<std::size_t>(w.rank())];
            for (std::size_t c = gatherCalls; c < t.batchSizes.size(); ++c) single += t.batchSizes[c] == 1 ? 1 : 1000;
        });
        for (int r = 0; r < n; ++r) {
            EXPECT_EQ(batches[static_cast<std::size_t>(r)], wantBatches[g]) << "rank " << r;
            const int pulses = std::accumulate(wantBatches[g].begin(), wantBatches[g].end(), 0);
            EXPECT_EQ(singles[static_cast<std::size_t>(r)], pulses) << "rank " << r;
        }
    }
}

// exchangeBlocksInPlace's default (every transport without a landing
// buffer of its own): exchangeBlocks, with landed = recv. A rank may call
// either while its peers call the other. The host transports move the
// blocks in one World::sendRecvMany.
TEST(GridHaloBatches, ExchangeBlocksInPlaceDefaultsToDeliveringIntoRecv) {
    for (const Backend backend : {Backend::Reference, Backend::Staged}) {
        SCOPED_TRACE(std::string(toString(backend)));
        constexpr int n = 3;
        std::vector<std::string> problems(n);
        runtime::runInProcess(n, [&](runtime::World& w) {
            transport::TransportOptions host;
            host.memorySpace = transport::MemorySpace::Host;
            auto t = makeTransport(backend, w, host);
            const int me = w.rank(), up = (me + 1) % n, down = (me + n - 1) % n;
            std::string& problem = problems[static_cast<std::size_t>(me)];
            for (int call = 0; call < 3; ++call) {
                const std::array<double, 2> toUp{me + 0.5, call + 0.25};
                const std::array<std::int32_t, 3> toDown{me, call, 7};
                std::array<double, 2> fromDown{};
                std::array<std::int32_t, 3> fromUp{};
                const std::array<transport::BlockExchange, 3> blocks{{
                    {toUp.data(), sizeof(toUp), up, fromDown.data(), sizeof(fromDown), down},
                    {nullptr, 0, -1, nullptr, 0, -1},
                    {toDown.data(), sizeof(toDown), down, fromUp.data(), sizeof(fromUp), up},
                }};
                if ((me + call) % 2 == 0) {
                    std::array<const void*, 3> landed{};
                    t->exchangeBlocksInPlace(blocks, landed, nullptr);
                    for (std::size_t b = 0; b < blocks.size(); ++b) {
                        if (landed[b] != blocks[b].recv)
                            problem += fmt::format("call {}: block {} landed apart; ", call, b);
                    }
                } else {
                    t->exchangeBlocks(blocks, nullptr);
                }
                if (fromDown != std::array<double, 2>{down + 0.5, call + 0.25}) problem += "fromDown; ";
                if (fromUp != std::array<std::int32_t, 3>{up, call, 7}) problem += "fromUp; ";
            }
        });
        for (int r = 0; r < n; ++r) EXPECT_EQ(problems[static_cast<std::size_t>(r)], "") << "rank " << r;
    }
}

INSTANTIATE_TEST_SUITE_P(Grids, GridHaloCase, ::testing::ValuesIn(gridCases()),
                         [](const ::testing::TestParamInfo<GridCase>& i) { return i.param.name; });

}  // namespace
