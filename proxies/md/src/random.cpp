#include "haloex/md/random.hpp"

#include <cmath>

#include "haloex/core/error.hpp"
#include "haloex/md/portable_math.hpp"

namespace haloex::md {

double PortableRandom::uniform() {
    // The top 53 bits fill a double's mantissa exactly.
    return static_cast<double>(next() >> 11) * 0x1.0p-53;
}

std::uint64_t PortableRandom::below(std::uint64_t n) {
    HALOEX_ASSERT(n >= 1, "PortableRandom::below needs n >= 1");
    // Reject the lowest 2^64 mod n values so every residue is equally likely.
    const std::uint64_t threshold = (std::uint64_t{0} - n) % n;
    for (;;) {
        const std::uint64_t x = next();
        if (x >= threshold) return x % n;
    }
}

double PortableRandom::normal() {
    if (haveSpare_) {
        haveSpare_ = false;
        return spareNormal_;
    }
    double u = 0.0, v = 0.0, s = 0.0;
    do {
        u = 2.0 * uniform() - 1.0;
        v = 2.0 * uniform() - 1.0;
        s = u * u + v * v;
    } while (s >= 1.0 || s == 0.0);
    const double factor = std::sqrt(-2.0 * portableLog(s) / s);  // sqrt is exact in IEEE 754
    spareNormal_ = v * factor;
    haveSpare_ = true;
    return u * factor;
}

void PortableRandom::setState(const PortableRandomState& state) {
    engine_.seed(state.seed);
    engine_.discard(state.draws);
    seed_ = state.seed;
    draws_ = state.draws;
    spareNormal_ = state.spareNormal;
    haveSpare_ = state.haveSpare;
}

}  // namespace haloex::md
