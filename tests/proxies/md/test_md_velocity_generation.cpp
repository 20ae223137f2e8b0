// Start velocities for a structure without them (velocity_generation.hpp):
// Maxwell-Boltzmann at the target temperature, no centre-of-mass motion, and
// keyed by (seed, global id) so that neither the atoms' order nor the
// decomposition changes them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "haloex/core/error.hpp"
#include "haloex/md/system.hpp"
#include "haloex/md/velocity_generation.hpp"

using namespace haloex;
using namespace haloex::md;

namespace {

// `n` atoms at rest (positions do not matter), global ids 0..n-1.
System atomsAtRest(int n) {
    System s;
    s.box.length = {10.0, 10.0, 10.0};
    s.positions.assign(n, Vec3d{1.0, 1.0, 1.0});
    s.velocities.assign(n, Vec3d{});
    s.types.resize(n);
    s.globalIds.resize(n);
    for (int i = 0; i < n; ++i) {
        s.types[i] = i % 2;
        s.globalIds[i] = i;
    }
    return s;
}

}  // namespace

TEST(VelocityGeneration, ZeroVelocitiesCountAsNone) {
    System s = atomsAtRest(10);
    EXPECT_TRUE(hasNoVelocities(s));
    s.velocities[7].y = 1e-12;
    EXPECT_FALSE(hasNoVelocities(s));
}

TEST(VelocityGeneration, KineticTemperatureIsTheTargetWithoutCentreOfMassMotion) {
    const ForceField ff;
    System s = atomsAtRest(20000);
    generateMaxwellBoltzmannVelocities(s, 2026, 300.0, ff);
    EXPECT_NEAR(temperature(s, ff), 300.0, 1e-9);
    const Vec3d p = totalMomentum(s, ff);
    // Momentum of one atom at 300 K is about 12 u * 0.46 nm/ps; the sum must vanish to rounding.
    EXPECT_LT(std::sqrt(norm2(p)), 1e-9);
}

TEST(VelocityGeneration, ComponentsAreNormalWithTheMaxwellBoltzmannVariance) {
    // The unscaled draws: each component standard normal and independent. The
    // checks would fail for uniform deviates (4th moment 1.8) or a wrong width.
    const int n = 200000;
    double sum = 0, sum2 = 0, sum4 = 0, cross = 0;
    int withinOneSigma = 0;
    for (int id = 0; id < n; ++id) {
        const NormalTriple t = standardNormalsFor(7, id);
        for (double x : {t.x, t.y, t.z}) {
            sum += x;
            sum2 += x * x;
            sum4 += x * x * x * x;
            withinOneSigma += std::abs(x) < 1.0;
        }
        cross += t.x * t.y + t.y * t.z;
    }
    const double m = 3.0 * n;
    EXPECT_NEAR(sum / m, 0.0, 0.01);
    EXPECT_NEAR(sum2 / m, 1.0, 0.01);
    EXPECT_NEAR(sum4 / m, 3.0, 0.05);
    EXPECT_NEAR(withinOneSigma / m, 0.6827, 0.005);
    EXPECT_NEAR(cross / (2.0 * n), 0.0, 0.01);

    // Scaled velocities: variance kB T / m per component (mass 12 u at 300 K).
    const ForceField ff;
    System s = atomsAtRest(n);
    generateMaxwellBoltzmannVelocities(s, 7, 300.0, ff);
    double vx2 = 0;
    for (const Vec3d& v : s.velocities) vx2 += v.x * v.x;
    EXPECT_NEAR(vx2 / n / (kBoltzmann * 300.0 / ff.mass), 1.0, 0.02);
}

TEST(VelocityGeneration, SameSeedSameVelocitiesOtherSeedOthers) {
    const ForceField ff;
    System a = atomsAtRest(1000), b = atomsAtRest(1000), c = atomsAtRest(1000);
    generateMaxwellBoltzmannVelocities(a, 11, 300.0, ff);
    generateMaxwellBoltzmannVelocities(b, 11, 300.0, ff);
    generateMaxwellBoltzmannVelocities(c, 12, 300.0, ff);
    EXPECT_EQ(a.velocities, b.velocities);
    int same = 0;
    for (int i = 0; i < 1000; ++i) same += a.velocities[i].x == c.velocities[i].x;
    EXPECT_EQ(same, 0);
}

TEST(VelocityGeneration, AnAtomsDrawDependsOnItsIdNotItsPlace) {
    // The raw draws follow the id wherever the atom sits in the file; only the
    // centre-of-mass shift and the scale (sums over all atoms) may differ in
    // the last bits when the order changes.
    const ForceField ff;
    System inOrder = atomsAtRest(5000);
    System shuffled = inOrder;
    std::vector<int> order(5000);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), std::mt19937(1));
    for (int i = 0; i < 5000; ++i) shuffled.globalIds[i] = inOrder.globalIds[order[i]];
    generateMaxwellBoltzmannVelocities(inOrder, 3, 300.0, ff);
    generateMaxwellBoltzmannVelocities(shuffled, 3, 300.0, ff);
    for (int i = 0; i < 5000; ++i) {
        const Vec3d& want = inOrder.velocities[order[i]];
        const Vec3d& got = shuffled.velocities[i];
        for (int d = 0; d < 3; ++d) EXPECT_NEAR(got[d], want[d], 1e-12) << "atom " << i;
    }
}

TEST(VelocityGeneration, InvalidTemperatureIsRefused) {
    const ForceField ff;
    System s = atomsAtRest(10);
    EXPECT_THROW(generateMaxwellBoltzmannVelocities(s, 1, -1.0, ff), Error);
    EXPECT_THROW(generateMaxwellBoltzmannVelocities(s, 1, std::nan(""), ff), Error);
}
