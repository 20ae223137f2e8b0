// haloex-jacobi's input checks and process-grid choice: bad input is refused
// with a message that names the problem and the fix.
#include <gtest/gtest.h>

#include <string>

#include "core/jacobi_problem.hpp"
#include "haloex/core/error.hpp"

namespace haloex::jacobi {
namespace {

ProblemSpec spec(int nx, int ny, int px, int py, int niter = 10) {
    ProblemSpec s;
    s.nx = nx;
    s.ny = ny;
    s.px = px;
    s.py = py;
    s.niter = niter;
    return s;
}

// The InvalidInput message of validate(), or "" if it passes.
std::string validationError(const ProblemSpec& s, int worldSize) {
    try {
        validate(s, worldSize);
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::InvalidInput) << e.what();
        return e.what();
    }
    return {};
}

TEST(JacobiProblem, AcceptsDivisibleSizes) {
    EXPECT_EQ(validationError(spec(64, 48, 1, 4), 4), "");
    EXPECT_EQ(validationError(spec(64, 48, 2, 2), 4), "");
    EXPECT_EQ(validationError(spec(2, 2, 2, 1), 2), "");  // one-cell blocks are fine
}

TEST(JacobiProblem, RefusesSizesNotDivisibleByTheRanks) {
    const std::string m = validationError(spec(100, 64, 3, 1), 3);
    EXPECT_NE(m.find("--nx 100 is not divisible by the 3 ranks along x"), std::string::npos) << m;
    EXPECT_NE(m.find("99 or 102"), std::string::npos) << m;
    const std::string my = validationError(spec(64, 50, 1, 4), 4);
    EXPECT_NE(my.find("--ny 50 is not divisible by the 4 ranks along y"), std::string::npos) << my;
}

TEST(JacobiProblem, RefusesMoreRanksThanCells) {
    const std::string m = validationError(spec(8, 2, 1, 3), 3);
    EXPECT_NE(m.find("too many ranks for the grid: 3 ranks along y but only 2 rows"), std::string::npos) << m;
    const std::string mx = validationError(spec(4, 64, 8, 1), 8);
    EXPECT_NE(mx.find("8 ranks along x but only 4 columns"), std::string::npos) << mx;
}

TEST(JacobiProblem, RefusesZeroIterationsAndTinyGrids) {
    EXPECT_NE(validationError(spec(64, 64, 1, 1, 0), 1).find("--niter 0"), std::string::npos);
    EXPECT_NE(validationError(spec(64, 64, 1, 1, -3), 1).find("--niter -3"), std::string::npos);
    EXPECT_NE(validationError(spec(1, 64, 1, 1), 1).find("--nx 1"), std::string::npos);
    EXPECT_NE(validationError(spec(64, 0, 1, 1), 1).find("--ny 0"), std::string::npos);
    ProblemSpec s = spec(64, 64, 1, 1);
    s.nccheck = -1;
    EXPECT_NE(validationError(s, 1).find("--nccheck -1"), std::string::npos);
}

TEST(JacobiProblem, RefusesAGridThatDoesNotMatchTheJob) {
    const std::string m = validationError(spec(64, 64, 2, 2), 3);
    EXPECT_NE(m.find("process grid 2x2 has 4 ranks but the job has 3"), std::string::npos) << m;
}

TEST(JacobiProblem, RefusesBlocksBeyond32BitIndices) {
    const std::string m = validationError(spec(65536, 65536, 1, 1), 1);
    EXPECT_NE(m.find("exceeds 2^31 cells"), std::string::npos) << m;
    EXPECT_EQ(validationError(spec(65536, 65536, 2, 2), 4), "");
}

TEST(JacobiProblem, ProcessGrids) {
    ProblemSpec s = spec(1024, 16, 0, 0);
    chooseProcessGrid(s, "row", 4);
    EXPECT_EQ(s.gridString(), "1x4");
    chooseProcessGrid(s, "2d", 4);  // 256 + 16 beats 512 + 8 and 1024 + 4
    EXPECT_EQ(s.gridString(), "4x1");
    s.nx = 64;
    s.ny = 48;
    chooseProcessGrid(s, "2d", 4);
    EXPECT_EQ(s.gridString(), "2x2");
    chooseProcessGrid(s, "3x2", 6);
    EXPECT_EQ(s.px, 3);
    EXPECT_EQ(s.py, 2);
    EXPECT_THROW(chooseProcessGrid(s, "2x2x2", 8), Error);
    EXPECT_THROW(chooseProcessGrid(s, "banana", 4), Error);
    s.nx = 7;
    s.ny = 7;
    try {
        chooseProcessGrid(s, "2d", 4);
        ADD_FAILURE() << "7 x 7 cells cannot be split over 4 ranks evenly";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("no grid of 4 ranks divides the 7 x 7 cells"), std::string::npos);
    }
}

TEST(JacobiProblem, GridSpecFollowsTheBoundary) {
    ProblemSpec s = spec(64, 48, 2, 2);
    s.boundary = Boundary::Fixed;
    plan::GridSpec g = gridSpec(s);
    EXPECT_FALSE(g.periodic[0]);
    EXPECT_FALSE(g.periodic[1]);
    EXPECT_EQ(g.haloWidth, 1);
    EXPECT_EQ(g.cells[2], 1);
    EXPECT_FALSE(g.edgesAndCorners) << "a 5-point stencil needs faces only";
    s.boundary = Boundary::Periodic;
    g = gridSpec(s);
    EXPECT_TRUE(g.periodic[0] && g.periodic[1]);
    EXPECT_EQ(parseBoundary("fixed"), Boundary::Fixed);
    EXPECT_THROW(parseBoundary("open"), Error);
}

}  // namespace
}  // namespace haloex::jacobi
