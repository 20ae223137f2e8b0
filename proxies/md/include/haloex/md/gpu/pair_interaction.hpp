#pragma once
// The LJ + reaction-field pair interaction in float (docs/md-engine.md#the-system-and-its-defaults), shared by
// the GPU kernel and the CPU reference evaluation: shifted LJ cut at rc,
// reaction field with eps_rf = infinity. Charges are pre-multiplied by
// sqrt(f), so qq = f q_i q_j.
#include <cmath>

#include "haloex/core/vec3.hpp"
#include "haloex/md/forcefield.hpp"

namespace haloex::md::gpu {

struct PairConstants {
    float rc2;
    float c6, c12;       // energies
    float c6x6, c12x12;  // forces: 6 c6, 12 c12
    float ljShift;
    float krf, twoKrf, crf;
    float sqrtCoulomb;  // sqrt(f): charges are stored scaled by it
};
PairConstants makePairConstants(const ForceField& ff);

HALOEX_HD inline float inverseSqrt(float x) {
#if defined(__CUDA_ARCH__)
    // rsqrtf's handling of subnormal inputs costs three instructions per
    // pair; the kernels never pass one (r2 is at least (1e-19 nm)^2, or the
    // 1.0 of a masked pair), so the flush-to-zero form gives the same bits.
    float r;
    asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
#else
    return 1.0f / std::sqrt(x);
#endif
}

// a * b + c, fused on the device (one instruction), plain on the host.
HALOEX_HD inline float multiplyAdd(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
    return __fmaf_rn(a, b, c);
#else
    return a * b + c;
#endif
}

// F/r of one pair: the force on i is the result times (x_i - x_j). Zero when
// !interacts (masked out, or r >= rc); masked pairs may sit at r = 0 (an atom
// with itself, empty slots): on the host their r2 is replaced before the
// rsqrt, on the device the inf or NaN it gives is dropped by the selects.
// With kEnergies, vlj and vcoul receive the pair's energies (zero when
// !interacts).
template <bool kEnergies>
HALOEX_HD inline float pairForceOverR(const PairConstants& c, float r2, float qq, bool interacts, float& vlj,
                                      float& vcoul) {
#if defined(__CUDA_ARCH__)
    // On the device an inf or NaN of a masked pair at r = 0 costs nothing:
    // the selects below drop it (one instruction less per pair).
    const float r2s = r2;
#else
    const float r2s = interacts ? r2 : 1.0f;
#endif
    const float rinv = inverseSqrt(r2s);
    const float rinv2 = rinv * rinv;
    const float rinv6 = rinv2 * rinv2 * rinv2;
    const float qqRinv = qq * rinv;
    const float lj6 = multiplyAdd(c.c12x12, rinv6, -c.c6x6);  // (12 c12 / r^6 - 6 c6)
    // F/r = [ (12 c12/r^12 - 6 c6/r^6) + qq/r ] / r^2 - 2 krf qq
    const float fscal = multiplyAdd(rinv2, multiplyAdd(rinv6, lj6, qqRinv), -qq * c.twoKrf);
    if constexpr (kEnergies) {
        const float lj = multiplyAdd(rinv6, multiplyAdd(c.c12, rinv6, -c.c6), -c.ljShift);
        const float coul = multiplyAdd(qq, multiplyAdd(c.krf, r2s, -c.crf), qqRinv);
        vlj = interacts ? lj : 0.0f;
        vcoul = interacts ? coul : 0.0f;
    } else {
        (void)vlj;
        (void)vcoul;
    }
    return interacts ? fscal : 0.0f;
}

}  // namespace haloex::md::gpu
