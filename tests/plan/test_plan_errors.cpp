// Bad input is refused with a specific message that says what, where and
// what to do; atoms outside the box are wrapped, not refused.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "haloex/core/error.hpp"
#include "haloex/plan/decomposition.hpp"
#include "haloex/plan/grid_plan.hpp"
#include "haloex/plan/particle_plan.hpp"
#include "haloex/runtime/plan_exchange.hpp"
#include "haloex/runtime/world.hpp"

namespace haloex::testing {
namespace {

using plan::DecompositionSpec;
using plan::RankGrid;

// Runs `f`, which must throw haloex::Error of `kind` whose message contains
// every one of `parts`.
void expectError(const std::function<void()>& f, ErrorKind kind, const std::vector<std::string>& parts) {
    try {
        f();
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), kind) << "message: " << e.what();
        const std::string message = e.what();
        for (const auto& part : parts) {
            EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' is missing from: " << message;
        }
        return;
    }
    ADD_FAILURE() << "no haloex::Error was thrown";
}

DecompositionSpec spec(Vec3d box, plan::Int3 grid, double rc, double rlist) {
    DecompositionSpec s;
    s.box.length = box;
    s.grid = RankGrid(grid);
    s.rc = rc;
    s.rlist = rlist;
    return s;
}

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(PlanErrors, DecomposedDimensionNeedingAsManyPulsesAsRanks) {
    // Two cells of 1 nm along x and rlist = 1.2 nm: two pulses for two ranks.
    expectError(
        [] {
            plan::Decomposition(spec({2.0, 3.0, 3.0}, {2, 1, 1}, 0.9, 1.2));
        },
        ErrorKind::Plan,
        {"dimension x", "cells are 1 nm wide", "rlist = 1.2 nm", "needs 2 pulse(s)", "2 rank(s) along x",
         "use fewer ranks along x or a smaller rlist"});
    // Along z: four cells of 0.5 nm, rlist 2.0 nm needs 4 pulses.
    expectError(
        [] {
            plan::Decomposition(spec({4.5, 4.5, 2.0}, {1, 1, 4}, 0.9, 2.0));
        },
        ErrorKind::Plan,
        {"dimension z", "cells are 0.5 nm wide", "rlist = 2 nm", "needs 4 pulse(s)", "4 rank(s) along z"});
    // One pulse fewer than ranks is accepted.
    EXPECT_NO_THROW(plan::Decomposition(spec({2.0, 4.5, 4.5}, {4, 1, 1}, 0.9, 1.4)));
}

TEST(PlanErrors, UndecomposedDimensionShorterThanTwiceRlist) {
    expectError(
        [] {
            plan::Decomposition(spec({4.0, 1.9, 3.0}, {2, 1, 1}, 0.9, 1.0));
        },
        ErrorKind::Plan, {"dimension y is not decomposed", "box length 1.9 nm", "2 x rlist = 2 nm"});
    // Exactly 2 rlist is still too short: an atom would see two images.
    expectError(
        [] {
            plan::Decomposition(spec({4.0, 4.0, 2.0}, {2, 2, 1}, 0.9, 1.0));
        },
        ErrorKind::Plan, {"dimension z is not decomposed"});
}

TEST(PlanErrors, DecomposedDimensionNotLongerThanTwiceRc) {
    expectError(
        [] {
            plan::Decomposition(spec({1.6, 3.0, 3.0}, {2, 1, 1}, 0.8, 0.8));
        },
        ErrorKind::Plan, {"box length along x (1.6 nm)", "2 x rc = 1.6 nm"});
}

TEST(PlanErrors, NonPositiveOrNonFiniteBox) {
    expectError(
        [] {
            plan::Decomposition(spec({0.0, 3.0, 3.0}, {1, 1, 1}, 0.9, 1.0));
        },
        ErrorKind::InvalidInput, {"box length along x is 0 nm", "positive, finite"});
    expectError(
        [] {
            plan::Decomposition(spec({3.0, -2.0, 3.0}, {1, 1, 1}, 0.9, 1.0));
        },
        ErrorKind::InvalidInput, {"box length along y is -2 nm"});
    expectError(
        [] {
            plan::Decomposition(spec({3.0, 3.0, kNaN}, {1, 1, 1}, 0.9, 1.0));
        },
        ErrorKind::InvalidInput, {"box length along z is nan nm"});
    expectError([] { plan::Box{{3.0, kInf, 3.0}}.validate(); }, ErrorKind::InvalidInput, {"along y is inf nm"});
}

TEST(PlanErrors, NonPositiveCutoffs) {
    expectError(
        [] {
            plan::Decomposition(spec({3.0, 3.0, 3.0}, {1, 1, 1}, 0.0, 1.0));
        },
        ErrorKind::InvalidInput, {"cutoff rc = 0 nm", "positive, finite"});
    expectError(
        [] {
            plan::Decomposition(spec({3.0, 3.0, 3.0}, {1, 1, 1}, -0.9, 1.0));
        },
        ErrorKind::InvalidInput, {"cutoff rc = -0.9 nm"});
    expectError(
        [] {
            plan::Decomposition(spec({3.0, 3.0, 3.0}, {1, 1, 1}, 0.9, -1.0));
        },
        ErrorKind::InvalidInput, {"pair-list cutoff rlist = -1 nm"});
    expectError(
        [] {
            plan::Decomposition(spec({3.0, 3.0, 3.0}, {1, 1, 1}, kNaN, 1.0));
        },
        ErrorKind::InvalidInput, {"cutoff rc = nan nm"});
}

TEST(PlanErrors, RlistBelowRc) {
    expectError(
        [] {
            plan::Decomposition(spec({3.0, 3.0, 3.0}, {1, 1, 1}, 0.9, 0.8));
        },
        ErrorKind::InvalidInput, {"rlist = 0.8 nm is below the interaction cutoff rc = 0.9 nm", "rlist must be >= rc"});
}

TEST(PlanErrors, PulseOrderThatIsNotAPermutation) {
    auto s = spec({4.0, 4.0, 4.0}, {2, 2, 2}, 0.9, 1.0);
    s.dimOrder = {0, 0, 1};
    expectError([&] { plan::Decomposition{s}; }, ErrorKind::InvalidInput, {"pulse order 0,0,1 is not a permutation"});
    s.dimOrder = {2, 1, 3};
    expectError([&] { plan::Decomposition{s}; }, ErrorKind::InvalidInput, {"pulse order 2,1,3"});
}

TEST(PlanErrors, NonFiniteCoordinatesNameTheAtom) {
    const plan::Box box{{3.0, 3.0, 3.0}};
    std::vector<Vec3d> x{{0.1, 0.2, 0.3}, {1.0, 1.0, 1.0}, {2.0, 2.0, 2.0}, {1.0, kNaN, 1.0}};
    expectError([&] { plan::wrapPositions(x, box); }, ErrorKind::InvalidInput,
                {"atom 3 has a non-finite coordinate", "nan"});
    x[3] = {1.0, 1.0, 1.0};
    x[1] = {-kInf, 1.0, 1.0};
    expectError([&] { plan::wrapPositions(x, box); }, ErrorKind::InvalidInput, {"atom 1 has a non-finite", "-inf"});

    const plan::Decomposition dd(spec({4.0, 4.0, 4.0}, {2, 2, 2}, 0.9, 1.0));
    std::vector<Vec3d> y{{0.1, 0.2, 0.3}, {1.0, 1.0, 1.0}, {2.0, 2.0, 2.0},
                         {1.0, 1.0, 1.0}, {1.0, 1.0, 1.0}, {kInf, 1.0, 1.0}};
    expectError([&] { plan::partitionAtoms(dd, y); }, ErrorKind::InvalidInput, {"atom 5 has a non-finite coordinate"});
    expectError(
        [] {
            plan::wrapIntoBox({kNaN, 0.0, 0.0}, plan::Box{{3.0, 3.0, 3.0}}, "atom 42");
        },
        ErrorKind::InvalidInput, {"atom 42 has a non-finite coordinate"});
}

TEST(PlanErrors, PartitionRefusesUnwrappedAtomsNamingThem) {
    const plan::Decomposition dd(spec({4.0, 4.0, 4.0}, {2, 2, 2}, 0.9, 1.0));
    std::vector<Vec3d> y{{0.1, 0.2, 0.3}, {1.0, 1.0, 1.0}, {4.0, 1.0, 1.0}};
    expectError([&] { plan::partitionAtoms(dd, y); }, ErrorKind::InvalidInput,
                {"atom 2 at (4, 1, 1) nm lies outside the box", "wrapPositions"});
    y[2] = {1.0, -0.25, 1.0};
    expectError([&] { plan::partitionAtoms(dd, y); }, ErrorKind::InvalidInput, {"atom 2 at (1, -0.25, 1) nm"});
}

TEST(PlanErrors, AtomsOutsideTheBoxAreWrappedNotRefused) {
    const plan::Decomposition dd(spec({4.0, 4.0, 4.0}, {2, 2, 2}, 0.9, 1.0));
    std::vector<Vec3d> x{{-0.5, 4.5, 9.0}, {-1e-300, 3.0, -4.0}, {8.0, -12.0, 3.999999}, {-4.0, 0.0, 7.75}};
    ASSERT_NO_THROW(plan::wrapPositions(x, dd.box()));
    EXPECT_EQ(x[0], (Vec3d{3.5, 0.5, 1.0}));
    EXPECT_EQ(x[1].x, 0.0);  // a tiny negative coordinate must not wrap to L itself
    EXPECT_EQ(x[1].y, 3.0);
    EXPECT_EQ(x[1].z, 0.0);
    EXPECT_EQ(x[2].x, 0.0);
    EXPECT_EQ(x[2].y, 0.0);
    EXPECT_DOUBLE_EQ(x[2].z, 3.999999);
    EXPECT_EQ(x[3], (Vec3d{0.0, 0.0, 3.75}));
    for (const auto& p : x) {
        for (int d = 0; d < 3; ++d) {
            EXPECT_GE(p[d], 0.0);
            EXPECT_LT(p[d], 4.0);
        }
    }
    const auto byRank = plan::partitionAtoms(dd, x);
    std::size_t total = 0;
    for (const auto& ids : byRank) total += ids.size();
    EXPECT_EQ(total, x.size());
    EXPECT_EQ(byRank[dd.grid().rankOf({1, 0, 0})], (std::vector<int>{0}));
}

TEST(PlanErrors, HomeAtomOutsideItsRanksCell) {
    const plan::Decomposition dd(spec({4.0, 4.0, 4.0}, {2, 1, 1}, 0.9, 1.0));
    const std::vector<Vec3d> home{{0.5, 1.0, 1.0}, {3.0, 1.0, 1.0}};
    expectError([&] { plan::ParticlePlanBuilder(dd, 0, home); }, ErrorKind::InvalidInput,
                {"home atom 1 of rank 0", "outside the rank's cell", "partitionAtoms"});
    expectError([&] { plan::ParticlePlanBuilder(dd, 2, {}); }, ErrorKind::InvalidInput,
                {"rank 2 is outside the rank grid 2x1x1"});
    expectError([&] { plan::ParticlePlanBuilder(dd, 0, {}, 0); }, ErrorKind::InvalidInput,
                {"receive alignment 0 must be at least 1"});
}

TEST(PlanErrors, GridThatDoesNotMatchTheRankCount) {
    expectError(
        [] {
            plan::requireGridMatchesRanks(RankGrid({2, 2, 1}), 3);
        },
        ErrorKind::InvalidInput, {"rank grid 2x2x1 has 4 ranks but the job has 3", "launch 4 ranks"});
    EXPECT_NO_THROW(plan::requireGridMatchesRanks(RankGrid({2, 2, 1}), 4));
    const plan::Decomposition dd(spec({4.0, 4.0, 4.0}, {2, 2, 1}, 0.9, 1.0));
    expectError([&] { plan::buildParticlePlansInProcess(dd, std::vector<std::vector<Vec3d>>(3)); },
                ErrorKind::InvalidInput, {"has 4 ranks but the job has 3"});
    // Over a world of the wrong size: every rank refuses, none hangs.
    expectError([&] { runtime::runInProcess(2, [&](runtime::World& w) { runtime::buildParticlePlan(dd, {}, w); }); },
                ErrorKind::InvalidInput, {"rank grid 2x2x1 has 4 ranks but the job has 2"});
}

TEST(PlanErrors, MalformedGridText) {
    expectError([] { plan::parseRankGrid(""); }, ErrorKind::InvalidInput, {"cannot read rank grid ''", "it is empty"});
    expectError([] { plan::parseRankGrid("2x"); }, ErrorKind::InvalidInput,
                {"cannot read rank grid '2x'", "expected a whole number", "NXxNYxNZ"});
    expectError([] { plan::parseRankGrid("2x0x1"); }, ErrorKind::InvalidInput,
                {"'2x0x1'", "every dimension needs at least one rank"});
    expectError([] { plan::parseRankGrid("1x1x1x1"); }, ErrorKind::InvalidInput, {"more than three dimensions"});
    expectError([] { plan::parseRankGrid("abc"); }, ErrorKind::InvalidInput, {"'abc'", "expected a whole number"});
    expectError([] { plan::parseRankGrid("2.5x1"); }, ErrorKind::InvalidInput, {"'2.5x1'"});
    expectError([] { plan::parseRankGrid("2x-1"); }, ErrorKind::InvalidInput, {"'2x-1'"});
    // A product beyond int wrapped (65536 x 65536 = 2^32 became "0 ranks").
    expectError([] { plan::parseRankGrid("65536x65536x1"); }, ErrorKind::InvalidInput,
                {"rank grid 65536x65536x1 has 4294967296 ranks, more than the 2147483647"});
    expectError([] { plan::RankGrid({2147483647, 2, 1}); }, ErrorKind::InvalidInput, {"has 4294967294 ranks"});
    expectError([] { plan::parseRankGrid(" 2x2"); }, ErrorKind::InvalidInput, {"' 2x2'"});
    expectError(
        [] {
            RankGrid({0, 1, 1});
        },
        ErrorKind::InvalidInput, {"rank grid 0x1x1", "every dimension needs at least one rank"});
    EXPECT_EQ(plan::parseRankGrid("3X2").dims(), (plan::Int3{3, 2, 1}));
}

plan::GridSpec gridSpec(plan::Int3 cells, plan::Int3 ranks, int halo) {
    plan::GridSpec s;
    s.cells = cells;
    s.grid = RankGrid(ranks);
    s.haloWidth = halo;
    return s;
}

TEST(PlanErrors, GridHaloWiderThanABlock) {
    // Blocks of 2, 3, 2, 3 cells along x.
    expectError(
        [] {
            plan::buildGridPlan(gridSpec({10, 1, 1}, {4, 1, 1}, 3), 0);
        },
        ErrorKind::InvalidInput,
        {"halo width 3 along x is wider than the smallest block (2 cells of 10 over 4 ranks)",
         "fewer ranks along x or a narrower halo"});
    expectError(
        [] {
            plan::buildGridPlan(gridSpec({8, 5, 1}, {1, 2, 1}, 3), 1);
        },
        ErrorKind::InvalidInput, {"halo width 3 along y", "(2 cells of 5 over 2 ranks)"});
    EXPECT_NO_THROW(plan::buildGridPlan(gridSpec({10, 1, 1}, {4, 1, 1}, 2), 0));
    expectError(
        [] {
            plan::buildGridPlan(gridSpec({8, 3, 1}, {1, 4, 1}, 1), 0);
        },
        ErrorKind::InvalidInput, {"4 ranks along y but only 3 cells"});
    expectError(
        [] {
            plan::buildGridPlan(gridSpec({8, 8, 1}, {2, 2, 1}, 0), 0);
        },
        ErrorKind::InvalidInput, {"halo width 0 must be at least 1 cell"});
    expectError(
        [] {
            plan::buildGridPlan(gridSpec({8, 0, 1}, {1, 1, 1}, 1), 0);
        },
        ErrorKind::InvalidInput, {"grid has 0 cells along y"});
    expectError(
        [] {
            plan::buildGridPlan(gridSpec({8, 8, 1}, {2, 2, 1}, 1), 4);
        },
        ErrorKind::InvalidInput, {"rank 4 is outside the rank grid 2x2x1"});
}

TEST(PlanErrors, ChooseRankGridExplainsWhenNothingFits) {
    expectError(
        [] {
            plan::chooseRankGrid(7, plan::Box{{1.5, 1.5, 1.5}}, 0.9, 1.0);
        },
        ErrorKind::Plan,
        {"no rank grid of 7 rank(s) fits this box and rlist = 1 nm", "use fewer ranks or a larger system"});
    // One rank has no other grid: no advice to use fewer; lengths rounded to
    // what they mean (rlist was printed as 1.9000000000000001).
    const double length = 3.107232505953859, rlist = 1.9000000000000001;
    const std::string message = [&] {
        try {
            plan::chooseRankGrid(1, plan::Box{{length, length, length}}, 0.9, rlist);
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string();
    }();
    EXPECT_NE(message.find("no rank grid of 1 rank(s) fits this box and rlist = 1.9 nm"), std::string::npos) << message;
    EXPECT_NE(message.find("box length 3.107 nm is not longer than 2 x rlist = 3.8 nm"), std::string::npos) << message;
    EXPECT_NE(message.find("use a larger system"), std::string::npos) << message;
    EXPECT_EQ(message.find("fewer ranks"), std::string::npos) << message;
    EXPECT_EQ(message.find("0000000"), std::string::npos) << message;
    expectError(
        [] {
            plan::chooseRankGrid(0, plan::Box{{2.5, 2.5, 2.5}}, 0.9, 1.0);
        },
        ErrorKind::InvalidInput, {"cannot decompose over 0 ranks"});
}

}  // namespace
}  // namespace haloex::testing
