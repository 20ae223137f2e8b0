#include "md_test_support.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <numeric>
#include <random>

#include "haloex/md/gro.hpp"
#include "haloex/md/system.hpp"
#include "haloex/plan/decomposition.hpp"

namespace haloex::testing {
namespace {

// Rounds to float and keeps the value inside [0, L) (rounding may reach L).
float toFloatInBox(double x, double length) {
    float f = static_cast<float>(x);
    while (static_cast<double>(f) >= length) f = std::nextafter(f, 0.0f);
    return f < 0.0f ? 0.0f : f;
}

FloatSystem fromSystem(const md::System& s, const md::ForceField& ff, std::string name) {
    FloatSystem out;
    out.name = std::move(name);
    out.box = s.box;
    std::vector<Vec3d> wrapped = s.positions;
    plan::wrapPositions(wrapped, s.box);
    for (std::size_t i = 0; i < wrapped.size(); ++i) {
        out.x.push_back({toFloatInBox(wrapped[i].x, s.box.length.x), toFloatInBox(wrapped[i].y, s.box.length.y),
                         toFloatInBox(wrapped[i].z, s.box.length.z)});
        out.q.push_back(static_cast<float>(ff.chargeOfType(s.types[i])));
    }
    return out;
}

std::vector<Vec3d> toDouble(std::span<const Vec3f> x) {
    std::vector<Vec3d> out(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) out[i] = Vec3d(x[i]);
    return out;
}

}  // namespace

FloatSystem loadRef3000(const md::ForceField& ff) {
    const md::GroFrame frame = md::readGro(std::string(HALOEX_TEST_DATA_DIR) + "/ref-3000.gro");
    return fromSystem(frame.system, ff, "ref-3000");
}

FloatSystem latticeSystem(int numAtoms, std::uint64_t seed, double jitter, const md::ForceField& ff) {
    md::System s = md::makeLatticeSystem(numAtoms, seed, 300.0, ff);
    std::mt19937_64 rng(seed * 7919 + 17);
    std::uniform_real_distribution<double> u(-jitter, jitter);
    for (auto& p : s.positions) p += Vec3d{u(rng), u(rng), u(rng)};
    return fromSystem(s, ff, fmt::format("lattice-{}", numAtoms));
}

FloatSystem uniformSystem(int numAtoms, double boxLength, std::uint64_t seed, const md::ForceField& ff) {
    FloatSystem out = uniformSystemInBox(numAtoms, {boxLength, boxLength, boxLength}, seed, ff);
    out.name = fmt::format("uniform-{}", numAtoms);
    return out;
}

FloatSystem uniformSystemInBox(int numAtoms, Vec3d box, std::uint64_t seed, const md::ForceField& ff) {
    FloatSystem out;
    out.name = fmt::format("uniform-{}-box-{}x{}x{}", numAtoms, box.x, box.y, box.z);
    out.box.length = box;
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> ux(0.0, box.x), uy(0.0, box.y), uz(0.0, box.z);
    for (int i = 0; i < numAtoms; ++i) {
        // Drawn x, y, z in that order (as uniformSystem always drew them).
        const double x = ux(rng), y = uy(rng), z = uz(rng);
        out.x.push_back({toFloatInBox(x, box.x), toFloatInBox(y, box.y), toFloatInBox(z, box.z)});
        out.q.push_back(static_cast<float>(ff.chargeOfType(i < numAtoms / 2 ? 0 : 1)));
    }
    return out;
}

std::vector<RankSystem> decompose(const FloatSystem& system, plan::Int3 grid, double rc, double rlist, int alignment) {
    plan::DecompositionSpec spec;
    spec.box = system.box;
    spec.grid = plan::RankGrid(grid);
    spec.rc = rc;
    spec.rlist = rlist;
    const plan::Decomposition dd(spec);
    const std::vector<Vec3d> positions = toDouble(system.x);
    const auto owners = plan::partitionAtoms(dd, positions);
    const int numRanks = spec.grid.size();
    std::vector<std::vector<Vec3d>> home(numRanks);
    for (int r = 0; r < numRanks; ++r) {
        for (int i : owners[r]) home[r].push_back(positions[i]);
    }
    const plan::InProcessPlans built = plan::buildParticlePlansInProcess(dd, home, alignment);

    // Global ids of the local atoms, following each pulse's index map.
    std::vector<std::vector<int>> ids(numRanks);
    for (int r = 0; r < numRanks; ++r) {
        ids[r] = owners[r];
        ids[r].resize(built.plans[r].numLocal, -1);
    }
    for (int p = 0; p < dd.totalPulses(); ++p) {
        for (int r = 0; r < numRanks; ++r) {
            const plan::Pulse& send = built.plans[r].pulses[p];
            if (!send.sends()) continue;
            const plan::Pulse& recv = built.plans[send.sendRank].pulses[p];
            for (int k = 0; k < send.sendCount(); ++k) {
                ids[send.sendRank][recv.recvOffset + k] = ids[r][send.sendIndices[k]];
            }
        }
    }

    std::vector<RankSystem> ranks(numRanks);
    for (int r = 0; r < numRanks; ++r) {
        const plan::ParticleHaloPlan& plan = built.plans[r];
        RankSystem& rs = ranks[r];
        rs.rank = r;
        rs.box = system.box;
        for (int d = 0; d < 3; ++d) rs.periodic[d] = !spec.grid.decomposed(d);
        rs.numHome = plan.numHome;
        rs.numLocal = plan.numLocal;
        rs.zone = plan.zoneMask;
        rs.globalId = ids[r];
        const float nan = std::numeric_limits<float>::quiet_NaN();
        for (int i = 0; i < plan.numLocal; ++i) {
            const bool padding = (plan.zoneMask[i] & plan::kPaddingMask) != 0;
            if (padding) {
                rs.x.push_back({nan, nan, nan});
                rs.q.push_back(0.0f);
                rs.globalId[i] = -1;
            } else {
                rs.x.push_back(Vec3f(built.localPositions[r][i]));
                rs.q.push_back(system.q.at(ids[r][i]));
            }
        }
    }
    return ranks;
}

md::PairForces<double> oracleSingle(const FloatSystem& system, const md::ForceField& ff) {
    const std::vector<Vec3d> x = toDouble(system.x);
    const std::vector<double> q(system.q.begin(), system.q.end());
    return md::computeForcesSingleDomain<double>(x, q, system.box, ff);
}

md::PairForces<double> oracleRank(const RankSystem& rank, const md::ForceField& ff) {
    const std::vector<Vec3d> x = toDouble(rank.x);
    const std::vector<double> q(rank.q.begin(), rank.q.end());
    return md::computeForcesRank<double>(x, q, rank.zone, rank.box, rank.periodic, ff);
}

ForceDiff compareForces(std::span<const Vec3f> got, std::span<const Vec3d> expected, int count,
                        std::span<const bool> skip) {
    const int n = count < 0 ? static_cast<int>(expected.size()) : count;
    ForceDiff d;
    double sumDiff = 0.0, sumRef = 0.0;
    std::vector<std::pair<double, int>> worst;
    for (int i = 0; i < n; ++i) {
        if (!skip.empty() && skip[i]) continue;
        const Vec3d diff = Vec3d(got[i]) - expected[i];
        const double a = std::sqrt(norm2(diff));
        sumDiff += norm2(diff);
        sumRef += norm2(expected[i]);
        worst.push_back({std::isfinite(a) ? a : std::numeric_limits<double>::infinity(), i});
    }
    d.relativeNorm = std::sqrt(sumDiff) / std::max(std::sqrt(sumRef), 1e-300);
    if (!std::isfinite(sumDiff)) d.relativeNorm = std::numeric_limits<double>::infinity();
    const std::size_t shown = std::min<std::size_t>(5, worst.size());
    std::partial_sort(worst.begin(), worst.begin() + static_cast<std::ptrdiff_t>(shown), worst.end(),
                      [](const auto& a, const auto& b) { return a.first > b.first; });
    if (shown > 0) {
        d.maxAbs = worst[0].first;
        d.worstAtom = worst[0].second;
    }
    d.report = fmt::format("||df||/||f|| = {:.3e} over {} atoms; largest differences:", d.relativeNorm, n);
    for (std::size_t k = 0; k < shown; ++k) {
        const int i = worst[k].second;
        d.report +=
            fmt::format("\n  atom {}: got ({:.6g}, {:.6g}, {:.6g}) expected ({:.6g}, {:.6g}, {:.6g}) |diff| {:.3e}", i,
                        got[i].x, got[i].y, got[i].z, expected[i].x, expected[i].y, expected[i].z, worst[k].first);
    }
    return d;
}

double relativeDifference(double got, double expected) {
    return std::abs(got - expected) / std::max(std::abs(expected), 1e-300);
}

std::int64_t allowedPairCountDifference(std::int64_t expected) { return 1 + expected / 200000; }

bool energyAgrees(double got, double expected, double magnitude, double tolerance) {
    return std::abs(got - expected) <= tolerance * std::max(magnitude, std::abs(expected));
}

std::string firstHomeSlotOutOfOrder(const md::gpu::ClusterLayoutHost& layout, int numHome) {
    int expected = 0;
    const long long homeSlots = static_cast<long long>(layout.numHomeClusters) * md::gpu::kClusterSize;
    for (long long s = 0; s < homeSlots; ++s) {
        const int atom = layout.atomOfSlot[static_cast<std::size_t>(s)];
        if (atom < 0) continue;
        if (atom != expected) return fmt::format("home slot {} holds atom {}, expected {}", s, atom, expected);
        ++expected;
    }
    if (expected != numHome) return fmt::format("the home slots hold {} atoms, expected {}", expected, numHome);
    return {};
}

void reorderHome(std::span<const int> order, int numHome, std::vector<Vec3f>& x, std::vector<float>& q,
                 std::vector<plan::ZoneMask>& zone) {
    const std::vector<Vec3f> x0 = x;
    const std::vector<float> q0 = q;
    const std::vector<plan::ZoneMask> zone0 = zone;
    for (int i = 0; i < numHome; ++i) {
        const auto k = static_cast<std::size_t>(order[static_cast<std::size_t>(i)]);
        x[static_cast<std::size_t>(i)] = x0[k];
        q[static_cast<std::size_t>(i)] = q0[k];
        if (!zone.empty()) zone[static_cast<std::size_t>(i)] = zone0[k];
    }
}

}  // namespace haloex::testing
