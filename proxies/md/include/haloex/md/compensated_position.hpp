#pragma once
// Positions to about twice float's precision, as x + low: x (float) is what
// the forces and the halo exchange see; low (float) keeps what rounding x
// would lose. Adding a step's displacement to a float position of a few nm
// rounds it by up to half an ulp of the position (2.4e-7 nm at 4 nm), a
// random-walk error of the energy that sets the NVE drift of a single-
// precision leapfrog (docs/md-engine.md, "Energy conservation"); with the
// compensation the position update itself loses nothing that matters.
//
// Additions only (Knuth's TwoSum, exact in IEEE arithmetic): no multiply
// that a compiler could contract, and valid whatever the magnitudes.
#include "haloex/core/vec3.hpp"

namespace haloex::md {

HALOEX_HD inline void addCompensated(float& x, float& low, float dx) {
    const float d = dx + low;
    const float sum = x + d;
    const float dPart = sum - x;
    const float xPart = sum - dPart;
    low = (x - xPart) + (d - dPart);
    x = sum;
}

HALOEX_HD inline void addCompensated(Vec3f& x, Vec3f& low, const Vec3f& dx) {
    addCompensated(x.x, low.x, dx.x);
    addCompensated(x.y, low.y, dx.y);
    addCompensated(x.z, low.z, dx.z);
}

// The split of a double position into x + low.
inline void splitPosition(const Vec3d& position, Vec3f& x, Vec3f& low) {
    x = static_cast<Vec3f>(position);
    low = static_cast<Vec3f>(position - static_cast<Vec3d>(x));
}

inline Vec3d joinPosition(const Vec3f& x, const Vec3f& low) { return static_cast<Vec3d>(x) + static_cast<Vec3d>(low); }

}  // namespace haloex::md
