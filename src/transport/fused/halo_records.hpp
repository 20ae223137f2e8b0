#pragma once
// CoordinateForceExchange::copyReceivedCoordinates and
// addHaloForcesFromRecords for both fused transports (nvshmem, the
// peer-window transport of nccl-device): the caller's records that their
// forward kernel copies each received coordinate into, and that their
// reverse kernel takes the halo's forces from (FusedArgs::copyRecords,
// forceRecords), held from the call to the next bind.
#include "fused_args.hpp"
#include "haloex/transport/coordinate_force_exchange.hpp"

namespace haloex::nvshmem_detail {

class HaloRecordCalls {
public:
    // Checked by the caller (CoordinateForceHalo); null records stop it.
    bool copyReceivedCoordinates(const transport::HaloRecords& records) {
        coordinates_ = records.records != nullptr ? records : transport::HaloRecords{};
        return true;
    }
    bool addHaloForcesFromRecords(const transport::HaloRecords& records) {
        forces_ = records.records != nullptr ? records : transport::HaloRecords{};
        return true;
    }

protected:
    // At every bind: the records were for the last plan's elements.
    void dropHaloRecords() { coordinates_ = forces_ = {}; }
    // Into a forward's and a reverse's arguments.
    void addCoordinateRecords(FusedArgs& args) const { args.copyRecords = recordsOf(coordinates_); }
    void addForceRecords(FusedArgs& args) const { args.forceRecords = recordsOf(forces_); }

private:
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
