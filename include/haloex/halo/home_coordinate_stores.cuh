#pragma once
/// @file
/// The device side of CoordinateForceHalo::homeCoordinateStores: a kernel
/// that computes home coordinates (an MD update) stores each one straight
/// into the receivers' halo slots, so that the next forward
/// (gatherCoordinatesAfterHomeStores) has only the forwarded atoms left to
/// move and its signal follows that kernel at once. Header-only CUDA with no
/// NVSHMEM: include it in your own .cu file (no -rdc, no device link).
///
/// @code
///   // host, once per plan (after setPlan), with the step's box:
///   auto stores = halo.homeCoordinateStores(box);    // empty: no such path
///   // device, for every home atom i after its new position x:
///   if (stores.numPulses > 0) haloex::device::storeHomeCoordinate(stores, i, x);
///   // host, the next step:
///   halo.gatherCoordinatesAfterHomeStores(box, stream);
/// @endcode
///
/// Ordering: the storing kernel must run on `stream` (or be ordered before
/// it) after this rank's reverse of the step before, as the forward itself
/// would: the receivers have read their last halo by then.
#include "haloex/core/vec3.hpp"
#include "haloex/transport/coordinate_force_exchange.hpp"

namespace haloex::device {

/// Stores home atom `atom`'s coordinates `x` wherever the next forward sends
/// them: the value the forward would store there, bit for bit.
__device__ __forceinline__ void storeHomeCoordinate(const transport::HomeCoordinateStores& stores, int atom,
                                                    const Vec3f& x) {
    for (int p = 0; p < stores.numPulses; ++p) {
        const transport::HomeCoordinateStores::Pulse& pulse = stores.pulses[p];
        const int entry = pulse.entryOfHome[atom];
        if (entry < 0) continue;
        Vec3f shifted = x;
        if (pulse.shiftSign != 0) shifted[pulse.dim] += pulse.shift;
        pulse.destination[entry] = shifted;
    }
}

}  // namespace haloex::device
