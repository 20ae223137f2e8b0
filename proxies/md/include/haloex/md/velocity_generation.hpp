#pragma once
// Start velocities for a structure without them (a .gro with no velocity
// columns, or all zero): GROMACS's gen_vel, with numbers that depend on
// nothing but the seed and each atom's global id, never on the atom's place
// in the file or on the decomposition (how many ranks, which rank holds it).
#include <cstdint>

#include "haloex/md/forcefield.hpp"
#include "haloex/md/system.hpp"

namespace haloex::md {

// True when every velocity is exactly zero (or there are no atoms): .gro files
// without velocity columns read as zero velocities.
bool hasNoVelocities(const System& system);

// Each component of atom i's velocity is a normal deviate with variance
// kB T / m drawn from a counter-based stream keyed by (seed, global id i);
// then the centre-of-mass motion is removed and the velocities are scaled so
// that the kinetic temperature (3N - 3 degrees of freedom) is exactly
// temperatureK, as the lattice start does (GROMACS's gen_vel scales before
// it removes the centre-of-mass motion, so it ends slightly off the target).
// Identical on every platform for a given seed. Throws InvalidInput for a
// negative or non-finite temperature.
void generateMaxwellBoltzmannVelocities(System& system, std::uint64_t seed, double temperatureK, const ForceField& ff);

// The unscaled draw behind generateMaxwellBoltzmannVelocities: three
// independent standard normal deviates for (seed, globalId).
struct NormalTriple {
    double x, y, z;
};
NormalTriple standardNormalsFor(std::uint64_t seed, std::int64_t globalId);

}  // namespace haloex::md
