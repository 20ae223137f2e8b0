#pragma once
// The one check of transport::HaloRecords, made by CoordinateForceHalo and by
// the fused transports themselves (their exchange may be called directly):
// records whose x, y, z the kernels can reach through a map, or none.
#include <string_view>

#include <fmt/format.h>

#include "haloex/core/error.hpp"
#include "haloex/transport/coordinate_force_exchange.hpp"

namespace haloex::detail {

// Throws InvalidInput, naming `who`, for records without room for x, y, z or
// without a map; null records (stop) pass.
inline void checkHaloRecords(const transport::HaloRecords& r, std::string_view who) {
    if (r.records != nullptr && (r.stride < 3 || r.recordOfElement == nullptr)) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("{}: stride = {} floats per record and record map {}; records need at least 3 floats "
                               "per record (x, y, z) and a device map of the plan's numLocal elements (-1: none). "
                               "Pass null records to stop",
                               who, r.stride, r.recordOfElement == nullptr ? "missing" : "given"));
    }
}

}  // namespace haloex::detail
