// The search settings and the kernel constants: decisions shared by the GPU
// build and its CPU reference (the grid choice: grid_choice.hpp).
#include <algorithm>
#include <bit>
#include <cmath>
#include <fmt/format.h>

#include "haloex/core/error.hpp"
#include "haloex/md/gpu/cluster_reference.hpp"

namespace haloex::md::gpu {

void validateSearchSettings(const SearchSettings& settings, const char* where) {
    settings.box.validate();
    if (!(settings.rlist > 0.0) || !std::isfinite(settings.rlist)) {
        throwError(ErrorKind::InvalidInput, fmt::format("{}: rlist = {} nm must be positive", where, settings.rlist));
    }
    if (settings.maxJClustersPerEntry < 1) {
        throwError(ErrorKind::InvalidInput, fmt::format("{}: maxJClustersPerEntry = {} must be at least 1", where,
                                                        settings.maxJClustersPerEntry));
    }
    for (int d = 0; d < 3; ++d) {
        if (settings.periodic[d] && !(settings.box.length[d] > 2.0 * settings.rlist)) {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("{}: the box length along {} ({} nm) must exceed 2 rlist = {} nm in a periodic "
                                   "(undecomposed) dimension; use a larger system, a smaller rlist or decompose "
                                   "that dimension",
                                   where, "xyz"[d], settings.box.length[d], 2.0 * settings.rlist));
        }
    }
}

float rlistSquared(double rlist) { return static_cast<float>(rlist * rlist); }

float columnSearchRadius(double rlist) { return static_cast<float>(rlist * (1.0 + 1e-5) + 1e-5); }

Float3 boxLengthsF(const plan::Box& box) {
    return {static_cast<float>(box.length.x), static_cast<float>(box.length.y), static_cast<float>(box.length.z)};
}

PairConstants makePairConstants(const ForceField& ff) {
    PairConstants c{};
    c.rc2 = static_cast<float>(ff.rc * ff.rc);
    c.c6 = static_cast<float>(ff.c6());
    c.c12 = static_cast<float>(ff.c12());
    c.c6x6 = static_cast<float>(6.0 * ff.c6());
    c.c12x12 = static_cast<float>(12.0 * ff.c12());
    c.ljShift = static_cast<float>(ff.ljShift());
    c.krf = static_cast<float>(ff.krf());
    c.twoKrf = static_cast<float>(2.0 * ff.krf());
    c.crf = static_cast<float>(ff.crf());
    c.sqrtCoulomb = static_cast<float>(std::sqrt(kCoulombFactor));
    return c;
}

std::int64_t PairListHost::atomPairs() const {
    std::int64_t n = 0;
    for (const ClusterPair& p : pairs) n += std::popcount(p.maskLo) + std::popcount(p.maskHi);
    return n;
}

}  // namespace haloex::md::gpu
