#pragma once
// The coordinate/force exchange of a backend without a fast path of its own
// (halo/coordinate_force_halo.hpp): the pulse engine's gather with the
// periodic shift and its scatter-add, through the backend's exchangeBlocks.
// Internal.
#include <memory>

#include "haloex/transport/block_transport.hpp"
#include "haloex/transport/coordinate_force_exchange.hpp"

namespace haloex::halo_detail {

std::unique_ptr<transport::CoordinateForceExchange> makeGenericCoordinateForceExchange(
    transport::BlockTransport& transport);

}  // namespace haloex::halo_detail
