#pragma once
// Velocity-rescaling thermostat (Bussi, Donadio, Parrinello 2007): the
// kinetic energy follows a stochastic process with the canonical
// distribution. Every rank draws the same numbers (same seed, same reduced
// kinetic energy), so no broadcast is needed.
#include <cstdint>

#include "haloex/md/random.hpp"

namespace haloex::md {

class Thermostat {
public:
    explicit Thermostat(std::uint64_t seed) : random_(seed ^ 0x7e57ab1eULL) {}

    // Scale factor lambda for the velocities, given the current kinetic
    // energy (kJ/mol), degrees of freedom, reference temperature (K), coupling
    // time tau (ps) and the interval between couplings (ps).
    double scale(double kinetic, int dof, double temperature, double tau, double interval);

    // The random stream's position, for checkpoints (a restart continues it).
    PortableRandomState randomState() const { return random_.state(); }
    void setRandomState(const PortableRandomState& state) { random_.setState(state); }

private:
    double sumOfSquaredNormals(int n);  // chi-squared with n degrees of freedom
    double gamma(double shape);         // Gamma(shape, 1), Marsaglia-Tsang
    PortableRandom random_;
};

}  // namespace haloex::md
