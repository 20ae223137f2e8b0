#pragma once
// CoordinateForceExchange::copyReceivedCoordinates and
// addHaloForcesFromRecords for both fused transports (nvshmem, the
// peer-window transport of nccl-device): the caller's records that their
// forward kernel copies each received coordinate into, and that their
// reverse kernel takes the halo's forces from (FusedArgs::copyRecords,
// forceRecords), held from the call to the next bind.
#include "fused_args.hpp"
#include "haloex/detail/transport/halo_records_check.hpp"
#include "haloex/transport/coordinate_force_exchange.hpp"

namespace haloex::nvshmem_detail {

class HaloRecordCalls {
public:
    // Null records stop it (the kernels look at `records` alone). Checked
    // here too: the exchange may be called without CoordinateForceHalo.
    bool copyReceivedCoordinates(const transport::HaloRecords& records) {
        detail::checkHaloRecords(records, "copyReceivedCoordinates");
        coordinates_ = records;
        return true;
    }
    bool addHaloForcesFromRecords(const transport::HaloRecords& records) {
        detail::checkHaloRecords(records, "addHaloForcesFromRecords");
        forces_ = records;
        return true;
    }

protected:
    // At every bind: the records were for the last plan's elements.
    void dropHaloRecords() { coordinates_ = forces_ = {}; }
    // Into a forward's and a reverse's arguments.
    void addCoordinateRecords(FusedArgs& args) const { args.copyRecords = coordinates_; }
    void addForceRecords(FusedArgs& args) const { args.forceRecords = forces_; }

private:
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
