#pragma once
/// @file
/// The exchange of an MD step on arrays the USER owns (library
/// haloex_transports): coordinates forward from their owners to the halo
/// copies, shifted by the periodic box, and forces back from the halo copies
/// to their owners, accumulated -- GROMACS's communicateHaloCoordinates and
/// communicateHaloForces. Where the backend has a fast path (nvshmem and
/// nccl-device: one fused kernel per exchange, no host involvement, CUDA-graph
/// capturable; ipc, nccl and staged: their own pulse schedules) it is used;
/// otherwise the exchange goes through the backend's exchangeBlocks, as
/// ParticleHalo's gather and scatterAdd do.
///
///   CoordinateForceHalo halo(transport);
///   auto x = allocateCollective<Vec3f>(world, transport, plan.numLocal, "coordinates");
///   auto f = allocateCollective<Vec3f>(world, transport, plan.numLocal, "forces");
///   halo.setPlan(plan, x, f);                 // collective; again after repartitioning
///   ... home coordinates into x[0, numHome) ...
///   halo.gatherCoordinates(box, stream);      // halo slots of x filled
///   ... forces into f ...
///   halo.scatterAddForces(stream);            // f[0, numHome) complete
///   halo.clearForces(stream);                 // before the next step's forces
///
/// The arrays come from allocateCollective for this transport (halo/
/// collective_buffer.hpp): peers may store into them (NVSHMEM symmetric
/// memory, NCCL windows, CUDA IPC exports). Both hold at least plan.numLocal
/// elements, laid out as the plan says: home atoms, then each pulse's
/// received atoms at its recvOffset. After one of them grows (resize or
/// reserve reallocated it) call setPlan again. Every call is collective and
/// ordered on `stream` like ParticleHalo's.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "haloex/core/vec3.hpp"
#include "haloex/halo/collective_buffer.hpp"
#include "haloex/plan/box.hpp"
#include "haloex/plan/particle_plan.hpp"
#include "haloex/transport/block_transport.hpp"
#include "haloex/transport/coordinate_force_exchange.hpp"

namespace haloex {

/// An MD step's coordinate/force exchange on the caller's arrays (see the file's description).
class CoordinateForceHalo {
public:
    /// Binds to `transport` (which must outlive the halo). Not collective.
    explicit CoordinateForceHalo(transport::BlockTransport& transport);
    ~CoordinateForceHalo();
    CoordinateForceHalo(CoordinateForceHalo&&) noexcept;             ///< takes the other's binding
    CoordinateForceHalo& operator=(CoordinateForceHalo&&) noexcept;  ///< takes the other's binding
    CoordinateForceHalo(const CoordinateForceHalo&) = delete;
    CoordinateForceHalo& operator=(const CoordinateForceHalo&) = delete;

    /// Collective: adopts the plan and the arrays. Throws InvalidInput for an
    /// array smaller than plan.numLocal elements or in other memory than the
    /// transport's fast path needs (naming allocateCollective). No exchange
    /// of this halo may still be running on the GPU (the transports rewrite
    /// what their kernels read): finish the streams' work first.
    void setPlan(const plan::ParticleHaloPlan& plan, CollectiveBuffer<Vec3f>& coordinates,
                 CollectiveBuffer<Vec3f>& forces);
    /// The plan of the last setPlan (empty before) and the arrays bound with it.
    const plan::ParticleHaloPlan& plan() const { return plan_; }
    bool hasPlan() const { return bound_; }    ///< whether setPlan was called
    Vec3f* coordinates() const { return x_; }  ///< the coordinates bound by setPlan
    Vec3f* forces() const { return f_; }       ///< the forces bound by setPlan

    /// Forward: the home coordinates the plan sends, shifted by `box` where
    /// a pulse crosses it, into the receivers' halo slots. Collective.
    void gatherCoordinates(const plan::Box& box, transport::StreamHandle stream);
    /// Where a kernel of yours may store the home coordinates itself (the
    /// update that computes them), so that the next forward is
    /// gatherCoordinatesAfterHomeStores: per pulse the receiver's slot and
    /// each home atom's entry (transport::HomeCoordinateStores; the device
    /// function is haloex::device::storeHomeCoordinate in
    /// halo/home_coordinate_stores.cuh). Empty where the backend cannot
    /// take them (no load/store path to every receiver, or no fused
    /// forward). Valid until the next setPlan; not collective.
    std::optional<transport::HomeCoordinateStores> homeCoordinateStores(const plan::Box& box) const;
    /// gatherCoordinates after your work on `stream` stored every home atom
    /// through homeCoordinateStores(box) since this rank's last forward
    /// (and after its last scatterAddForces, as the forward itself runs):
    /// only the atoms that arrived through earlier pulses move here, then
    /// the receivers are signalled. Where homeCoordinateStores is empty, a
    /// full gatherCoordinates. Collective.
    void gatherCoordinatesAfterHomeStores(const plan::Box& box, transport::StreamHandle stream);
    /// gatherCoordinatesAfterHomeStores where the storing kernel also called
    /// haloex::device::signalHomeStores at its end, in every block: the
    /// receivers of the pulses that send home atoms alone
    /// (HomeCoordinateStores::signals) have their signal from that kernel,
    /// as soon as its last block is done, and only the rest are signalled
    /// here. The kernel must signal whenever the table it used names signals
    /// (numSignals > 0): this call does not signal those pulses, and their
    /// receivers would wait until the exchange's time limit. After such a
    /// kernel the next forward is this call (or a setPlan comes first): a
    /// full forward would rewrite entries its receivers may already read.
    /// Collective.
    void gatherCoordinatesAfterHomeSignals(const plan::Box& box, transport::StreamHandle stream);
    /// Asks every later forward to also copy each received coordinate into
    /// your own layout (transport::HaloRecords: x, y, z into record
    /// recordOfElement[e], the rest of the record kept) inside its kernel,
    /// once it has arrived: what a gather kernel of yours after the forward
    /// would do, without that kernel. True where the backend does it
    /// (nvshmem, nccl-device); false elsewhere, and nothing is copied. Null
    /// records stop it; so does setPlan. Throws InvalidInput for a stride
    /// below 3 or no record map. Not collective.
    bool copyReceivedCoordinates(const transport::HaloRecords& records);
    /// Asks every later scatterAddForces to take each halo atom's force as
    /// forces()[e] plus its record in your layout (transport::HaloRecords),
    /// adding the record in and zeroing its x, y, z for the next step,
    /// inside the reverse's kernel: what a scatter kernel of yours before
    /// the reverse would do, without that kernel. True where the backend
    /// does it (nvshmem, nccl-device); false elsewhere, and the records are
    /// not read. Null records stop it; so does setPlan. Throws InvalidInput
    /// as copyReceivedCoordinates. Not collective.
    bool addHaloForcesFromRecords(const transport::HaloRecords& records);
    /// Reverse: the forces on halo atoms back to their owners, added into the
    /// owners' entries; then the home entries hold complete forces. Collective.
    void scatterAddForces(transport::StreamHandle stream);
    /// Zeroes the forces for the next step, ordered after any peer's reads.
    void clearForces(transport::StreamHandle stream);
    /// clearForces where the caller already zeroed the home entries (the
    /// first plan().numHome) itself, e.g. in the update kernel that read them
    /// last: only what else the backend needs zero (nothing for nvshmem and
    /// nccl-device, whose next forward clears the halo slots).
    void clearHaloForces(transport::StreamHandle stream);

    /// Whether gather/scatterAdd/clear may be captured in a CUDA graph.
    bool graphCapturable() const;
    /// Whether the backend's own fast path is in use (else the generic one).
    bool usesBackendFastPath() const { return fastPath_; }
    transport::BlockTransport& transport() const { return *transport_; }              ///< the backend
    transport::MemorySpace memorySpace() const { return transport_->memorySpace(); }  ///< where the arrays live
    /// What the host did in the exchanges so far (calls, host synchronisations).
    const transport::TransportCounters& counters() const;
    /// The transport's lines and the exchange's, for a run summary.
    std::vector<std::string> describe() const;
    /// Device timestamps inside the exchange kernels, a diagnostic
    /// (transport::CoordinateForceExchange::recordTimestamps): true where the
    /// exchange records them. Before capturing the exchange in a graph.
    bool recordExchangeTimestamps(bool on) { return exchange_->recordTimestamps(on); }
    /// The last forward and reverse kernels' timestamps (synchronises the
    /// device); empty when not recorded.
    std::optional<transport::ExchangeTimestamps> lastExchangeTimestamps() const { return exchange_->lastTimestamps(); }
    /// A launch-completion event of the forward's kernel
    /// (transport::CoordinateForceExchange::signalForwardLaunched): true
    /// where the exchange records it. Before capturing the exchange in a graph.
    bool signalForwardLaunched(void* event) { return exchange_->signalForwardLaunched(event); }

private:
    void requireBound(const char* what) const;

    transport::BlockTransport* transport_;
    std::unique_ptr<transport::CoordinateForceExchange> exchange_;
    plan::ParticleHaloPlan plan_;
    Vec3f* x_ = nullptr;
    Vec3f* f_ = nullptr;
    bool bound_ = false;
    bool fastPath_ = false;
};

}  // namespace haloex
