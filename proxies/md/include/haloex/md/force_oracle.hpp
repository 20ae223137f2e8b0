#pragma once
// CPU force oracle: LJ + reaction-field pair forces and energies with cell
// lists, in float or double. (a) the whole periodic system (minimum image);
// (b) one rank's home + halo atoms under the zone-mask ownership rule, with
// periodic images only along undecomposed dimensions -- the forces on halo
// atoms are then sent home by a reverse exchange.
#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "haloex/core/vec3.hpp"
#include "haloex/md/forcefield.hpp"
#include "haloex/plan/box.hpp"
#include "haloex/plan/particle_plan.hpp"

namespace haloex::md {

template <class T>
struct PairForces {
    std::vector<Vec3<T>> forces;  // one per input atom (kJ mol^-1 nm^-1)
    double ljEnergy = 0.0;        // shifted LJ, kJ/mol
    double coulombEnergy = 0.0;   // reaction-field pair energy, without the self term
    double virial = 0.0;          // -1/2 sum r_ij . f_ij (kJ/mol), for the pressure
    std::int64_t pairsWithinCutoff = 0;
};

// Whole system: positions wrapped into the box; charges per atom (e).
template <class T>
PairForces<T> computeForcesSingleDomain(std::span<const Vec3<T>> positions, std::span<const T> charges,
                                        const plan::Box& box, const ForceField& ff);

// One rank: local atoms (home + received, padding skipped through its mask).
// Pair (i, j) counts iff zonePairComputed(mask[i], mask[j]) and r < rc;
// `periodic[d]` is true for undecomposed dimensions (minimum image there).
template <class T>
PairForces<T> computeForcesRank(std::span<const Vec3<T>> localPositions, std::span<const T> charges,
                                std::span<const plan::ZoneMask> zoneMask, const plan::Box& box,
                                std::array<bool, 3> periodic, const ForceField& ff);

// Reaction-field self energy -1/2 f c_rf sum q_i^2 (GROMACS adds it to Coulomb).
double coulombSelfEnergy(std::span<const double> charges, const ForceField& ff);

}  // namespace haloex::md
