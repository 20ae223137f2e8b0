// Dynamic pair-list pruning's settings, without a GPU: the inner-radius
// estimate (verlet_buffer.hpp), how haloex-md resolves and refuses the
// pruning options, the summary's report of them, and the buffer check's
// split of the missed pairs into those the outer list lacks and those the
// pruned inner list dropped (buffer_check.hpp), against brute force.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <initializer_list>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "haloex/core/error.hpp"
#include "haloex/md/buffer_check.hpp"
#include "haloex/md/engine.hpp"
#include "haloex/md/report.hpp"
#include "haloex/md/system.hpp"
#include "haloex/md/verlet_buffer.hpp"

using namespace haloex;
using namespace haloex::md;

namespace {

constexpr double kDt = 0.002, kTemperature = 300.0, kTolerance = 0.005;

std::string errorOf(const std::function<void()>& f) {
    try {
        f();
    } catch (const haloex::Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::InvalidInput) << e.what();
        return e.what();
    }
    return "(no error)";
}

}  // namespace

TEST(PruningSettings, InnerRadiusGrowsWithTheIntervalAndStaysWithinRcAndRlist) {
    ForceField ff;
    const double rlist = chooseRlist(ff, kNumberDensity, kTemperature, 50, kDt, kTolerance).rlist;
    double previous = 0.0;
    for (int interval : {1, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 49}) {
        const BufferEstimate inner =
            chooseRlistInner(ff, kNumberDensity, kTemperature, interval, kDt, kTolerance, rlist);
        EXPECT_EQ(inner.nstlist, interval);
        EXPECT_GE(inner.rlist, ff.rc);
        EXPECT_LE(inner.rlist, rlist);
        EXPECT_GE(inner.rlist, previous) << "interval " << interval;
        if (inner.rlist < rlist) {
            EXPECT_LE(inner.estimatedDrift, kTolerance) << "interval " << interval;
        }
        EXPECT_DOUBLE_EQ(inner.estimatedDrift,
                         estimatePruneDrift(ff, kNumberDensity, kTemperature, inner.rlist, interval, kDt));
        previous = inner.rlist;
    }
    // An inner list living nstlist - 1 steps is the outer list's model.
    EXPECT_DOUBLE_EQ(chooseRlistInner(ff, kNumberDensity, kTemperature, 49, kDt, kTolerance, 2.0).rlist, rlist);
    // Capped at rlist (interval 30 needs more than 0.91 nm).
    EXPECT_DOUBLE_EQ(chooseRlistInner(ff, kNumberDensity, kTemperature, 30, kDt, kTolerance, 0.91).rlist, 0.91);
    // A longer life never needs a smaller buffer.
    EXPECT_LE(estimatePruneDrift(ff, kNumberDensity, kTemperature, 0.92, 4, kDt),
              estimatePruneDrift(ff, kNumberDensity, kTemperature, 0.92, 8, kDt));
}

TEST(PruningSettings, ResolveOptionsPrunesOnGpusByDefaultOnly) {
    MdOptions o;
    const MdOptions gpu = resolveOptions(o, 1, true);
    EXPECT_EQ(gpu.pruneParts, kDefaultPruneParts);
    ForceField ff;
    EXPECT_DOUBLE_EQ(gpu.rlistInner, chooseRlistInner(ff, kNumberDensity, kTemperature, kDefaultPruneParts, kDt,
                                                      kTolerance * kPruneToleranceFraction, gpu.rlist)
                                         .rlist);
    EXPECT_GE(gpu.rlistInner, gpu.rc);
    EXPECT_LT(gpu.rlistInner, gpu.rlist);

    const MdOptions cpu = resolveOptions(o, 2, false);
    EXPECT_EQ(cpu.pruneParts, 0);
    EXPECT_EQ(cpu.rlistInner, 0.0);

    MdOptions off = o;
    off.pruneParts = 0;
    EXPECT_EQ(resolveOptions(off, 1, true).pruneParts, 0);
    EXPECT_EQ(resolveOptions(off, 1, true).rlistInner, 0.0);

    MdOptions given = o;
    given.pruneParts = 8;
    given.rlistInner = 0.95;
    EXPECT_EQ(resolveOptions(given, 1, true).pruneParts, 8);
    EXPECT_EQ(resolveOptions(given, 1, true).rlistInner, 0.95);

    // With a short outer life the inner list would be the outer one: auto
    // turns pruning off, an explicit request keeps it (at rlist).
    MdOptions shortLife = o;
    shortLife.nstlist = 5;
    EXPECT_EQ(resolveOptions(shortLife, 1, true).pruneParts, 0);
    shortLife.pruneParts = 4;
    const MdOptions kept = resolveOptions(shortLife, 1, true);
    EXPECT_EQ(kept.pruneParts, 4);
    EXPECT_EQ(kept.rlistInner, kept.rlist);
}

TEST(PruningSettings, ResolveOptionsRefusesBadPruningOptions) {
    MdOptions o;
    MdOptions cpu = o;
    cpu.pruneParts = 4;
    EXPECT_NE(errorOf([&] { resolveOptions(cpu, 2, false); }).find("--prune-parts 4: pair-list pruning is a GPU"),
              std::string::npos);
    MdOptions negative = o;
    negative.pruneParts = -3;
    EXPECT_NE(errorOf([&] { resolveOptions(negative, 1, true); }).find("--prune-parts -3"), std::string::npos);
    MdOptions small = o;
    small.rlistInner = 0.85;
    EXPECT_NE(errorOf([&] { resolveOptions(small, 1, true); }).find("--rlist-inner 0.85 nm must lie between --rc 0.9"),
              std::string::npos);
    MdOptions large = o;
    large.rlist = 1.0;
    large.rlistInner = 1.1;
    EXPECT_NE(errorOf([&] { resolveOptions(large, 1, true); }).find("--rlist-inner 1.1"), std::string::npos);
    MdOptions withoutParts = o;
    withoutParts.pruneParts = 0;
    withoutParts.rlistInner = 0.95;
    EXPECT_NE(errorOf([&] { resolveOptions(withoutParts, 1, true); }).find("without pruning"), std::string::npos);
}

TEST(PruningSettings, SummaryReportsThePruning) {
    RunSummary s;
    s.rlist = 0.985;
    s.rlistInner = 0.9;
    s.pruneParts = 4;
    s.estimatedPruneDrift = 0.0035;
    MdOptions o;
    std::ostringstream text;
    printPerformanceSummary(text, s, o);
    EXPECT_NE(text.str().find("rlist-inner 0.9 nm, each part re-pruned every 4 steps"), std::string::npos)
        << text.str();
    const std::string json = summaryToJson(s, o);
    EXPECT_NE(json.find("\"prune_parts\": 4"), std::string::npos) << json;
    EXPECT_NE(json.find("\"rlist_inner\": 0.9"), std::string::npos) << json;
    s.pruneParts = 0;
    s.onDevice = true;
    std::ostringstream off;
    printPerformanceSummary(off, s, o);
    EXPECT_NE(off.str().find("dynamic pruning: off"), std::string::npos) << off.str();
    // Pruning is a GPU-backend feature: a CPU run has nothing to say about it.
    s.onDevice = false;
    std::ostringstream cpu;
    printPerformanceSummary(cpu, s, o);
    EXPECT_EQ(cpu.str().find("dynamic pruning"), std::string::npos) << cpu.str();
}

// The two counts split the pairs within rc that the used list lacks: beyond
// rlist at the build (the outer list lacks them), or within rlist then but
// beyond rlistInner at the prune (the inner list dropped them).
TEST(PruningSettings, BufferCheckSplitsMissedPairsBetweenOuterAndInnerList) {
    ForceField ff;
    plan::Box box;
    box.length = {3.0, 3.0, 3.0};
    const int n = 1200;
    std::mt19937_64 rng(42);
    std::uniform_real_distribution<double> u(0.0, 3.0), step(-0.04, 0.04);
    std::vector<Vec3d> atBuild(n), atPrune(n), now(n);
    std::vector<double> q(n);
    for (int i = 0; i < n; ++i) {
        atBuild[i] = {u(rng), u(rng), u(rng)};
        atPrune[i] = atBuild[i] + Vec3d{step(rng), step(rng), step(rng)};
        now[i] = atPrune[i] + Vec3d{step(rng), step(rng), step(rng)};
        q[i] = i % 2 == 0 ? 0.1 : -0.1;
    }
    const double rlist = 0.95, inner = 0.92;
    const auto d2 = [&](const std::vector<Vec3d>& x, int i, int j) {
        double r2 = 0.0;
        for (int d = 0; d < 3; ++d) {
            double v = x[i][d] - x[j][d];
            v -= box.length[d] * std::round(v / box.length[d]);
            r2 += v * v;
        }
        return r2;
    };
    MissedPairs outerBrute, innerBrute;
    for (int i = 0; i < n; ++i) {
        for (int j = i + 1; j < n; ++j) {
            const double r2 = d2(now, i, j);
            if (r2 >= ff.rc * ff.rc) continue;
            const double r = std::sqrt(r2), r6 = r2 * r2 * r2;
            const double v = ff.c12() / (r6 * r6) - ff.c6() / r6 - ff.ljShift() +
                             kCoulombFactor * q[i] * q[j] * (1.0 / r + ff.krf() * r2 - ff.crf());
            MissedPairs* into = nullptr;
            if (d2(atBuild, i, j) >= rlist * rlist) into = &outerBrute;
            else if (d2(atPrune, i, j) >= inner * inner) into = &innerBrute;
            if (!into) continue;
            ++into->count;
            into->energy += v;
            into->absoluteEnergy += std::abs(v);
        }
    }
    const MissedPairs outer = countMissedPairs(atBuild, now, q, box, ff, rlist);
    const MissedPairs pruned = countMissedByPruning(atBuild, atPrune, now, q, box, ff, rlist, inner);
    ASSERT_GT(outerBrute.count, 0);
    ASSERT_GT(innerBrute.count, 0);
    EXPECT_EQ(outer.count, outerBrute.count);
    EXPECT_EQ(pruned.count, innerBrute.count);
    EXPECT_NEAR(outer.energy, outerBrute.energy, 1e-9 * outerBrute.absoluteEnergy);
    EXPECT_NEAR(pruned.energy, innerBrute.energy, 1e-9 * innerBrute.absoluteEnergy);
    EXPECT_NEAR(pruned.absoluteEnergy, innerBrute.absoluteEnergy, 1e-9 * innerBrute.absoluteEnergy);
    // Pruning at the build's positions to rlist drops nothing more.
    EXPECT_EQ(countMissedByPruning(atBuild, atBuild, now, q, box, ff, rlist, rlist).count, 0);
}
