#pragma once
/// @file
/// Which candidate atoms a particle pulse sends (sendsAtom).
// Which candidate atoms a particle pulse sends (docs/planner.md, "Corner and
// edge pruning"). One inline test shared by the host planner
// (ParticlePlanBuilder) and the device plan builder's kernel, so that both
// decide alike, bit for bit, for the same position.
//
// A pulse along d sends to the lower neighbour, whose upper face along d is
// the sender's lower face. An atom is sent when it lies within rlist of that
// face (the slab). With pruning, an atom that arrived through a pulse of
// another dimension e (zone-mask bit e) must moreover lie within rlist of the
// receiver's home cell counting those dimensions too: the receiver shares
// the sender's cell along e, so the distance there is x_e - upper_e. Atoms
// of one dimension only (home atoms, forwarding along d) are not tested:
// for them the slab is the rule, unchanged.
#include <cmath>

#include "haloex/core/vec3.hpp"
#include "haloex/plan/decomposition.hpp"
#include "haloex/plan/particle_plan.hpp"

namespace haloex::plan {

/// The send rule of one rank's pulses along one dimension (sendRuleOf).
struct PulseSendRule {
    int dim = 0;                            ///< the pulses' dimension
    double lowerFace = 0.0;                 ///< the sender's lower face along dim (the receiver's upper face)
    double slabLimit = 0.0;                 ///< lowerFace + rlist
    double upperFace[3] = {0.0, 0.0, 0.0};  ///< the sender's upper faces (dims other than dim are read)
    double rlist2 = 0.0;                    ///< rlist squared
    bool pruneCorners = true;               ///< DecompositionSpec::pruneCorners
};

/// The rule of rank `rank`'s pulses along `dim`.
PulseSendRule sendRuleOf(const Decomposition& decomposition, int rank, int dim);

/// Whether a pulse under `rule` sends the candidate at `x` (its position in
/// the sender's frame, periodic shifts taken so far included) with zone mask `mask`.
HALOEX_HD inline bool sendsAtom(const PulseSendRule& rule, const Vec3d& x, ZoneMask mask) {
    if ((mask & kPaddingMask) != 0) return false;
    if (!(x[rule.dim] < rule.slabLimit)) return false;
    const unsigned others = mask & 7u & ~(1u << rule.dim);
    if (!rule.pruneCorners || others == 0) return true;
    const double along = x[rule.dim] - rule.lowerFace;
    double distance2 = along * along;
    for (int e = 0; e < 3; ++e) {
        if (((others >> e) & 1u) == 0) continue;
        const double beyond = x[e] - rule.upperFace[e];
        // Fused on purpose on both sides: a compiler may contract a*b+c on
        // one and not the other, and the builders must agree bit for bit.
#if defined(__CUDA_ARCH__)
        distance2 = ::fma(beyond, beyond, distance2);
#else
        distance2 = std::fma(beyond, beyond, distance2);
#endif
    }
    return distance2 < rule.rlist2;
}

}  // namespace haloex::plan
