// Compensated positions (compensated_position.hpp): x + low follows a double
// sum of the displacements where a plain float sum drifts away, and the split
// of a double position round-trips.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "haloex/md/compensated_position.hpp"

using namespace haloex;
using namespace haloex::md;

TEST(CompensatedPosition, FollowsTheDoubleSumOfTheDisplacements) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> start(-6.f, 6.f), step(-2e-3f, 2e-3f);
    double worstCompensated = 0.0, worstPlain = 0.0;
    for (int atom = 0; atom < 64; ++atom) {
        float x = start(rng), low = 0.f, plain = x;
        double exact = x;
        for (int k = 0; k < 20000; ++k) {
            const float dx = step(rng);
            addCompensated(x, low, dx);
            plain += dx;
            exact += dx;
        }
        worstCompensated = std::max(worstCompensated, std::abs(double(x) + double(low) - exact));
        worstPlain = std::max(worstPlain, std::abs(double(plain) - exact));
        // x stays the float nearest to x + low: what the forces see.
        const float ulp = std::nextafter(std::abs(x), INFINITY) - std::abs(x);
        EXPECT_LE(std::abs(low), 0.5f * ulp);
    }
    // What remains: dx + low is rounded once per step (~3e-11 nm here), a
    // random walk of ~5e-9 nm over the 20 000 steps.
    EXPECT_LT(worstCompensated, 2e-8) << "nm";
    // The plain float sum has drifted by far more (this is what the
    // compensation removes): random rounding of ~2.4e-7 nm per step.
    EXPECT_GT(worstPlain, 1e-6) << "nm";
}

TEST(CompensatedPosition, ValidNearZeroAndAcrossSigns) {
    // TwoSum needs no ordering of the magnitudes: positions that cross 0.
    float x = 1e-4f, low = 0.f;
    double exact = x;
    for (int k = 0; k < 1000; ++k) {
        const float dx = k < 500 ? -1.7e-6f : 2.3e-6f;
        addCompensated(x, low, dx);
        exact += dx;
    }
    EXPECT_NEAR(double(x) + double(low), exact, 1e-15);
}

TEST(CompensatedPosition, SplitAndJoinRoundTrip) {
    const Vec3d p{3.14159265358979, -0.000123456789012, 4.99999999999};
    Vec3f x, low;
    splitPosition(p, x, low);
    EXPECT_EQ(x.x, static_cast<float>(p.x));
    const Vec3d back = joinPosition(x, low);
    for (int d = 0; d < 3; ++d) EXPECT_NEAR(back[d], p[d], 1e-13 * std::max(1.0, std::abs(p[d])));
    // Joined and split again: the same float parts.
    Vec3f x2, low2;
    splitPosition(back, x2, low2);
    for (int d = 0; d < 3; ++d) {
        EXPECT_EQ(x2[d], x[d]);
        EXPECT_EQ(low2[d], low[d]);
    }
}
