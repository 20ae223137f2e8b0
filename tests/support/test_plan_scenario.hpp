#pragma once
// Shared by the particle-plan property tests: the decomposition cases, a
// seeded random atom set, and every rank's plan built both ways (in one
// process, and rank by rank over the thread world), with global atom ids
// forwarded through the reference transport so each halo atom can be traced
// back to its owner.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "haloex/plan/decomposition.hpp"
#include "haloex/plan/particle_plan.hpp"
#include "haloex/runtime/plan_exchange.hpp"
#include "haloex/runtime/world.hpp"
#include "haloex/transport/reference.hpp"

namespace haloex::testing {

struct PlanCase {
    std::string name;
    Vec3d box;
    plan::Int3 grid;
    double rc;
    double rlist;
    plan::Int3 pulses;  // pulses per dimension the case is built to exercise
    std::array<int, 3> dimOrder{2, 1, 0};
    int alignment = 1;
    double density = 30.0;  // atoms per nm^3
    std::uint64_t seed = 1;
    int emptyRank = -1;          // >= 0: no atom is placed in this rank's cell
    bool boundaryAtoms = false;  // also place atoms exactly on cell faces
    bool pruneCorners = true;    // DecompositionSpec::pruneCorners
};

inline std::string caseName(const ::testing::TestParamInfo<PlanCase>& info) { return info.param.name; }
// Keeps gtest from printing the case as raw bytes.
inline void PrintTo(const PlanCase& c, std::ostream* os) { *os << c.name; }

// The decompositions every particle-plan property is checked on.
inline std::vector<PlanCase> planCases() {
    std::vector<PlanCase> c;
    // name, box, grid, rc, rlist, pulses per dim
    c.push_back({"g1x1x1", {3.0, 3.0, 3.0}, {1, 1, 1}, 0.9, 1.0, {0, 0, 0}});
    c.push_back({"g2x1x1", {4.0, 3.0, 3.0}, {2, 1, 1}, 0.9, 1.0, {1, 0, 0}});
    c.push_back({"g1x1x2", {3.0, 3.0, 4.0}, {1, 1, 2}, 0.9, 1.0, {0, 0, 1}});
    c.push_back({"g2x2x1", {4.0, 4.0, 3.0}, {2, 2, 1}, 0.9, 1.0, {1, 1, 0}});
    c.push_back({"g2x2x2", {4.0, 4.0, 4.0}, {2, 2, 2}, 0.9, 1.0, {1, 1, 1}});
    c.push_back({"g3x3x3", {4.5, 4.5, 4.5}, {3, 3, 3}, 0.9, 1.0, {1, 1, 1}});
    c.push_back({"g4x2x1", {6.0, 4.0, 3.0}, {4, 2, 1}, 0.9, 1.0, {1, 1, 0}});
    c.push_back({"g5x3x2", {6.0, 4.5, 4.0}, {5, 3, 2}, 0.9, 1.0, {1, 1, 1}});
    c.push_back({"g6x1x1", {7.2, 3.0, 3.0}, {6, 1, 1}, 0.9, 1.0, {1, 0, 0}});
    // Cells narrower than the halo: forwarding over 2, 3 and 4 stages.
    c.push_back({"g3x1x1_2pulses", {3.0, 2.5, 2.5}, {3, 1, 1}, 1.0, 1.1, {2, 0, 0}});
    c.push_back({"g4x1x1_2pulses", {3.2, 2.5, 2.5}, {4, 1, 1}, 0.9, 1.0, {2, 0, 0}});
    c.push_back({"g4x1x1_exact2pulses", {2.0, 2.2, 2.2}, {4, 1, 1}, 0.9, 1.0, {2, 0, 0}});  // rlist = 2 cells exactly
    c.push_back({"g4x1x1_3pulses", {2.4, 3.8, 3.8}, {4, 1, 1}, 1.1, 1.5, {3, 0, 0}});
    c.push_back({"g5x1x1_3pulses", {3.0, 3.5, 3.5}, {5, 1, 1}, 1.2, 1.4, {3, 0, 0}});
    c.push_back({"g5x1x1_4pulses", {3.0, 4.2, 4.2}, {5, 1, 1}, 1.0, 2.0, {4, 0, 0}});
    c.push_back({"g1x4x1_3pulses", {3.8, 2.4, 3.8}, {1, 4, 1}, 1.1, 1.5, {0, 3, 0}});
    c.push_back({"g1x1x3_2pulses", {2.5, 2.5, 3.0}, {1, 1, 3}, 1.0, 1.1, {0, 0, 2}});
    c.push_back({"g4x3x1_2pulsesX", {3.2, 4.5, 2.5}, {4, 3, 1}, 0.9, 1.0, {2, 1, 0}});
    c.push_back({"g3x3x1_2pulsesXY", {3.0, 3.0, 2.5}, {3, 3, 1}, 1.0, 1.1, {2, 2, 0}});
    c.push_back({"g3x3x3_2pulsesXYZ", {3.0, 3.0, 3.0}, {3, 3, 3}, 1.0, 1.1, {2, 2, 2}});
    // Anisotropic boxes.
    c.push_back({"aniso6x3x2p5_g2x2x1", {6.0, 3.0, 2.5}, {2, 2, 1}, 0.9, 1.0, {1, 1, 0}});
    c.push_back({"aniso6x3x2p5_g4x2x2", {6.0, 3.0, 2.5}, {4, 2, 2}, 1.0, 1.2, {1, 1, 1}});
    c.push_back({"aniso6x3x2p5_g6x3x1", {6.0, 3.0, 2.5}, {6, 3, 1}, 0.9, 1.1, {2, 2, 0}});
    // Non-default pulse orders.
    {
        PlanCase k{"order_xyz_g2x2x2", {4.0, 4.0, 4.0}, {2, 2, 2}, 0.9, 1.0, {1, 1, 1}};
        k.dimOrder = {0, 1, 2};
        c.push_back(k);
    }
    {
        PlanCase k{"order_yxz_g4x3x1_2pulsesX", {3.2, 4.5, 2.5}, {4, 3, 1}, 0.9, 1.0, {2, 1, 0}};
        k.dimOrder = {1, 0, 2};
        c.push_back(k);
    }
    {
        PlanCase k{"order_xzy_g2x3x4", {4.0, 4.5, 4.8}, {2, 3, 4}, 0.9, 1.0, {1, 1, 1}};
        k.dimOrder = {0, 2, 1};
        k.density = 20.0;
        c.push_back(k);
    }
    // Receive slots aligned to 4 atoms.
    {
        PlanCase k{"align4_g2x2x2", {4.0, 4.0, 4.0}, {2, 2, 2}, 0.9, 1.0, {1, 1, 1}};
        k.alignment = 4;
        c.push_back(k);
    }
    {
        PlanCase k{"align4_g4x1x1_3pulses", {2.4, 3.8, 3.8}, {4, 1, 1}, 1.1, 1.5, {3, 0, 0}};
        k.alignment = 4;
        c.push_back(k);
    }
    {
        // No pulses: numLocal is still padded to the alignment.
        PlanCase k{"align4_g1x1x1", {3.0, 2.5, 2.5}, {1, 1, 1}, 0.9, 1.0, {0, 0, 0}};
        k.alignment = 4;
        k.density = 10.1;  // 189 atoms: not a multiple of 4
        k.seed = 17;
        c.push_back(k);
    }
    {
        PlanCase k{"align4_order_xyz_g3x3x1_2pulses", {3.0, 3.0, 2.5}, {3, 3, 1}, 1.0, 1.1, {2, 2, 0}};
        k.alignment = 4;
        k.dimOrder = {0, 1, 2};
        c.push_back(k);
    }
    // Dense (the proxy system's density), atoms on cell faces and a rank with no atoms.
    {
        PlanCase k{"dense100_g2x2x1", {2.4, 2.4, 2.4}, {2, 2, 1}, 0.9, 1.0, {1, 1, 0}};
        k.density = 100.0;
        k.boundaryAtoms = true;
        c.push_back(k);
    }
    {
        PlanCase k{"faces_g3x2x2", {4.5, 4.0, 4.0}, {3, 2, 2}, 0.9, 1.0, {1, 1, 1}};
        k.boundaryAtoms = true;
        k.seed = 7;
        c.push_back(k);
    }
    {
        // L * n / n rounds to just above L along y and just below it along x:
        // the top cells' upper faces must still be the box faces.
        PlanCase k{"faces_roundedTop_g3x3x1_2pulses", {2.71, 2.7, 2.5}, {3, 3, 1}, 0.9, 1.0, {2, 2, 0}};
        k.boundaryAtoms = true;
        k.seed = 5;
        c.push_back(k);
    }
    {
        PlanCase k{"faces_roundedTop_g5x1x3", {3.24, 2.3, 2.88}, {5, 1, 3}, 0.9, 1.0, {2, 0, 2}};
        k.boundaryAtoms = true;
        k.seed = 9;
        c.push_back(k);
    }
    {
        // rc == rlist: no Verlet buffer, so the halo is exactly as deep as the cutoff.
        PlanCase k{"rcEqualsRlist_g4x2x1", {3.2, 4.0, 2.5}, {4, 2, 1}, 1.0, 1.0, {2, 1, 0}};
        k.seed = 13;
        c.push_back(k);
    }
    {
        PlanCase k{"emptyRank_g4x1x1_2pulses", {3.2, 2.5, 2.5}, {4, 1, 1}, 0.9, 1.0, {2, 0, 0}};
        k.emptyRank = 2;
        c.push_back(k);
    }
    {
        PlanCase k{"emptyRank_g2x2x2", {4.0, 4.0, 4.0}, {2, 2, 2}, 0.9, 1.0, {1, 1, 1}};
        k.emptyRank = 0;  // the rank whose pulses all carry the periodic shift
        k.seed = 3;
        c.push_back(k);
    }
    {
        PlanCase k{"sparse_g3x3x3_2pulsesXYZ", {3.0, 3.0, 3.0}, {3, 3, 3}, 1.0, 1.1, {2, 2, 2}};
        k.density = 1.0;  // a few atoms: most ranks hold none
        k.seed = 11;
        c.push_back(k);
    }
    // Without corner and edge pruning: the whole slab along every pulse.
    for (const char* name : {"g2x2x2", "g3x3x3_2pulsesXYZ", "align4_order_xyz_g3x3x1_2pulses", "faces_g3x2x2"}) {
        PlanCase k = *std::find_if(c.begin(), c.end(), [&](const PlanCase& x) { return x.name == name; });
        k.name = std::string("unpruned_") + name;
        k.pruneCorners = false;
        c.push_back(k);
    }
    return c;
}

inline plan::DecompositionSpec specOf(const PlanCase& c) {
    plan::DecompositionSpec spec;
    spec.box.length = c.box;
    spec.grid = plan::RankGrid(c.grid);
    spec.rc = c.rc;
    spec.rlist = c.rlist;
    spec.dimOrder = c.dimOrder;
    spec.pruneCorners = c.pruneCorners;
    return spec;
}

// Uniform in [0, 1) from 53 random bits (the same numbers on every platform).
inline double uniform01(std::mt19937_64& engine) { return static_cast<double>(engine() >> 11) * 0x1.0p-53; }

inline double minimumImageDistance2(const Vec3d& a, const Vec3d& b, const Vec3d& box) {
    double r2 = 0.0;
    for (int d = 0; d < 3; ++d) {
        double dx = a[d] - b[d];
        dx -= box[d] * std::round(dx / box[d]);
        r2 += dx * dx;
    }
    return r2;
}

// Random atoms, uniform in the box but never closer than minDistance (so LJ
// forces stay finite and float comparisons meaningful). Some are moved by
// whole box lengths: wrapPositions must bring them back.
inline std::vector<Vec3d> randomAtoms(const PlanCase& c, const plan::Decomposition& dd, double minDistance = 0.1) {
    std::mt19937_64 engine(c.seed * 7919 + 17);
    const Vec3d L = c.box;
    const int target = static_cast<int>(std::lround(c.density * L.x * L.y * L.z));
    std::vector<Vec3d> atoms;
    const auto acceptable = [&](const Vec3d& x) {
        if (c.emptyRank >= 0 && dd.ownerRank(x) == c.emptyRank) return false;
        for (const Vec3d& y : atoms) {
            if (minimumImageDistance2(x, y, L) < minDistance * minDistance) return false;
        }
        return true;
    };
    if (c.boundaryAtoms) {
        // Exactly on cell faces (the owner is the upper cell) and at the origin.
        for (int d = 0; d < 3; ++d) {
            for (int k = 0; k < c.grid[d]; ++k) {
                Vec3d x{0.37 * L.x + 0.05 * k, 0.61 * L.y + 0.05 * k, 0.23 * L.z + 0.05 * k};
                x[d] = L[d] * k / c.grid[d];
                if (acceptable(x)) atoms.push_back(x);
            }
        }
        // The origin (its periodic images land exactly on the top cells' upper
        // faces) and the largest coordinates below the box lengths.
        const Vec3d origin{0.0, 0.0, 0.0};
        if (acceptable(origin)) atoms.push_back(origin);
        const Vec3d top{std::nextafter(L.x, 0.0), std::nextafter(L.y, 0.0), std::nextafter(L.z, 0.0)};
        if (acceptable(top)) atoms.push_back(top);
        for (int d = 0; d < 3; ++d) {
            Vec3d x{0.5 * L.x, 0.5 * L.y, 0.5 * L.z};
            x[d] = std::nextafter(L[d], 0.0);
            if (acceptable(x)) atoms.push_back(x);
        }
    }
    const std::size_t numOnFaces = atoms.size();
    int attempts = 0;
    while (static_cast<int>(atoms.size()) < target && attempts < 50 * target + 100) {
        ++attempts;
        const Vec3d x{L.x * uniform01(engine), L.y * uniform01(engine), L.z * uniform01(engine)};
        if (acceptable(x)) atoms.push_back(x);
    }
    // Atoms outside the box, as GROMACS files have them (not those on faces:
    // wrapping back would move them off the face by a rounding error).
    for (std::size_t i = numOnFaces; i < atoms.size(); i += 7) atoms[i].x += L.x;
    for (std::size_t i = numOnFaces + 3; i < atoms.size(); i += 11) atoms[i].y -= 2.0 * L.y;
    for (std::size_t i = numOnFaces + 5; i < atoms.size(); i += 13) atoms[i].z -= L.z;
    return atoms;
}

// Every rank's plan, built both ways, and the global id of every local atom.
struct Scenario {
    PlanCase c;
    plan::Decomposition dd;
    std::vector<Vec3d> positions;           // wrapped; the atom's global id is its index
    std::vector<std::vector<int>> homeIds;  // partitionAtoms
    std::vector<std::vector<Vec3d>> homePositions;
    plan::InProcessPlans inProcess;
    std::vector<runtime::RankPlan> overWorld;
    std::vector<std::vector<int>> localIds;  // forwarded ids, -1 on padding

    int numRanks() const { return dd.grid().size(); }
    const plan::ParticleHaloPlan& plan(int r) const { return inProcess.plans[r]; }
    const std::vector<Vec3d>& local(int r) const { return inProcess.localPositions[r]; }
};

inline Scenario buildScenario(const PlanCase& c) {
    Scenario s{c, plan::Decomposition(specOf(c)), {}, {}, {}, {}, {}, {}};
    s.positions = randomAtoms(c, s.dd);
    plan::wrapPositions(s.positions, s.dd.box());
    s.homeIds = plan::partitionAtoms(s.dd, s.positions);
    const int n = s.numRanks();
    s.homePositions.resize(n);
    for (int r = 0; r < n; ++r) {
        for (int id : s.homeIds[r]) s.homePositions[r].push_back(s.positions[id]);
    }
    s.inProcess = plan::buildParticlePlansInProcess(s.dd, s.homePositions, c.alignment);
    s.overWorld.resize(n);
    s.localIds.resize(n);
    runtime::runInProcess(n, [&](runtime::World& world) {
        const int r = world.rank();
        s.overWorld[r] = runtime::buildParticlePlan(s.dd, s.homePositions[r], world, c.alignment);
        transport::ReferenceTransport reference(world);
        reference.setPlan(s.overWorld[r].plan);
        std::vector<int> ids(static_cast<std::size_t>(s.overWorld[r].plan.numLocal), -1);
        std::copy(s.homeIds[r].begin(), s.homeIds[r].end(), ids.begin());
        reference.forward(std::span<int>(ids));
        s.localIds[r] = std::move(ids);
    });
    return s;
}

// Whole box lengths between a halo atom and its owner's position, per dim:
// the image index, which is 0 or 1 along decomposed dims (halos lie above).
inline plan::Int3 imageShift(const Vec3d& local, const Vec3d& owner, const Vec3d& box) {
    plan::Int3 k{};
    for (int d = 0; d < 3; ++d) k[d] = static_cast<int>(std::lround((local[d] - owner[d]) / box[d]));
    return k;
}

}  // namespace haloex::testing
