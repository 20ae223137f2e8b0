#pragma once
/// @file
/// A backend's fast path for the exchange of an MD step (BlockTransport::
/// makeCoordinateForceExchange): coordinates forward from their owners to the
/// halo copies (shifted by the periodic box), forces back from the halo copies
/// to their owners (accumulated), on arrays the CALLER owns -- as GROMACS's
/// fused halo exchange takes the caller's d_x and d_f. Users reach it through
/// the halo API (halo/coordinate_force_halo.hpp), which falls back to
/// exchangeBlocks for backends without one.
///
/// Layout of both arrays: home atoms [0, plan.numHome), then each pulse's
/// received atoms at its recvOffset (plan/particle_plan.hpp), numLocal in all.
#include <string>
#include <vector>

#include "haloex/core/vec3.hpp"
#include "haloex/plan/box.hpp"
#include "haloex/plan/particle_plan.hpp"
#include "haloex/transport/types.hpp"

namespace haloex::transport {

/// A backend's own coordinate/force exchange on the caller's arrays (see the
/// file's description); BlockTransport::makeCoordinateForceExchange makes it.
class CoordinateForceExchange {
public:
    virtual ~CoordinateForceExchange() = default;

    /// Collective over the job: adopts `plan` and the caller's arrays, each of
    /// at least plan.numLocal Vec3f, in the transport's arrayMemory(). Called
    /// after every plan change and whenever an array was reallocated; what the
    /// arrays hold is not touched.
    virtual void bind(const plan::ParticleHaloPlan& plan, const SharedArray& coordinates,
                      const SharedArray& forces) = 0;
    /// Forward: the plan's send entries of the coordinates (shifted by the box
    /// where the plan says so) into the receivers' slots.
    virtual void forwardCoordinates(const plan::Box& box, StreamHandle stream) = 0;
    /// Reverse: forces of received atoms back to their owners, added into the
    /// owners' entries. After it the home entries hold complete forces.
    virtual void reverseForces(StreamHandle stream) = 0;
    /// Zeroes the forces for the next step, ordered after any peer's reads of them.
    virtual void clearForces(StreamHandle stream) = 0;
    /// Whether forward/reverse/clearForces may be captured in a CUDA graph (no
    /// host synchronisation, no host-side state that changes per call).
    virtual bool graphCapturable() const = 0;

    /// What the host did so far (calls, host synchronisations).
    virtual const TransportCounters& counters() const = 0;
    /// Lines for a run summary: what the exchange does and chose.
    virtual std::vector<std::string> describe() const { return {}; }
};

}  // namespace haloex::transport
