#include "haloex/md/thermostat.hpp"

#include <algorithm>
#include <cmath>

#include "haloex/md/forcefield.hpp"

namespace haloex::md {

double Thermostat::gamma(double shape) {
    // Marsaglia & Tsang (2000), shape >= 1.
    const double d = shape - 1.0 / 3.0;
    const double c = 1.0 / std::sqrt(9.0 * d);
    for (;;) {
        double x, v;
        do {
            x = random_.normal();
            v = 1.0 + c * x;
        } while (v <= 0.0);
        v = v * v * v;
        const double u = random_.uniform();
        if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
        if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
    }
}

double Thermostat::sumOfSquaredNormals(int n) {
    if (n <= 0) return 0.0;
    if (n < 8) {
        double s = 0.0;
        for (int i = 0; i < n; ++i) {
            const double g = random_.normal();
            s += g * g;
        }
        return s;
    }
    return 2.0 * gamma(0.5 * n);  // chi^2_n = 2 Gamma(n/2)
}

double Thermostat::scale(double kinetic, int dof, double temperature, double tau, double interval) {
    if (kinetic <= 0.0 || dof <= 0) return 1.0;
    const double reference = 0.5 * dof * kBoltzmann * temperature;
    const double c = tau > 0.0 ? std::exp(-interval / tau) : 0.0;
    const double r1 = random_.normal();
    const double rest = sumOfSquaredNormals(dof - 1);
    const double target = kinetic + (1.0 - c) * (reference * (r1 * r1 + rest) / dof - kinetic) +
                          2.0 * r1 * std::sqrt(c * (1.0 - c) * kinetic * reference / dof);
    return std::sqrt(std::max(target, 0.0) / kinetic);
}

}  // namespace haloex::md
