#include "haloex/md/verlet_buffer.hpp"

#include <cmath>
#include <initializer_list>
#include <numbers>

namespace haloex::md {
namespace {

// Shifted LJ + reaction field for a pair with charge product qq.
double pairPotential(const ForceField& ff, double r, double qq) {
    const double r2 = r * r;
    const double r6 = r2 * r2 * r2;
    const double lj = ff.c12() / (r6 * r6) - ff.c6() / r6 - ff.ljShift();
    const double rf = kCoulombFactor * qq * (1.0 / r + ff.krf() * r2 - ff.crf());
    return lj + rf;
}

}  // namespace

double estimateBufferDrift(const ForceField& ff, double density, double temperature, double rlist, int nstlist,
                           double dt) {
    const double lifetime = (nstlist - 1) * dt;
    if (lifetime <= 0.0) return 0.0;
    const double kT = kBoltzmann * temperature;
    const double variance = 2.0 * kT * lifetime * lifetime / ff.mass;
    const double sigma = std::sqrt(variance);
    const double norm = 1.0 / std::sqrt(2.0 * std::numbers::pi * variance);
    constexpr int kSteps = 200;
    double error = 0.0;
    // Equal numbers of +q and -q atoms: half the partners are like, half unlike.
    for (double qq : {ff.charge * ff.charge, -ff.charge * ff.charge}) {
        const double r0Max = rlist + 7.0 * sigma;
        const double dr0 = (r0Max - rlist) / kSteps;
        double perType = 0.0;
        for (int i = 0; i < kSteps; ++i) {
            const double r0 = rlist + (i + 0.5) * dr0;
            const double rMin = std::max(0.5 * ff.sigma, r0 - 7.0 * sigma);
            if (rMin >= ff.rc) continue;
            const double dr = (ff.rc - rMin) / kSteps;
            double inside = 0.0;
            for (int j = 0; j < kSteps; ++j) {
                const double r = rMin + (j + 0.5) * dr;
                const double g = norm * std::exp(-(r - r0) * (r - r0) / (2.0 * variance));
                inside += g * pairPotential(ff, r, qq) * dr;
            }
            perType += 4.0 * std::numbers::pi * r0 * r0 * inside * dr0;
        }
        error += 0.5 * density * 0.5 * perType;  // 1/2: each pair shared by two atoms
    }
    return std::abs(error) / lifetime;
}

BufferEstimate chooseRlist(const ForceField& ff, double density, double temperature, int nstlist, double dt,
                           double tolerance) {
    constexpr double kStep = 0.005;
    BufferEstimate best{ff.rc, nstlist, estimateBufferDrift(ff, density, temperature, ff.rc, nstlist, dt)};
    double rlist = ff.rc;
    while (best.estimatedDrift > tolerance && rlist < ff.rc + 1.0) {
        rlist = std::round((rlist + kStep) / kStep) * kStep;
        best = {rlist, nstlist, estimateBufferDrift(ff, density, temperature, rlist, nstlist, dt)};
    }
    return best;
}

double outerListTolerance(double tolerance, int nstlist, double dt) {
    return (nstlist - 1) * dt < kShortListLifePs ? tolerance * kShortListToleranceFraction : tolerance;
}

double estimatePruneDrift(const ForceField& ff, double density, double temperature, double rlistInner,
                          int pruneInterval, double dt) {
    // estimateBufferDrift's list lives nstlist - 1 steps.
    return estimateBufferDrift(ff, density, temperature, rlistInner, pruneInterval + 1, dt);
}

BufferEstimate chooseRlistInner(const ForceField& ff, double density, double temperature, int pruneInterval, double dt,
                                double tolerance, double rlist) {
    BufferEstimate inner = chooseRlist(ff, density, temperature, pruneInterval + 1, dt, tolerance);
    if (inner.rlist > rlist) {
        inner.rlist = rlist;
        inner.estimatedDrift = estimatePruneDrift(ff, density, temperature, rlist, pruneInterval, dt);
    }
    inner.nstlist = pruneInterval;
    return inner;
}

}  // namespace haloex::md
