#include "haloex/md/system.hpp"

#include <cmath>
#include <fmt/format.h>
#include <numeric>
#include <utility>

#include "haloex/core/error.hpp"
#include "haloex/md/portable_math.hpp"
#include "haloex/md/random.hpp"

namespace haloex::md {

std::vector<double> System::charges(const ForceField& ff) const {
    std::vector<double> q(types.size());
    for (std::size_t i = 0; i < types.size(); ++i) q[i] = ff.chargeOfType(types[i]);
    return q;
}

std::vector<double> System::masses(const ForceField& ff) const {
    // Both types have the same mass in the proxy system.
    return std::vector<double>(types.size(), ff.mass);
}

void System::validate() const {
    box.validate();
    const std::size_t n = positions.size();
    if (velocities.size() != n || types.size() != n || globalIds.size() != n) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("inconsistent system: {} positions, {} velocities, {} types, {} global ids; "
                               "every per-atom array needs one entry per atom",
                               n, velocities.size(), types.size(), globalIds.size()));
    }
    for (std::size_t i = 0; i < n; ++i) {
        if (types[i] != 0 && types[i] != 1) {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("atom {} has type {}; the proxy system has types 0 (+q) and 1 (-q)", i, types[i]));
        }
    }
}

namespace {

void checkLatticeRequest(int numAtoms, double temperatureK, const ForceField& ff) {
    if (numAtoms < kMinAtoms) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("the lattice start needs at least {} atoms (asked for {}): smaller systems give a box "
                               "shorter than 2 nm (at most 2 rlist for the default buffer) and tight lattices",
                               kMinAtoms, numAtoms));
    }
    if (numAtoms % 2 != 0) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("the lattice start needs an even number of atoms (asked for {}): half are +q and half "
                               "-q so that the system is neutral",
                               numAtoms));
    }
    if (!std::isfinite(temperatureK) || temperatureK < 0.0) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("start temperature {} K is invalid; give a finite temperature >= 0", temperatureK));
    }
    if (!std::isfinite(ff.mass) || ff.mass <= 0.0) {
        throwError(ErrorKind::InvalidInput, fmt::format("atom mass {} u is invalid; it must be positive", ff.mass));
    }
}

}  // namespace

System makeLatticeSystem(int numAtoms, std::uint64_t seed, double temperatureK, const ForceField& ff) {
    checkLatticeRequest(numAtoms, temperatureK, ff);
    const int n = numAtoms;

    System sys;
    const double length = portableCbrt(static_cast<double>(n) / kNumberDensity);
    sys.box.length = {length, length, length};

    // FCC: k cells per side, 4 sites per cell, offset a quarter cell so that no
    // site sits on the box faces.
    int k = 1;
    while (4LL * k * k * k < n) ++k;
    const double spacing = length / k;
    const std::int64_t numSites = 4LL * k * k * k;
    static constexpr double kBasis[4][3] = {{0.0, 0.0, 0.0}, {0.5, 0.5, 0.0}, {0.5, 0.0, 0.5}, {0.0, 0.5, 0.5}};

    PortableRandom random(seed);
    // Partial Fisher-Yates: the first n entries become n distinct sites in
    // random order, so that +q (first half) and -q atoms are mixed in space.
    std::vector<std::int64_t> sites(static_cast<std::size_t>(numSites));
    std::iota(sites.begin(), sites.end(), std::int64_t{0});
    for (std::int64_t i = 0; i < n; ++i) {
        const auto j = i + static_cast<std::int64_t>(random.below(static_cast<std::uint64_t>(numSites - i)));
        std::swap(sites[static_cast<std::size_t>(i)], sites[static_cast<std::size_t>(j)]);
    }

    sys.positions.resize(n);
    sys.types.resize(n);
    sys.globalIds.resize(n);
    for (int i = 0; i < n; ++i) {
        const std::int64_t site = sites[static_cast<std::size_t>(i)];
        const std::int64_t cell = site / 4;
        const auto* basis = kBasis[site % 4];
        const std::int64_t cellIndex[3] = {cell % k, (cell / k) % k, cell / (std::int64_t{k} * k)};
        for (int d = 0; d < 3; ++d) {
            sys.positions[i][d] = spacing * (static_cast<double>(cellIndex[d]) + basis[d] + 0.25);
        }
        sys.types[i] = i < n / 2 ? 0 : 1;
        sys.globalIds[i] = i;
    }

    // Maxwell-Boltzmann: each component normal with variance kB T / m; then
    // remove the centre-of-mass motion and scale to exactly the target (the
    // sample temperature of a finite system scatters around it).
    const double sigma = std::sqrt(kBoltzmann * temperatureK / ff.mass);
    sys.velocities.resize(n);
    for (auto& v : sys.velocities) {
        for (int d = 0; d < 3; ++d) v[d] = sigma * random.normal();
    }
    removeCentreOfMassMotion(sys, ff);
    const double sampled = temperature(sys, ff);
    if (sampled > 0.0) {
        const double scale = std::sqrt(temperatureK / sampled);
        for (auto& v : sys.velocities) v *= scale;
    }
    return sys;
}

Vec3d totalMomentum(const System& system, const ForceField& ff) {
    const std::vector<double> m = system.masses(ff);
    Vec3d p{};
    for (std::size_t i = 0; i < system.velocities.size(); ++i) p += m[i] * system.velocities[i];
    return p;
}

void removeCentreOfMassMotion(System& system, const ForceField& ff) {
    if (system.velocities.empty()) return;
    const std::vector<double> m = system.masses(ff);
    const double totalMass = std::accumulate(m.begin(), m.end(), 0.0);
    const Vec3d vcom = totalMomentum(system, ff) * (1.0 / totalMass);
    for (auto& v : system.velocities) v -= vcom;
}

double kineticEnergy(const System& system, const ForceField& ff) {
    const std::vector<double> m = system.masses(ff);
    double twiceEkin = 0.0;
    for (std::size_t i = 0; i < system.velocities.size(); ++i) twiceEkin += m[i] * norm2(system.velocities[i]);
    return 0.5 * twiceEkin;
}

int degreesOfFreedom(int numAtoms) { return 3 * numAtoms - 3; }

double temperature(const System& system, const ForceField& ff) {
    const int dof = degreesOfFreedom(static_cast<int>(system.velocities.size()));
    if (dof <= 0) return 0.0;
    return 2.0 * kineticEnergy(system, ff) / (dof * kBoltzmann);
}

}  // namespace haloex::md
