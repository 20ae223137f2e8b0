#pragma once
// Systems, rank decompositions and force comparisons shared by the MD kernel
// tests (CPU reference and GPU). Positions are rounded to float once; the
// double oracle then sees exactly the float values the kernels see, so the
// comparisons measure arithmetic, not input rounding.
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "haloex/core/vec3.hpp"
#include "haloex/md/force_oracle.hpp"
#include "haloex/md/forcefield.hpp"
#include "haloex/md/gpu/cluster_reference.hpp"
#include "haloex/plan/box.hpp"
#include "haloex/plan/particle_plan.hpp"

namespace haloex::testing {

struct FloatSystem {
    std::string name;
    plan::Box box;
    std::vector<Vec3f> x;  // inside [0, L)
    std::vector<float> q;  // e
};

// tests/data/ref-3000.gro (docs/md-engine.md fixture).
FloatSystem loadRef3000(const md::ForceField& ff);
// The lattice start of docs/md-engine.md#the-system-and-its-defaults with every atom displaced by up to `jitter` nm.
FloatSystem latticeSystem(int numAtoms, std::uint64_t seed, double jitter, const md::ForceField& ff);
// Uniformly random positions (close pairs possible: for list checks, not force accuracy).
FloatSystem uniformSystem(int numAtoms, double boxLength, std::uint64_t seed, const md::ForceField& ff);
// The same in a rectangular box (tall boxes give columns of many clusters).
FloatSystem uniformSystemInBox(int numAtoms, Vec3d box, std::uint64_t seed, const md::ForceField& ff);

// One rank's local atoms after an in-process plan build (docs/planner.md).
struct RankSystem {
    int rank = 0;
    plan::Box box;
    std::array<bool, 3> periodic{true, true, true};
    int numHome = 0;
    int numLocal = 0;
    std::vector<Vec3f> x;  // NaN for padding
    std::vector<float> q;  // 0 for padding
    std::vector<plan::ZoneMask> zone;
    std::vector<int> globalId;  // -1 for padding
};
std::vector<RankSystem> decompose(const FloatSystem& system, plan::Int3 grid, double rc, double rlist, int alignment);

md::PairForces<double> oracleSingle(const FloatSystem& system, const md::ForceField& ff);
md::PairForces<double> oracleRank(const RankSystem& rank, const md::ForceField& ff);

struct ForceDiff {
    double relativeNorm = 0.0;  // ||f - f_ref|| / ||f_ref|| over the atoms compared
    double maxAbs = 0.0;
    int worstAtom = -1;
    std::string report;  // the worst atoms, for the failure message
};
// Compares atoms [0, count) (count < 0: all), skipping those with skip[i].
ForceDiff compareForces(std::span<const Vec3f> got, std::span<const Vec3d> expected, int count = -1,
                        std::span<const bool> skip = {});

double relativeDifference(double got, double expected);

// Float kernels and the double oracle may decide a pair lying within an ulp
// of rc differently (a few in 10^6 pairs): allow that many.
std::int64_t allowedPairCountDifference(std::int64_t expected);
// Energy totals are small differences of large sums: compare the difference
// with the sum of |pair terms| (`magnitude`), not with the total.
bool energyAgrees(double got, double expected, double magnitude, double tolerance);

// The first home slot of `layout` whose atom breaks the run 0, 1, 2, ...
// (empty slots skipped), or "" when the home slots hold exactly the numHome
// home atoms in order: what atoms in cell order (gpu::CellOrder) give.
std::string firstHomeSlotOutOfOrder(const md::gpu::ClusterLayoutHost& layout, int numHome);
// Atoms [0, numHome) of x, q and zone (where not empty) put in `order` (place
// i takes atom order[i]); the halo atoms after them stay.
void reorderHome(std::span<const int> order, int numHome, std::vector<Vec3f>& x, std::vector<float>& q,
                 std::vector<plan::ZoneMask>& zone);

}  // namespace haloex::testing
