#pragma once
// CoordinateForceExchange::copyReceivedCoordinates and
// addHaloForcesFromRecords for both fused transports (nvshmem, the
// peer-window transport of nccl-device): the caller's records that their
// forward kernel copies each received coordinate into, and that their
// reverse kernel takes the halo's forces from (FusedArgs::copyRecords,
// forceRecords), held from the call to the next bind.
#include <fmt/format.h>

#include "fused_args.hpp"
#include "haloex/core/error.hpp"
#include "haloex/transport/coordinate_force_exchange.hpp"

namespace haloex::nvshmem_detail {

class HaloRecordCalls {
public:
    // Null records stop it.
    bool copyReceivedCoordinates(const transport::HaloRecords& records) {
        coordinates_ = checked(records, "copyReceivedCoordinates");
        return true;
    }
    bool addHaloForcesFromRecords(const transport::HaloRecords& records) {
        forces_ = checked(records, "addHaloForcesFromRecords");
        return true;
    }

protected:
    // At every bind: the records were for the last plan's elements.
    void dropHaloRecords() { coordinates_ = forces_ = {}; }
    // Into a forward's and a reverse's arguments.
    void addCoordinateRecords(FusedArgs& args) const { args.copyRecords = recordsOf(coordinates_); }
    void addForceRecords(FusedArgs& args) const { args.forceRecords = recordsOf(forces_); }

private:
    // The kernels read x, y, z through the map: refused before they could
    // read past a record or through a null map.
    static transport::HaloRecords checked(const transport::HaloRecords& r, const char* what) {
        if (r.records == nullptr) return {};
        if (r.stride < 3 || r.recordOfElement == nullptr) {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("{}: stride = {} floats per record and record map {}; records need at least 3 "
                                   "floats each (x, y, z) and a device map of the plan's numLocal elements",
                                   what, r.stride, r.recordOfElement == nullptr ? "missing" : "given"));
        }
        return r;
    }
    static ElementRecords recordsOf(const transport::HaloRecords& r) {
        return {r.records, r.recordOfElement, r.stride};
    }
    transport::HaloRecords coordinates_, forces_;
};

// What ForwardingCoordinateForceExchange looks for (with `requires`);
// asserted where a fused transport makes its exchange, as OffersHomeStores.
template <class T>
concept OffersHaloRecords = requires(T& t, const transport::HaloRecords& records) {
    t.copyReceivedCoordinates(records);
    t.addHaloForcesFromRecords(records);
};

}  // namespace haloex::nvshmem_detail
