#pragma once
// CoordinateForceExchange::copyReceivedCoordinates for both fused transports
// (nvshmem, the peer-window transport of nccl-device): the copy their
// forward kernel makes of each received coordinate into the caller's
// records (FusedArgs::copyDestination), held from the call to the next bind.
#include "fused_args.hpp"
#include "haloex/transport/coordinate_force_exchange.hpp"

namespace haloex::nvshmem_detail {

class ReceivedCopyCalls {
public:
    // Checked by the caller (CoordinateForceHalo); a null destination stops it.
    bool copyReceivedCoordinates(const transport::ReceivedCoordinateCopy& copy) {
        copy_ = copy.destination != nullptr ? copy : transport::ReceivedCoordinateCopy{};
        return true;
    }

protected:
    // At every bind: the records were for the last plan's elements.
    void dropReceivedCopy() { copy_ = {}; }
    // Into a forward's arguments.
    void addReceivedCopy(FusedArgs& args) const {
        args.copyDestination = copy_.destination;
        args.copyRecordOfElement = copy_.recordOfElement;
        args.copyStride = copy_.stride;
    }

private:
    transport::ReceivedCoordinateCopy copy_;
};

// What ForwardingCoordinateForceExchange looks for (with `requires`);
// asserted where a fused transport makes its exchange, as OffersHomeStores.
template <class T>
concept OffersReceivedCopy =
    requires(T& t, const transport::ReceivedCoordinateCopy& copy) { t.copyReceivedCoordinates(copy); };

}  // namespace haloex::nvshmem_detail
