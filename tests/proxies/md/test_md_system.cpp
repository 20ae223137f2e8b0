// The proxy system's lattice start (docs/md-engine.md#the-system-and-its-defaults) and the portable random numbers behind it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <functional>

#include "haloex/core/error.hpp"
#include "haloex/md/portable_math.hpp"
#include "haloex/md/random.hpp"
#include "haloex/md/system.hpp"

using namespace haloex;
using namespace haloex::md;

namespace {

double ulpDistance(double a, double b) { return std::abs(a - b) / (std::nextafter(b, 2 * b + 1) - b); }

std::string messageOf(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(PortableMath, LogAndCbrtAgreeWithLibmWithinAnUlp) {
    for (double x : {1e-300, 1e-20, 0.001, 0.1, 0.5, 0.7071067811865476, 0.9999999, 1.0, 1.0000001, 2.0, 3.0, 10.0,
                     12345.678, 1e20, 1e300}) {
        EXPECT_LE(std::abs(portableLog(x) - std::log(x)),
                  2 * std::numeric_limits<double>::epsilon() * std::max(1.0, std::abs(std::log(x))))
            << "log " << x;
    }
    for (double x : {1e-30, 0.125, 1.0, 8.0, 10.0, 10.02, 27.0, 40.0, 230000.0, 1e30}) {
        EXPECT_LE(ulpDistance(portableCbrt(x), std::cbrt(x)), 1.0) << "cbrt " << x;
    }
    EXPECT_EQ(portableCbrt(27.0), 3.0);
    EXPECT_EQ(portableLog(1.0), 0.0);
}

TEST(PortableRandom, UniformBelowAndNormalHaveTheRightMoments) {
    PortableRandom random(42);
    const int n = 200000;
    double sumU = 0.0, sumN = 0.0, sumN2 = 0.0, sumN4 = 0.0;
    std::vector<int> bins(7, 0);
    for (int i = 0; i < n; ++i) {
        const double u = random.uniform();
        ASSERT_GE(u, 0.0);
        ASSERT_LT(u, 1.0);
        sumU += u;
        const auto b = random.below(7);
        ASSERT_LT(b, 7u);
        ++bins[b];
        const double g = random.normal();
        sumN += g;
        sumN2 += g * g;
        sumN4 += g * g * g * g;
    }
    EXPECT_NEAR(sumU / n, 0.5, 0.005);
    for (int count : bins) EXPECT_NEAR(count, n / 7.0, 5 * std::sqrt(n / 7.0));
    EXPECT_NEAR(sumN / n, 0.0, 0.01);
    EXPECT_NEAR(sumN2 / n, 1.0, 0.015);
    EXPECT_NEAR(sumN4 / n, 3.0, 0.1);  // Gaussian kurtosis; a uniform deviate gives 1.8
    EXPECT_EQ(PortableRandom(1).below(1), 0u);
}

TEST(LatticeSystem, SameSeedGivesIdenticalSystems) {
    const ForceField ff;
    const System a = makeLatticeSystem(1200, 99, 300.0, ff);
    const System b = makeLatticeSystem(1200, 99, 300.0, ff);
    const System c = makeLatticeSystem(1200, 100, 300.0, ff);
    EXPECT_EQ(a.positions, b.positions);
    EXPECT_EQ(a.velocities, b.velocities);
    EXPECT_EQ(a.types, b.types);
    EXPECT_EQ(a.box.length, b.box.length);
    EXPECT_NE(a.positions, c.positions);
    EXPECT_NE(a.velocities, c.velocities);
}

TEST(LatticeSystem, RefusesOddAndTooSmallSystems) {
    const ForceField ff;
    const std::string odd = messageOf([&] { makeLatticeSystem(1001, 1, 300.0, ff); });
    EXPECT_NE(odd.find("even"), std::string::npos) << odd;
    EXPECT_NE(odd.find("1001"), std::string::npos) << odd;
    const std::string small = messageOf([&] { makeLatticeSystem(998, 1, 300.0, ff); });
    EXPECT_NE(small.find("at least 1000"), std::string::npos) << small;
    EXPECT_NE(small.find("2 nm"), std::string::npos) << small;
    EXPECT_THROW(makeLatticeSystem(kMinAtoms, 1, -1.0, ff), Error);
    EXPECT_THROW(makeLatticeSystem(kMinAtoms, 1, std::numeric_limits<double>::quiet_NaN(), ff), Error);
    EXPECT_NO_THROW(makeLatticeSystem(kMinAtoms, 1, 300.0, ff));
}

TEST(LatticeSystem, DensityChargesMomentumAndTemperature) {
    const ForceField ff;
    for (int n : {1000, 1372, 4000}) {  // 1372 = 4 * 7^3 fills its lattice completely
        SCOPED_TRACE("N = " + std::to_string(n));
        const System s = makeLatticeSystem(n, 2024, 300.0, ff);
        ASSERT_NO_THROW(s.validate());
        ASSERT_EQ(s.size(), n);
        EXPECT_EQ(s.box.length.x, s.box.length.y);
        EXPECT_EQ(s.box.length.x, s.box.length.z);
        EXPECT_NEAR(n / s.box.volume(), kNumberDensity, 1e-10);

        const auto q = s.charges(ff);
        double total = 0.0;
        for (double qi : q) total += qi;
        EXPECT_NEAR(total, 0.0, 1e-9);
        EXPECT_EQ(std::count(s.types.begin(), s.types.end(), 0), n / 2);
        EXPECT_TRUE(std::all_of(s.types.begin(), s.types.begin() + n / 2, [](int t) { return t == 0; }));

        const Vec3d p = totalMomentum(s, ff);
        EXPECT_LT(std::sqrt(norm2(p)), 1e-9);
        EXPECT_NEAR(temperature(s, ff), 300.0, 1e-9);
        EXPECT_NEAR(kineticEnergy(s, ff), 0.5 * degreesOfFreedom(n) * kBoltzmann * 300.0, 1e-8);

        for (std::size_t i = 0; i < s.positions.size(); ++i) {
            for (int d = 0; d < 3; ++d) {
                ASSERT_GE(s.positions[i][d], 0.0);
                ASSERT_LT(s.positions[i][d], s.box.length[d]);
            }
            ASSERT_EQ(s.globalIds[i], static_cast<std::int64_t>(i));
        }
    }
}

TEST(LatticeSystem, VelocitiesAreMaxwellBoltzmann) {
    const ForceField ff;
    const System s = makeLatticeSystem(4000, 5, 300.0, ff);
    double sum2 = 0.0, sum4 = 0.0;
    for (const auto& v : s.velocities) {
        for (int d = 0; d < 3; ++d) {
            sum2 += v[d] * v[d];
            sum4 += v[d] * v[d] * v[d] * v[d];
        }
    }
    const double samples = 3.0 * s.size();
    const double variance = sum2 / samples;
    EXPECT_NEAR(variance, kBoltzmann * 300.0 / ff.mass, 0.01 * kBoltzmann * 300.0 / ff.mass);
    EXPECT_NEAR(sum4 / samples / (variance * variance), 3.0, 0.2);

    const System cold = makeLatticeSystem(1000, 5, 0.0, ff);
    for (const auto& v : cold.velocities) EXPECT_EQ(v, Vec3d{});
}

TEST(LatticeSystem, SitesAreDistinctAndNotTooClose) {
    const ForceField ff;
    for (int n : {1000, 1372, 4000}) {
        SCOPED_TRACE("N = " + std::to_string(n));
        const System s = makeLatticeSystem(n, 77, 300.0, ff);
        double minDistance2 = std::numeric_limits<double>::max();
        for (int i = 0; i < n; ++i) {
            for (int j = i + 1; j < n; ++j) {
                Vec3d d = s.positions[i] - s.positions[j];
                for (int k = 0; k < 3; ++k) d[k] -= s.box.length[k] * std::round(d[k] / s.box.length[k]);
                minDistance2 = std::min(minDistance2, norm2(d));
            }
        }
        EXPECT_GT(std::sqrt(minDistance2), 0.15);
        // +q and -q sites are mixed: each half spreads over the whole box.
        const int half = n / 2;
        double meanZPositive = 0.0;
        for (int i = 0; i < half; ++i) meanZPositive += s.positions[i].z / half;
        EXPECT_NEAR(meanZPositive / s.box.length.z, 0.5, 0.05);
    }
}

TEST(System, ValidateRefusesInconsistentArrays) {
    const ForceField ff;
    System s = makeLatticeSystem(1000, 1, 300.0, ff);
    s.velocities.pop_back();
    EXPECT_THROW(s.validate(), Error);
    s = makeLatticeSystem(1000, 1, 300.0, ff);
    s.types[3] = 2;
    const std::string msg = messageOf([&] { s.validate(); });
    EXPECT_NE(msg.find("atom 3"), std::string::npos) << msg;
}
