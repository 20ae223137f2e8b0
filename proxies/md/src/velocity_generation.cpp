#include "haloex/md/velocity_generation.hpp"

#include <cmath>
#include <fmt/format.h>

#include "haloex/core/error.hpp"
#include "haloex/md/portable_math.hpp"

namespace haloex::md {
namespace {

// SplitMix64's output function (Steele, Lea and Flood 2014): a bijective
// 64-bit mix whose outputs over a counter pass BigCrush, which makes
// mix(key + counter * golden) a counter-based generator.
std::uint64_t mix64(std::uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

// The uniforms of one atom: a stream keyed by (seed, global id), so an atom's
// velocity never depends on which other atoms exist or where they are.
class AtomStream {
public:
    AtomStream(std::uint64_t seed, std::int64_t globalId)
        // A domain constant keeps these streams apart from other uses of the seed.
        : key_(mix64(mix64(seed ^ 0x4d42'5645'4c53'0001ULL) ^ static_cast<std::uint64_t>(globalId))) {}

    // Uniform in (-1, 1) from 53 random bits.
    double symmetricUniform() {
        const std::uint64_t bits = mix64(key_ + (++counter_) * 0x9e3779b97f4a7c15ULL);
        return static_cast<double>(bits >> 11) * 0x1.0p-52 - 1.0;
    }

    // Two standard normal deviates (Marsaglia's polar method, as PortableRandom).
    void normalPair(double& a, double& b) {
        double u = 0.0, v = 0.0, s = 0.0;
        do {
            u = symmetricUniform();
            v = symmetricUniform();
            s = u * u + v * v;
        } while (s >= 1.0 || s == 0.0);
        const double factor = std::sqrt(-2.0 * portableLog(s) / s);  // sqrt is exact in IEEE 754
        a = u * factor;
        b = v * factor;
    }

private:
    std::uint64_t key_;
    std::uint64_t counter_ = 0;
};

}  // namespace

bool hasNoVelocities(const System& system) {
    for (const Vec3d& v : system.velocities) {
        if (v[0] != 0.0 || v[1] != 0.0 || v[2] != 0.0) return false;
    }
    return true;
}

NormalTriple standardNormalsFor(std::uint64_t seed, std::int64_t globalId) {
    AtomStream stream(seed, globalId);
    NormalTriple n{};
    double unused = 0.0;
    stream.normalPair(n.x, n.y);
    stream.normalPair(n.z, unused);
    return n;
}

void generateMaxwellBoltzmannVelocities(System& system, std::uint64_t seed, double temperatureK, const ForceField& ff) {
    if (!std::isfinite(temperatureK) || temperatureK < 0.0) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("cannot generate velocities at {} K; give a finite temperature >= 0", temperatureK));
    }
    const std::vector<double> masses = system.masses(ff);
    system.velocities.resize(system.positions.size());
    for (std::size_t i = 0; i < system.velocities.size(); ++i) {
        const double sigma = std::sqrt(kBoltzmann * temperatureK / masses[i]);
        const NormalTriple n = standardNormalsFor(seed, system.globalIds[i]);
        system.velocities[i] = Vec3d{sigma * n.x, sigma * n.y, sigma * n.z};
    }
    removeCentreOfMassMotion(system, ff);
    const double sampled = temperature(system, ff);
    if (sampled > 0.0) {
        const double scale = std::sqrt(temperatureK / sampled);
        for (auto& v : system.velocities) v *= scale;
    }
}

}  // namespace haloex::md
