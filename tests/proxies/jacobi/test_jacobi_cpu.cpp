// The host Jacobi: the distributed iteration (the `cpu` transport, which walks
// the same lines as the GPU kernels) gives the single-domain reference's bits
// on every grid; the check catches a single wrong cell; the initial field is
// what the boundary condition says.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <ostream>
#include <string>
#include <vector>

#include "core/jacobi_check.hpp"
#include "core/jacobi_cpu.hpp"
#include "core/jacobi_faces.hpp"
#include "core/jacobi_field.hpp"
#include "core/jacobi_problem.hpp"
#include "core/jacobi_report.hpp"
#include "haloex/runtime/world.hpp"

namespace haloex::jacobi {
namespace {

ProblemSpec problem(int nx, int ny, int px, int py, Boundary b, int niter) {
    ProblemSpec s;
    s.nx = nx;
    s.ny = ny;
    s.px = px;
    s.py = py;
    s.boundary = b;
    s.niter = niter;
    validate(s, px * py);
    return s;
}

struct CpuCase {
    int nx, ny, px, py;
    Boundary boundary;
};

void PrintTo(const CpuCase& c, std::ostream* os) {
    *os << c.nx << "x" << c.ny << "_grid" << c.px << "x" << c.py
        << (c.boundary == Boundary::Periodic ? "_periodic" : "_fixed");
}

class JacobiCpu : public ::testing::TestWithParam<CpuCase> {};

TEST_P(JacobiCpu, DistributedEqualsTheReferenceBitwise) {
    const CpuCase c = GetParam();
    const ProblemSpec spec = problem(c.nx, c.ny, c.px, c.py, c.boundary, 13);
    const FieldResult reference = cpuReference(spec, spec.niter);
    std::mutex mutex;
    std::vector<RunResult> results;
    runtime::runInProcess(spec.ranks(), [&](runtime::World& world) {
        const stencil::LocalStencil s = buildLocalStencil(plan::buildGridPlan(gridSpec(spec), world.rank()));
        const FieldResult mine = cpuDistributed(spec, s, world, spec.niter);
        const std::vector<double> expected = globalBlock(reference.interior, spec.nx, s.originX, s.originY, s.nx, s.ny);
        const FieldComparison cmp = compareFields(mine.interior.data(), expected.data(), expected.size());
        EXPECT_TRUE(cmp.bitwiseEqual()) << "rank " << world.rank() << ": " << cmp.mismatches << " cells differ";
        // The same verdict through the run check (gathered on rank 0).
        Reference ref;
        ref.kind = "test";
        if (world.rank() == 0) {
            ref.interior = reference.interior;
            ref.normSquared = reference.normSquared;
        }
        RunResult r;
        checkAgainstReference(r, spec, s, world, mine.interior, mine.normSquared, ref);
        std::lock_guard<std::mutex> lock(mutex);
        results.push_back(r);
    });
    ASSERT_EQ(results.size(), static_cast<std::size_t>(spec.ranks()));
    for (const RunResult& r : results) {
        EXPECT_EQ(r.status, RunStatus::Passed) << r.reason;
        EXPECT_EQ(r.mismatches, 0);
        EXPECT_LE(r.normRelativeError, 1e-12);  // the same sum in another order
        EXPECT_GT(r.norm, 0.0);
    }
}

INSTANTIATE_TEST_SUITE_P(
    Grids, JacobiCpu,
    ::testing::Values(CpuCase{24, 18, 1, 1, Boundary::Periodic}, CpuCase{24, 18, 1, 1, Boundary::Fixed},
                      CpuCase{24, 18, 1, 3, Boundary::Periodic}, CpuCase{24, 18, 1, 3, Boundary::Fixed},
                      CpuCase{24, 18, 3, 1, Boundary::Periodic}, CpuCase{24, 18, 2, 2, Boundary::Fixed},
                      CpuCase{24, 18, 2, 2, Boundary::Periodic}, CpuCase{24, 18, 4, 3, Boundary::Fixed},
                      CpuCase{2, 3, 2, 3, Boundary::Periodic}, CpuCase{4, 2, 2, 2, Boundary::Fixed}));

TEST(JacobiCheck, OneWrongCellFailsTheRunAndIsLocated) {
    const ProblemSpec spec = problem(16, 12, 2, 2, Boundary::Periodic, 5);
    const FieldResult reference = cpuReference(spec, spec.niter);
    std::mutex mutex;
    std::vector<RunResult> results;
    runtime::runInProcess(4, [&](runtime::World& world) {
        const stencil::LocalStencil s = buildLocalStencil(plan::buildGridPlan(gridSpec(spec), world.rank()));
        FieldResult mine = cpuDistributed(spec, s, world, spec.niter);
        if (world.rank() == 3) mine.interior[5] = std::nextafter(mine.interior[5], 2.0);  // one ulp off
        Reference ref;
        if (world.rank() == 0) {
            ref.interior = reference.interior;
            ref.normSquared = reference.normSquared;
        }
        ref.kind = "test";
        RunResult r;
        checkAgainstReference(r, spec, s, world, mine.interior, mine.normSquared, ref);
        std::lock_guard<std::mutex> lock(mutex);
        results.push_back(r);
    });
    for (const RunResult& r : results) {
        EXPECT_EQ(r.status, RunStatus::Failed);
        EXPECT_EQ(r.mismatches, 1);
        EXPECT_GT(r.maxAbsError, 0.0);
        EXPECT_LT(r.maxAbsError, 1e-15);
        // Rank 3 of a 2x2 grid holds cells from (8, 6); its interior cell 5 is (13, 6).
        EXPECT_NE(r.reason.find("first at global cell (13, 6) on rank 3"), std::string::npos) << r.reason;
    }
}

TEST(JacobiCheck, ANormOutsideTheToleranceFailsTheRun) {
    const ProblemSpec spec = problem(8, 8, 1, 1, Boundary::Fixed, 3);
    const FieldResult reference = cpuReference(spec, spec.niter);
    runtime::runInProcess(1, [&](runtime::World& world) {
        const stencil::LocalStencil s = buildLocalStencil(plan::buildGridPlan(gridSpec(spec), 0));
        Reference ref;
        ref.interior = reference.interior;
        ref.normSquared = reference.normSquared;
        RunResult r;
        checkAgainstReference(r, spec, s, world, reference.interior, reference.normSquared * (1 + 1e-5), ref);
        EXPECT_EQ(r.status, RunStatus::Failed);
        EXPECT_NE(r.reason.find("residual norm"), std::string::npos) << r.reason;
    });
}

TEST(JacobiField, BoundaryConditionsOfTheInitialField) {
    const long long nx = 7, ny = 5;
    for (long long j = 0; j < ny; ++j) {
        for (long long i = 0; i < nx; ++i) {
            const double v = initialValue(i, j, nx, ny, true);
            EXPECT_GE(v, 0.0);
            EXPECT_LT(v, 1.0);
            EXPECT_EQ(v, initialValue(i, j, nx, ny, false));  // interior does not depend on the boundary
        }
    }
    for (long long j = 0; j < ny; ++j) {
        EXPECT_EQ(initialValue(-1, j, nx, ny, true), initialValue(nx - 1, j, nx, ny, true));
        EXPECT_EQ(initialValue(nx, j, nx, ny, true), initialValue(0, j, nx, ny, true));
        EXPECT_GE(initialValue(-1, j, nx, ny, false), 1.0);  // fixed boundary values
        EXPECT_GE(initialValue(nx, j, nx, ny, false), 1.0);
    }
    for (long long i = 0; i < nx; ++i) {
        EXPECT_EQ(initialValue(i, -1, nx, ny, true), initialValue(i, ny - 1, nx, ny, true));
        EXPECT_GE(initialValue(i, ny, nx, ny, false), 1.0);
    }
    // Different cells, different values (a misplaced halo cell shows).
    EXPECT_NE(initialValue(1, 2, nx, ny, true), initialValue(2, 1, nx, ny, true));
}

TEST(JacobiField, ComparisonIsBitwise) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const std::vector<double> expected{1.0, 0.0, 2.0, 3.0};
    const std::vector<double> got{1.0, -0.0, nan, 3.0};
    const FieldComparison c = compareFields(got.data(), expected.data(), got.size());
    EXPECT_EQ(c.mismatches, 2);  // -0.0 differs from 0.0 in its bits; NaN differs from everything
    EXPECT_EQ(c.firstMismatch, 1);
    EXPECT_TRUE(std::isinf(c.maxAbsError));
}

TEST(JacobiReport, MedianAndSpread) {
    const Spread odd = summarize({5.0, 1.0, 3.0});
    EXPECT_EQ(odd.median, 3.0);
    EXPECT_EQ(odd.min, 1.0);
    EXPECT_EQ(odd.max, 5.0);
    EXPECT_EQ(summarize({4.0, 1.0, 2.0, 3.0}).median, 2.5);
    RunResult r;
    r.ranks = 2;
    r.usPerIteration.median = 10.0;
    r.singleUsPerIteration = 16.0;
    computeScaling(r);
    EXPECT_DOUBLE_EQ(r.speedup, 1.6);
    EXPECT_DOUBLE_EQ(r.efficiency, 0.8);
    // CSV lines have as many fields as the header.
    const auto fields = [](const std::string& s) { return std::count(s.begin(), s.end(), ',') + 1; };
    EXPECT_EQ(fields(csvLine(r)), fields(csvHeader()));
}

}  // namespace
}  // namespace haloex::jacobi
