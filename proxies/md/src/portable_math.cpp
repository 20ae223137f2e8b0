#include "haloex/md/portable_math.hpp"

#include <cmath>

#include "haloex/core/error.hpp"

namespace haloex::md {

double portableLog(double x) {
    HALOEX_ASSERT(x > 0.0 && std::isfinite(x), "portableLog needs a positive finite argument");
    // x = m 2^e with m in [sqrt(1/2), sqrt(2)): frexp and the doubling are exact.
    int e = 0;
    double m = std::frexp(x, &e);
    if (m < 0.70710678118654752440) {
        m *= 2.0;
        e -= 1;
    }
    // ln m = 2 atanh(z) = 2 (z + z^3/3 + z^5/5 + ...), |z| <= 0.172: 13 terms
    // reach double precision.
    const double z = (m - 1.0) / (m + 1.0);
    const double z2 = z * z;
    constexpr int kTerms = 13;
    double series = 1.0 / (2 * kTerms - 1);
    for (int k = kTerms - 2; k >= 0; --k) series = series * z2 + 1.0 / (2 * k + 1);
    // ln 2 split in a high part with trailing zero bits (exact products) and a low part.
    constexpr double kLn2Hi = 6.93147180369123816490e-01;
    constexpr double kLn2Lo = 1.90821492927058770002e-10;
    const double exponent = static_cast<double>(e);
    return exponent * kLn2Hi + (2.0 * z * series + exponent * kLn2Lo);
}

double portableCbrt(double x) {
    HALOEX_ASSERT(x > 0.0 && std::isfinite(x), "portableCbrt needs a positive finite argument");
    // Start above the root (x < 2^e, so cbrt(x) < 2^ceil(e/3)); Newton's steps
    // then decrease monotonically until rounding stops them.
    int e = 0;
    std::frexp(x, &e);
    const int e3 = e >= 0 ? (e + 2) / 3 : -((-e) / 3);
    double y = std::ldexp(1.0, e3);
    for (int iteration = 0; iteration < 2000; ++iteration) {
        const double next = y - (y * y * y - x) / (3.0 * y * y);
        if (!(next < y)) break;
        y = next;
    }
    return y;
}

}  // namespace haloex::md
