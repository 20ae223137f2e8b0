#pragma once
// The proxy system's interactions (docs/md-engine.md#the-system-and-its-defaults): Lennard-Jones cut at rc with the
// potential shifted to zero there, plus reaction field with eps_rf = infinity.
// Units: nm, ps, kJ/mol, e, u. Energies follow GROMACS's convention: the
// reported Coulomb energy includes the reaction-field self term.
#include <cmath>

namespace haloex::md {

inline constexpr double kCoulombFactor = 138.935458;  // f = 1/(4 pi eps0), kJ mol^-1 nm e^-2
inline constexpr double kBoltzmann = 0.0083144626;    // kJ mol^-1 K^-1

struct ForceField {
    double rc = 0.9;         // interaction cutoff (nm)
    double sigma = 0.2;      // LJ sigma (nm), both types
    double epsilon = 2.494;  // LJ epsilon (kJ/mol), both types
    double charge = 0.1;     // |q| (e): type 0 has +charge, type 1 has -charge
    double mass = 12.0;      // u, both types

    double c6() const { return 4.0 * epsilon * std::pow(sigma, 6); }
    double c12() const { return 4.0 * epsilon * std::pow(sigma, 12); }
    double krf() const { return 1.0 / (2.0 * rc * rc * rc); }
    double crf() const { return 3.0 / (2.0 * rc); }
    // LJ potential at rc, subtracted so the potential is zero at the cutoff.
    double ljShift() const {
        const double rc6 = std::pow(rc, 6);
        return c12() / (rc6 * rc6) - c6() / rc6;
    }
    double chargeOfType(int type) const { return type == 0 ? charge : -charge; }
    // Reaction-field self energy of one charge: -1/2 f c_rf q^2.
    double selfEnergy(double q) const { return -0.5 * kCoulombFactor * crf() * q * q; }
};

}  // namespace haloex::md
