#pragma once
// A stand-in for an MD update that stores the home coordinates itself
// (halo/home_coordinate_stores.cuh): every home atom's current position
// through the table, as the update would store its new one.
#include <cuda_runtime.h>

#include "haloex/core/vec3.hpp"
#include "haloex/transport/coordinate_force_exchange.hpp"

namespace haloex::testsupport {

// With `signal`, every block also calls signalHomeStores at its end (the
// receivers in stores.signals hear from this kernel; the forward is then
// gatherCoordinatesAfterHomeSignals).
void storeHomeCoordinates(const transport::HomeCoordinateStores& stores, const Vec3f* x, int numHome, bool signal,
                          cudaStream_t stream);

}  // namespace haloex::testsupport
