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
/// The kernel may also signal the receivers that need nothing else
/// (HomeCoordinateStores::signals): every one of its blocks calls
/// signalHomeStores after its last store, and the next forward is
/// gatherCoordinatesAfterHomeSignals. The receivers then learn of their halo
/// when the kernel's last block is done, not when the forward kernel has
/// started and counted its own blocks.
///
/// Ordering: the storing kernel must run on `stream` (or be ordered before
/// it) after this rank's reverse of the step before, as the forward itself
/// would: the receivers have read their last halo by then.
#include <cstdint>

#include "haloex/core/vec3.hpp"
#include "haloex/detail/cuda/memory_order.cuh"
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

/// Called by every thread of every block of the storing kernel, after the
/// block's last storeHomeCoordinate: each block releases its stores at
/// system scope and counts itself; the last one signals every receiver in
/// `stores.signals` with the value the next forward would. Nothing where
/// the table has no signals. The kernel's grid must not change between
/// this call's blocks (one launch, every block calls it once).
__device__ __forceinline__ void signalHomeStores(const transport::HomeCoordinateStores& stores) {
    if (stores.numSignals == 0) return;  // the same in every block
    __syncthreads();                     // the block's stores are issued
    if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {
        __threadfence_system();  // ... and reach the receivers before this block counts
        const unsigned blocks = gridDim.x * gridDim.y * gridDim.z;
        if (atomicInc(stores.blockCounter, blocks - 1) == blocks - 1) {
            __threadfence();  // acquire the other blocks' (released at system scope before they counted)
            const std::uint64_t value = *reinterpret_cast<const volatile std::uint64_t*>(stores.sequence);
            for (int s = 0; s < stores.numSignals; ++s) cuda::releaseStoreSys(stores.signals[s], value);
        }
    }
}

}  // namespace haloex::device
