// CoordinateForceHalo (halo/coordinate_force_halo.hpp): the backend's fast
// path where it has one, the pulse engine through exchangeBlocks otherwise.
#include "haloex/halo/coordinate_force_halo.hpp"

#include <fmt/format.h>

#include "generic_coordinate_force_exchange.hpp"
#include "haloex/core/error.hpp"
#include "haloex/detail/transport/halo_records_check.hpp"
#include "pulse_engine.hpp"

namespace haloex {
namespace {

const char* memoryName(CollectiveMemory m) {
    switch (m) {
        case CollectiveMemory::Host: return "host";
        case CollectiveMemory::Device: return "device";
        case CollectiveMemory::NvshmemSymmetric: return "NVSHMEM symmetric";
        case CollectiveMemory::NcclWindow: return "NCCL window";
        case CollectiveMemory::IpcWindow: return "CUDA IPC window";
    }
    return "?";
}

void requireArray(const CollectiveBuffer<Vec3f>& array, const char* what, int numLocal, CollectiveMemory wanted,
                  const std::string& backend) {
    if (array.memory() != wanted) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("CoordinateForceHalo: the {} are in {} memory, but the {} backend needs {} memory "
                               "(its peers address them); allocate them with allocateCollective<Vec3f>(world, "
                               "transport, count)",
                               what, memoryName(array.memory()), backend, memoryName(wanted)));
    }
    if (array.capacity() < static_cast<std::size_t>(numLocal)) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("CoordinateForceHalo: the {} hold {} elements, but the plan has {} local atoms; "
                               "resize them to plan.numLocal before setPlan",
                               what, array.capacity(), numLocal));
    }
}

}  // namespace

CoordinateForceHalo::CoordinateForceHalo(transport::BlockTransport& transport) : transport_(&transport) {
    exchange_ = transport.makeCoordinateForceExchange();
    fastPath_ = exchange_ != nullptr;
    if (!exchange_) exchange_ = halo_detail::makeGenericCoordinateForceExchange(transport);
}

CoordinateForceHalo::~CoordinateForceHalo() = default;
CoordinateForceHalo::CoordinateForceHalo(CoordinateForceHalo&&) noexcept = default;
CoordinateForceHalo& CoordinateForceHalo::operator=(CoordinateForceHalo&&) noexcept = default;

void CoordinateForceHalo::setPlan(const plan::ParticleHaloPlan& plan, CollectiveBuffer<Vec3f>& coordinates,
                                  CollectiveBuffer<Vec3f>& forces) {
    halo_detail::requireContiguousReceiveSlots(plan.pulses);
    const CollectiveMemory wanted = fastPath_ ? transport_->arrayMemory() : coordinates.memory();
    requireArray(coordinates, "coordinates", plan.numLocal, wanted, transport_->name());
    requireArray(forces, "forces", plan.numLocal, wanted, transport_->name());
    if ((wanted == CollectiveMemory::Host) != (transport_->memorySpace() == transport::MemorySpace::Host)) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("CoordinateForceHalo: the arrays are in {} memory, but the {} backend moves {} memory",
                               memoryName(wanted), transport_->name(),
                               transport_->memorySpace() == transport::MemorySpace::Host ? "host" : "device"));
    }
    plan_ = plan;
    exchange_->bind(plan_, coordinates.shared(), forces.shared());
    x_ = coordinates.data();
    f_ = forces.data();
    bound_ = true;
}

void CoordinateForceHalo::requireBound(const char* what) const {
    if (!bound_) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("CoordinateForceHalo::{} before setPlan: bind a plan and the arrays first", what));
    }
}

void CoordinateForceHalo::gatherCoordinates(const plan::Box& box, transport::StreamHandle stream) {
    requireBound("gatherCoordinates");
    exchange_->forwardCoordinates(box, stream);
}

std::optional<transport::HomeCoordinateStores> CoordinateForceHalo::homeCoordinateStores(const plan::Box& box) const {
    requireBound("homeCoordinateStores");
    return exchange_->homeCoordinateStores(box);
}

void CoordinateForceHalo::gatherCoordinatesAfterHomeStores(const plan::Box& box, transport::StreamHandle stream) {
    requireBound("gatherCoordinatesAfterHomeStores");
    exchange_->forwardCoordinatesAfterHomeStores(box, stream);
}

void CoordinateForceHalo::gatherCoordinatesAfterHomeSignals(const plan::Box& box, transport::StreamHandle stream) {
    requireBound("gatherCoordinatesAfterHomeSignals");
    exchange_->forwardCoordinatesAfterHomeSignals(box, stream);
}

bool CoordinateForceHalo::copyReceivedCoordinates(const transport::HaloRecords& records) {
    requireBound("copyReceivedCoordinates");
    detail::checkHaloRecords(records, "CoordinateForceHalo::copyReceivedCoordinates");
    return exchange_->copyReceivedCoordinates(records);
}

bool CoordinateForceHalo::addHaloForcesFromRecords(const transport::HaloRecords& records) {
    requireBound("addHaloForcesFromRecords");
    detail::checkHaloRecords(records, "CoordinateForceHalo::addHaloForcesFromRecords");
    return exchange_->addHaloForcesFromRecords(records);
}

void CoordinateForceHalo::scatterAddForces(transport::StreamHandle stream) {
    requireBound("scatterAddForces");
    exchange_->reverseForces(stream);
}

void CoordinateForceHalo::clearForces(transport::StreamHandle stream) {
    requireBound("clearForces");
    exchange_->clearForces(stream);
}

void CoordinateForceHalo::clearHaloForces(transport::StreamHandle stream) {
    requireBound("clearHaloForces");
    exchange_->clearHaloForces(stream);
}

bool CoordinateForceHalo::graphCapturable() const { return bound_ && exchange_->graphCapturable(); }

const transport::TransportCounters& CoordinateForceHalo::counters() const { return exchange_->counters(); }

std::vector<std::string> CoordinateForceHalo::describe() const {
    std::vector<std::string> lines = transport_->describe();
    for (std::string& line : exchange_->describe()) lines.push_back(std::move(line));
    return lines;
}

}  // namespace haloex
