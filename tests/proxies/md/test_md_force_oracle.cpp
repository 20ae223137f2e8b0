// The CPU force oracle against the independent reference fixture, a brute-force
// O(N^2) sum, finite differences, and the rank form's masks/padding/open dims.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "haloex/core/error.hpp"
#include "haloex/md/force_oracle.hpp"
#include "haloex/md/gro.hpp"
#include "haloex/md/system.hpp"

using namespace haloex;
using namespace haloex::md;

namespace {

const std::string kDataDir = HALOEX_TEST_DATA_DIR;

double relativeDifference(double a, double b) { return std::abs(a - b) / std::max(std::abs(b), 1e-300); }

template <class T>
double forceNorm(const std::vector<Vec3<T>>& f) {
    double sum = 0.0;
    for (const auto& v : f) sum += norm2(Vec3d(v));
    return std::sqrt(sum);
}

// Straightforward O(N^2) sum over all pairs, written independently of the
// cell-list code: minimum image along periodic dims, the zone-mask rule, padding skipped.
struct BruteForce {
    std::vector<Vec3d> forces;
    double lj = 0.0, coulomb = 0.0, virial = 0.0;
    std::int64_t pairs = 0;
};

BruteForce bruteForce(const std::vector<Vec3d>& x, const std::vector<double>& q,
                      const std::vector<plan::ZoneMask>& masks, const plan::Box& box, std::array<bool, 3> periodic,
                      const ForceField& ff) {
    BruteForce out;
    out.forces.assign(x.size(), Vec3d{});
    const double rc = ff.rc;
    for (std::size_t i = 0; i < x.size(); ++i) {
        for (std::size_t j = i + 1; j < x.size(); ++j) {
            if (!masks.empty() && !plan::zonePairComputed(masks[i], masks[j])) continue;
            Vec3d d = x[i] - x[j];
            for (int k = 0; k < 3; ++k) {
                if (periodic[k]) d[k] -= box.length[k] * std::round(d[k] / box.length[k]);
            }
            const double r = std::sqrt(norm2(d));
            if (!(r < rc)) continue;
            const double qq = kCoulombFactor * q[i] * q[j];
            const double s6 = std::pow(ff.sigma / r, 6);
            const double s6c = std::pow(ff.sigma / rc, 6);
            out.lj += 4 * ff.epsilon * (s6 * s6 - s6) - 4 * ff.epsilon * (s6c * s6c - s6c);
            out.coulomb += qq * (1 / r + r * r / (2 * rc * rc * rc) - 3 / (2 * rc));
            // F = -dV/dr
            const double force = 4 * ff.epsilon * (12 * s6 * s6 - 6 * s6) / r + qq * (1 / (r * r) - r / (rc * rc * rc));
            const Vec3d f = d * (force / r);
            out.forces[i] += f;
            out.forces[j] -= f;
            out.virial -= 0.5 * force * r;
            ++out.pairs;
        }
    }
    return out;
}

void expectMatchesBruteForce(const PairForces<double>& got, const BruteForce& want) {
    EXPECT_EQ(got.pairsWithinCutoff, want.pairs);
    EXPECT_LT(relativeDifference(got.ljEnergy, want.lj), 1e-10);
    EXPECT_LT(relativeDifference(got.coulombEnergy, want.coulomb), 1e-10);
    EXPECT_LT(relativeDifference(got.virial, want.virial), 1e-10);
    ASSERT_EQ(got.forces.size(), want.forces.size());
    const double scale = forceNorm(want.forces) / std::sqrt(static_cast<double>(want.forces.size()));
    for (std::size_t i = 0; i < want.forces.size(); ++i) {
        for (int d = 0; d < 3; ++d) {
            ASSERT_NEAR(got.forces[i][d], want.forces[i][d], 1e-9 * scale) << "atom " << i << " dim " << d;
        }
    }
}

// A lattice start with every atom displaced at random, so that no distances
// repeat exactly, wrapped back into the box.
System jiggledLattice(int n, std::uint64_t seed) {
    const ForceField ff;
    System s = makeLatticeSystem(n, seed, 300.0, ff);
    std::mt19937_64 rng(seed + 1);
    std::uniform_real_distribution<double> jiggle(-0.05, 0.05);
    for (auto& p : s.positions) {
        for (int d = 0; d < 3; ++d) p[d] += jiggle(rng);
    }
    plan::wrapPositions(s.positions, s.box);
    return s;
}

std::vector<float> toFloat(const std::vector<double>& v) { return {v.begin(), v.end()}; }
std::vector<Vec3f> toFloat(const std::vector<Vec3d>& v) {
    std::vector<Vec3f> out;
    for (const auto& x : v) out.push_back(Vec3f(x));
    return out;
}

class ReferenceFixture : public ::testing::Test {
protected:
    void SetUp() override {
        frame = readGro(kDataDir + "/ref-3000.gro");
        std::ifstream in(kDataDir + "/ref-3000.json");
        ASSERT_TRUE(in) << "cannot open ref-3000.json";
        reference = nlohmann::json::parse(in);
        plan::wrapPositions(frame.system.positions, frame.system.box);
        charges = frame.system.charges(ff);
    }
    ForceField ff;
    GroFrame frame;
    nlohmann::json reference;
    std::vector<double> charges;
};

}  // namespace

TEST_F(ReferenceFixture, DoubleMatchesIndependentReference) {
    ASSERT_DOUBLE_EQ(reference.at("rc_nm").get<double>(), ff.rc);
    const auto r = computeForcesSingleDomain<double>(frame.system.positions, charges, frame.system.box, ff);
    EXPECT_EQ(r.pairsWithinCutoff, reference.at("pairs_within_rc").get<std::int64_t>());
    EXPECT_LT(relativeDifference(r.ljEnergy, reference.at("lj_kJ_mol").get<double>()), 1e-4);
    EXPECT_LT(relativeDifference(r.coulombEnergy, reference.at("coulomb_rf_kJ_mol").get<double>()), 1e-4);
    const double withSelf = r.coulombEnergy + coulombSelfEnergy(charges, ff);
    EXPECT_LT(relativeDifference(withSelf, reference.at("coulomb_rf_with_self_kJ_mol").get<double>()), 1e-4);
    EXPECT_LT(relativeDifference(forceNorm(r.forces), reference.at("force_norm").get<double>()), 1e-6);
    const auto& first = reference.at("forces_first_4_atoms");
    ASSERT_EQ(first.size(), 4u);
    for (int i = 0; i < 4; ++i) {
        for (int d = 0; d < 3; ++d) {
            EXPECT_NEAR(r.forces[i][d], first.at(i).at(d).get<double>(), 1e-3) << "atom " << i << " dim " << d;
        }
    }
    double maxAbs = 0.0;
    for (const auto& f : r.forces) maxAbs = std::max({maxAbs, std::abs(f.x), std::abs(f.y), std::abs(f.z)});
    EXPECT_LT(relativeDifference(maxAbs, reference.at("force_max_abs").get<double>()), 1e-6);
}

TEST_F(ReferenceFixture, FloatMatchesIndependentReference) {
    const auto x = toFloat(frame.system.positions);
    const auto q = toFloat(charges);
    const auto r = computeForcesSingleDomain<float>(x, q, frame.system.box, ff);
    EXPECT_LT(relativeDifference(forceNorm(r.forces), reference.at("force_norm").get<double>()), 1e-5);
    EXPECT_LT(relativeDifference(r.ljEnergy, reference.at("lj_kJ_mol").get<double>()), 1e-3);
    EXPECT_LT(relativeDifference(r.coulombEnergy, reference.at("coulomb_rf_kJ_mol").get<double>()), 1e-3);
    // Rounding may move a pair across rc, not more than a handful.
    EXPECT_NEAR(static_cast<double>(r.pairsWithinCutoff), reference.at("pairs_within_rc").get<double>(), 10.0);
}

TEST_F(ReferenceFixture, SelfEnergyIsHalfFCrfQSquaredPerAtom) {
    const double self = coulombSelfEnergy(charges, ff);
    EXPECT_NEAR(self / static_cast<double>(charges.size()), -0.5 * kCoulombFactor * 1.5 / ff.rc * ff.charge * ff.charge,
                1e-12);
    EXPECT_LT(relativeDifference(self, reference.at("coulomb_rf_with_self_kJ_mol").get<double>() -
                                           reference.at("coulomb_rf_kJ_mol").get<double>()),
              1e-4);
}

TEST(ForceOracle, CellListsMatchBruteForceForSeveralCellCounts) {
    const ForceField ff;
    // 1000 atoms: 2 cells per dim (offsets -1 and +1 alias); 4000: 3; 8000: 4.
    for (int n : {1000, 4000, 8000}) {
        SCOPED_TRACE("N = " + std::to_string(n));
        const System s = jiggledLattice(n, 7);
        const auto q = s.charges(ff);
        const auto got = computeForcesSingleDomain<double>(s.positions, q, s.box, ff);
        expectMatchesBruteForce(got, bruteForce(s.positions, q, {}, s.box, {true, true, true}, ff));
    }
}

TEST(ForceOracle, SparseAtomsInALargeBoxAndThinOpenSlabs) {
    // 300 atoms in a 60 nm box: far more cells of width rc than atoms, so the grid is coarsened.
    const ForceField ff;
    plan::Box box;
    box.length = {60.0, 50.0, 40.0};
    std::mt19937_64 rng(4);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    std::vector<Vec3d> x;
    while (x.size() < 300) {
        // Clustered near a few centres, so pairs exist.
        const Vec3d centre{(x.size() % 3) * 20.0 + 1.0, 2.0, 3.0};
        const Vec3d p{centre.x + 2.0 * unit(rng), centre.y + 2.0 * unit(rng), centre.z + 0.5 * unit(rng)};
        bool clear = true;
        for (const auto& o : x) clear = clear && norm2(p - o) >= 0.2 * 0.2;
        if (clear) x.push_back(p);
    }
    std::vector<double> q(x.size());
    for (std::size_t i = 0; i < q.size(); ++i) q[i] = ff.chargeOfType(static_cast<int>(i % 2));
    const auto got = computeForcesSingleDomain<double>(x, q, box, ff);
    expectMatchesBruteForce(got, bruteForce(x, q, {}, box, {true, true, true}, ff));
    EXPECT_GT(got.pairsWithinCutoff, 0);
    // z spans only 0.5 nm: as an open dimension it has a single cell.
    const std::vector<plan::ZoneMask> masks(x.size(), 0);
    const auto slab = computeForcesRank<double>(x, q, masks, box, {true, true, false}, ff);
    expectMatchesBruteForce(slab, bruteForce(x, q, masks, box, {true, true, false}, ff));
}

TEST(ForceOracle, ForcesAreMinusTheEnergyGradient) {
    // A small random system in a 1.9 nm box (2 cells per dim), atoms >= 0.22 nm apart.
    const ForceField ff;
    plan::Box box;
    box.length = {1.9, 1.95, 2.0};
    std::mt19937_64 rng(11);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    std::vector<Vec3d> x;
    while (x.size() < 200) {
        const Vec3d p{unit(rng) * box.length.x, unit(rng) * box.length.y, unit(rng) * box.length.z};
        bool clear = true;
        for (const auto& o : x) {
            Vec3d d = p - o;
            for (int k = 0; k < 3; ++k) d[k] -= box.length[k] * std::round(d[k] / box.length[k]);
            clear = clear && norm2(d) >= 0.22 * 0.22;
        }
        if (clear) x.push_back(p);
    }
    std::vector<double> q(x.size());
    for (std::size_t i = 0; i < q.size(); ++i) q[i] = ff.chargeOfType(static_cast<int>(i % 2));

    const auto energy = [&](const std::vector<Vec3d>& pos) {
        const auto r = computeForcesSingleDomain<double>(pos, q, box, ff);
        return r.ljEnergy + r.coulombEnergy;
    };
    const auto forces = computeForcesSingleDomain<double>(x, q, box, ff).forces;
    const double h = 1e-6;
    for (int i : {0, 1, 57, 199}) {
        for (int d = 0; d < 3; ++d) {
            auto plus = x, minus = x;
            plus[i][d] += h;
            minus[i][d] -= h;
            const double numeric = -(energy(plus) - energy(minus)) / (2 * h);
            EXPECT_NEAR(forces[i][d], numeric, 1e-5 * std::abs(numeric) + 1e-3) << "atom " << i << " dim " << d;
        }
    }
}

TEST(ForceOracle, RankWithoutPulsesEqualsSingleDomain) {
    const ForceField ff;
    const System s = jiggledLattice(2000, 3);
    const auto q = s.charges(ff);
    const std::vector<plan::ZoneMask> homeMasks(s.positions.size(), 0);
    const auto single = computeForcesSingleDomain<double>(s.positions, q, s.box, ff);
    const auto rank = computeForcesRank<double>(s.positions, q, homeMasks, s.box, {true, true, true}, ff);
    EXPECT_EQ(rank.pairsWithinCutoff, single.pairsWithinCutoff);
    EXPECT_EQ(rank.ljEnergy, single.ljEnergy);
    EXPECT_EQ(rank.coulombEnergy, single.coulombEnergy);
    EXPECT_EQ(rank.virial, single.virial);
    EXPECT_EQ(rank.forces, single.forces);

    const auto xf = toFloat(s.positions);
    const auto qf = toFloat(q);
    const auto singleF = computeForcesSingleDomain<float>(xf, qf, s.box, ff);
    const auto rankF = computeForcesRank<float>(xf, qf, homeMasks, s.box, {true, true, true}, ff);
    EXPECT_EQ(rankF.pairsWithinCutoff, singleF.pairsWithinCutoff);
    EXPECT_EQ(rankF.forces, singleF.forces);
}

TEST(ForceOracle, PaddingAtomsAreSkippedAndGetNoForce) {
    const ForceField ff;
    const System s = jiggledLattice(1000, 5);
    const auto q = s.charges(ff);
    // Insert a padding atom with a NaN position after every 7th atom.
    std::vector<Vec3d> x;
    std::vector<double> qp;
    std::vector<plan::ZoneMask> masks;
    std::vector<int> realIndex;
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (std::size_t i = 0; i < s.positions.size(); ++i) {
        realIndex.push_back(static_cast<int>(x.size()));
        x.push_back(s.positions[i]);
        qp.push_back(q[i]);
        masks.push_back(0);
        if (i % 7 == 0) {
            x.push_back({nan, nan, nan});
            qp.push_back(nan);
            masks.push_back(plan::kPaddingMask);
        }
    }
    const auto padded = computeForcesRank<double>(x, qp, masks, s.box, {true, true, true}, ff);
    const auto plain = computeForcesSingleDomain<double>(s.positions, q, s.box, ff);
    EXPECT_EQ(padded.pairsWithinCutoff, plain.pairsWithinCutoff);
    EXPECT_NEAR(padded.ljEnergy, plain.ljEnergy, 1e-9 * std::abs(plain.ljEnergy));
    for (std::size_t i = 0; i < s.positions.size(); ++i) {
        for (int d = 0; d < 3; ++d) ASSERT_NEAR(padded.forces[realIndex[i]][d], plain.forces[i][d], 1e-7);
    }
    for (std::size_t k = 0; k < x.size(); ++k) {
        if (masks[k] == plan::kPaddingMask) {
            EXPECT_EQ(padded.forces[k], Vec3d{});
        }
    }
}

TEST(ForceOracle, RankFormHonoursMasksAndOpenDimensionsBeyondTheBox) {
    // Along x the "rank" is open: atoms spread over [-1.2, L + 1.2) as halo images would;
    // masks are random, so the zone rule removes many pairs.
    const ForceField ff;
    const System s = jiggledLattice(3000, 9);
    auto x = s.positions;
    std::mt19937_64 rng(21);
    std::uniform_real_distribution<double> stretch(-1.2, s.box.length.x + 1.2);
    std::uniform_int_distribution<int> maskDist(0, 7);
    std::vector<plan::ZoneMask> masks(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
        x[i].x = stretch(rng);
        masks[i] = static_cast<plan::ZoneMask>(maskDist(rng));
    }
    const auto q = s.charges(ff);
    for (const auto periodic : {std::array<bool, 3>{false, true, true}, std::array<bool, 3>{false, false, true},
                                std::array<bool, 3>{false, false, false}}) {
        SCOPED_TRACE(::testing::Message() << "periodic " << periodic[0] << periodic[1] << periodic[2]);
        const auto got = computeForcesRank<double>(x, q, masks, s.box, periodic, ff);
        expectMatchesBruteForce(got, bruteForce(x, q, masks, s.box, periodic, ff));
        EXPECT_GT(got.pairsWithinCutoff, 0);
    }
}

TEST(ForceOracle, RefusesBadInput) {
    const ForceField ff;
    const System s = jiggledLattice(1000, 1);
    const auto q = s.charges(ff);
    const std::vector<double> shortCharges(q.begin(), q.end() - 1);
    EXPECT_THROW(computeForcesSingleDomain<double>(s.positions, shortCharges, s.box, ff), Error);

    plan::Box small = s.box;
    small.length.y = 1.7;
    try {
        computeForcesSingleDomain<double>(s.positions, q, small, ff);
        FAIL() << "a 1.7 nm periodic box with rc = 0.9 nm must be refused";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("twice the cutoff"), std::string::npos) << e.what();
    }
    // The same box is fine when y is an open (decomposed) dimension.
    const std::vector<plan::ZoneMask> masks(q.size(), 0);
    EXPECT_NO_THROW(computeForcesRank<double>(s.positions, q, masks, small, {true, false, true}, ff));

    auto x = s.positions;
    x[5].y = std::numeric_limits<double>::infinity();
    try {
        computeForcesRank<double>(x, q, masks, s.box, {true, true, true}, ff);
        FAIL() << "a non-finite position of a real atom must be refused";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("atom 5"), std::string::npos) << e.what();
    }
}
