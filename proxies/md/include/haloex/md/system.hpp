#pragma once
// The proxy system (docs/md-engine.md#the-system-and-its-defaults): atoms of two types (+q / -q) in an orthorhombic
// periodic box, and the lattice start recipe. Units: nm, ps, u, K, kJ/mol.
#include <cstdint>
#include <vector>

#include "haloex/core/vec3.hpp"
#include "haloex/md/forcefield.hpp"
#include "haloex/plan/box.hpp"

namespace haloex::md {

// Smallest system makeLatticeSystem() builds: from 1000 atoms on, the box is
// longer than 2 nm (> 2 rlist for the default buffer) and the FCC start keeps
// neighbours more than 0.2 nm apart (smaller N can give tight lattices).
inline constexpr int kMinAtoms = 1000;
inline constexpr double kNumberDensity = 100.0;  // atoms per nm^3

struct System {
    plan::Box box;
    std::vector<Vec3d> positions;         // nm
    std::vector<Vec3d> velocities;        // nm/ps, same size as positions
    std::vector<int> types;               // 0: +q, 1: -q
    std::vector<std::int64_t> globalIds;  // stable atom identity, 0-based

    int size() const { return static_cast<int>(positions.size()); }
    std::vector<double> charges(const ForceField& ff) const;  // e
    std::vector<double> masses(const ForceField& ff) const;   // u
    // Throws InvalidInput unless the box is valid, all per-atom arrays have
    // the same length and every type is 0 or 1.
    void validate() const;
};

// The lattice start: number density 100/nm^3, cubic box L = (N/100)^(1/3),
// N distinct random sites of an FCC lattice (k cells per side, the smallest k
// with 4k^3 >= N, offset a quarter cell), the first half +q, velocities from a
// Maxwell-Boltzmann distribution at temperatureK with the centre-of-mass
// momentum removed and then scaled to exactly temperatureK. Identical on
// every platform for a given seed. Throws InvalidInput for odd N, N < kMinAtoms
// or a negative/non-finite temperature.
System makeLatticeSystem(int numAtoms, std::uint64_t seed, double temperatureK, const ForceField& ff);

// Total momentum sum m v (u nm/ps).
Vec3d totalMomentum(const System& system, const ForceField& ff);
// Subtracts the centre-of-mass velocity from every atom.
void removeCentreOfMassMotion(System& system, const ForceField& ff);
// 1/2 sum m v^2 in kJ/mol (u nm^2 ps^-2 = kJ/mol).
double kineticEnergy(const System& system, const ForceField& ff);
// Degrees of freedom of the proxy system: 3N - 3 (COM motion removed).
int degreesOfFreedom(int numAtoms);
// 2 Ekin / (dof kB), in K.
double temperature(const System& system, const ForceField& ff);

}  // namespace haloex::md
