#pragma once
/// @file
/// A backend's fast path for the exchange of an MD step (BlockTransport::
/// makeCoordinateForceExchange): coordinates forward from their owners to the
/// halo copies (shifted by the periodic box), forces back from the halo copies
/// to their owners (accumulated), on arrays the CALLER owns -- as GROMACS's
/// fused halo exchange takes the caller's d_x and d_f. Users reach it through
/// the halo API (halo/coordinate_force_halo.hpp), which falls back to
/// exchangeBlocks for backends without one.
///
/// Layout of both arrays: home atoms [0, plan.numHome), then each pulse's
/// received atoms at its recvOffset (plan/particle_plan.hpp), numLocal in all.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "haloex/core/vec3.hpp"
#include "haloex/plan/box.hpp"
#include "haloex/plan/particle_plan.hpp"
#include "haloex/transport/types.hpp"

namespace haloex::transport {

/// Device timestamps of one pulse inside the last exchange kernel of a kind
/// (CoordinateForceExchange::lastTimestamps): nanoseconds of the GPU's
/// %globaltimer, comparable within one launch on one GPU only (another GPU's
/// timer has another origin). 0 where the point does not apply or was not
/// reached. docs/nvshmem.md, "Inside the exchange kernels".
struct PulseTimestamps {
    std::uint64_t start = 0;         ///< the pulse's first block began (after the kernel's prerequisites)
    std::uint64_t dependencies = 0;  ///< the pulses it waits for had completed (forward: before its forwarded
                                     ///< entries; reverse: before it sends back); 0 without such pulses
    std::uint64_t sent = 0;          ///< forward: every block of the pulse had stored its entries
    std::uint64_t signalled = 0;     ///< the peer was notified (forward: the receiver; reverse: the owner)
    std::uint64_t received = 0;      ///< this rank's side had arrived (forward: its halo slot; reverse: the
                                     ///< forces on what it sent)
    std::uint64_t finished = 0;      ///< forward: the first block had cleared its part of the receive slot;
                                     ///< reverse: every block had added the forces into the owners
};
/// The last forward and reverse kernels' timestamps, per pulse of the plan.
struct ExchangeTimestamps {
    std::vector<PulseTimestamps> forward;  ///< the coordinate kernel's, per pulse
    std::vector<PulseTimestamps> reverse;  ///< the force kernel's, per pulse
    std::uint64_t forwardEnd = 0;          ///< the coordinate kernel's last block ended
    std::uint64_t reverseEnd = 0;          ///< the force kernel's last block ended
};

/// Where a caller's own kernel may store the home coordinates that the next
/// forward sends (CoordinateForceExchange::homeCoordinateStores): per pulse,
/// the receiver's array at this pulse's receive slot (a peer pointer) and,
/// for each home atom, its entry in the pulse or -1. An atom that a pulse
/// sends goes to destination[entry], shifted by `shift` along `dim` where
/// `shiftSign` is not 0 -- what the forward would store. The device function
/// that does it for one atom is haloex::device::storeHomeCoordinate
/// (halo/home_coordinate_stores.cuh). Valid until the next bind.
struct HomeCoordinateStores {
    static constexpr int kMaxPulses = 8;  ///< pulses with home entries that a table holds
    /// One pulse that sends home atoms.
    struct Pulse {
        Vec3f* destination = nullptr;      ///< the receiver's array at this pulse's receive offset
        const int* entryOfHome = nullptr;  ///< device [numHome]: the atom's entry in the pulse, or -1
        int dim = 0;                       ///< the pulse's dimension
        int shiftSign = 0;                 ///< 0: no periodic shift
        float shift = 0.0f;                ///< shiftSign * box length along dim, rounded once to float
    };
    int numPulses = 0;         ///< pulses in `pulses` (those that send home atoms)
    Pulse pulses[kMaxPulses];  ///< the first numPulses are set

    /// The receivers the storing kernel may signal itself
    /// (haloex::device::signalHomeStores, then forwardCoordinatesAfterHomeSignals):
    /// those of the pulses that send home atoms alone (nothing forwarded),
    /// where the exchange signals each pulse with one word. numSignals 0:
    /// none (signalHomeStores does nothing; the forward signals them all).
    int numSignals = 0;
    std::uint64_t* signals[kMaxPulses] = {};  ///< each receiver's signal word (a peer pointer)
    const std::uint64_t* sequence = nullptr;  ///< device: the value the next forward signals
    unsigned* blockCounter = nullptr;         ///< device: the storing kernel's finished blocks (wraps to 0)
};

/// Per-element records of the caller's own layout, e.g. a force kernel's
/// cluster order, that the exchange's kernels read or write beside the
/// arrays (CoordinateForceExchange::copyReceivedCoordinates,
/// addHaloForcesFromRecords): halo element e (plan.numHome <= e <
/// plan.numLocal) has the three floats x, y, z at
/// records[stride * recordOfElement[e] + 0, 1, 2]; the record's other floats
/// are never touched (a charge, say). An element whose record is -1 has
/// none, and the receive slots' padding never has one. Both arrays are the
/// caller's, in device memory, and must stay valid while they are set.
struct HaloRecords {
    float* records = nullptr;              ///< nullptr: none (stops what they were set for)
    int stride = 4;                        ///< floats per record, at least 3
    const int* recordOfElement = nullptr;  ///< [plan.numLocal]: element e's record, or -1 (only halo entries are read)
};

/// A backend's own coordinate/force exchange on the caller's arrays (see the
/// file's description); BlockTransport::makeCoordinateForceExchange makes it.
class CoordinateForceExchange {
public:
    virtual ~CoordinateForceExchange() = default;

    /// Collective over the job: adopts `plan` and the caller's arrays, each of
    /// at least plan.numLocal Vec3f, in the transport's arrayMemory(). Called
    /// after every plan change and whenever an array was reallocated; what the
    /// arrays hold is not touched.
    virtual void bind(const plan::ParticleHaloPlan& plan, const SharedArray& coordinates,
                      const SharedArray& forces) = 0;
    /// Forward: the plan's send entries of the coordinates (shifted by the box
    /// where the plan says so) into the receivers' slots.
    virtual void forwardCoordinates(const plan::Box& box, StreamHandle stream) = 0;
    /// Reverse: forces of received atoms back to their owners, added into the
    /// owners' entries. After it the home entries hold complete forces.
    virtual void reverseForces(StreamHandle stream) = 0;
    /// Where a kernel of the caller may store the home coordinates itself,
    /// e.g. the update that computes them (HomeCoordinateStores), for the
    /// shifts of `box`; empty where this exchange cannot take them (no load/
    /// store path to every receiver, or no fused forward). A hint only: a
    /// caller that never stores keeps calling forwardCoordinates.
    virtual std::optional<HomeCoordinateStores> homeCoordinateStores(const plan::Box& box) const {
        (void)box;
        return std::nullopt;
    }
    /// forwardCoordinates for a caller whose work earlier on `stream` stored
    /// every home atom through homeCoordinateStores(box) since this rank's
    /// last forward: only the forwarded entries (atoms that arrived through
    /// an earlier pulse) are stored here, then the receivers are signalled.
    /// Where homeCoordinateStores is empty, a full forwardCoordinates.
    virtual void forwardCoordinatesAfterHomeStores(const plan::Box& box, StreamHandle stream) {
        forwardCoordinates(box, stream);
    }
    /// forwardCoordinatesAfterHomeStores where that kernel also signalled the
    /// receivers it could (HomeCoordinateStores::signals, through
    /// haloex::device::signalHomeStores): their pulses are not signalled
    /// again here; this rank's own receives are still waited for.
    virtual void forwardCoordinatesAfterHomeSignals(const plan::Box& box, StreamHandle stream) {
        forwardCoordinatesAfterHomeStores(box, stream);
    }
    /// Has every later forward also copy each received coordinate into
    /// `records` once it has arrived, inside the forward's own kernel, so
    /// that the caller needs no kernel of its own between the forward and
    /// the halo's first reader (haloex-md's non-local gather); null records
    /// stop it. True where this exchange makes the copy (the fused
    /// transports); false, and nothing set, elsewhere: the caller then
    /// copies itself. bind stops it (the plan's elements changed). Before
    /// capturing the forward in a CUDA graph: the kernel's arguments change.
    virtual bool copyReceivedCoordinates(const HaloRecords& records) {
        (void)records;
        return false;
    }
    /// Has every later reverse take each halo element's force as what the
    /// forces array holds plus its record in `records`, which it adds in
    /// and zeroes for the next step, inside the reverse's own kernel, so
    /// that the caller needs no kernel of its own between its force kernel
    /// and the reverse (haloex-md's non-local scatter); null records stop
    /// it. True where this exchange does it (the fused transports); false,
    /// and nothing set, elsewhere: the caller then adds them itself. bind
    /// stops it. Before capturing the reverse in a CUDA graph.
    virtual bool addHaloForcesFromRecords(const HaloRecords& records) {
        (void)records;
        return false;
    }
    /// Zeroes the forces for the next step, ordered after any peer's reads of them.
    virtual void clearForces(StreamHandle stream) = 0;
    /// clearForces for a caller that zeroed the home entries itself (e.g. in
    /// the kernel that read them last): whatever else must be zero before
    /// the next step. By default everything, as clearForces; an exchange
    /// whose halo slots are cleared by its next forward clears nothing.
    virtual void clearHaloForces(StreamHandle stream) { clearForces(stream); }
    /// Whether forward/reverse/clearForces may be captured in a CUDA graph (no
    /// host synchronisation, no host-side state that changes per call).
    virtual bool graphCapturable() const = 0;

    /// What the host did so far (calls, host synchronisations).
    virtual const TransportCounters& counters() const = 0;
    /// Lines for a run summary: what the exchange does and chose.
    virtual std::vector<std::string> describe() const { return {}; }

    /// Starts (or stops) recording device timestamps inside the exchange
    /// kernels; true where this exchange can (the GPU-initiated transports),
    /// false (and nothing changes) elsewhere. A diagnostic: each kernel then
    /// reads the GPU's timer a few times per pulse. Call it before capturing
    /// the exchange in a CUDA graph: the kernels' arguments change.
    virtual bool recordTimestamps(bool on) {
        (void)on;
        return false;
    }
    /// The timestamps of the last forward and reverse kernels, after the
    /// device has finished them (this call synchronises the device); empty
    /// when not recording.
    virtual std::optional<ExchangeTimestamps> lastTimestamps() const { return std::nullopt; }

    /// Records `event` (a cudaEvent_t made with cudaEventDisableTiming) in
    /// every later forwardCoordinates once all blocks of its kernel have
    /// begun (a launch-completion event), so that work another stream
    /// orders after the event starts only once the exchange kernel holds
    /// its SMs (a kernel launched first on another stream can otherwise
    /// fill them, and the exchange waits for its first wave). True where
    /// the forward is one kernel launch (the nvshmem transport's fused
    /// launch); false, and nothing recorded, elsewhere. nullptr stops it, as
    /// does destroying this exchange (the transport may serve another
    /// exchange after it: the event must live until then). Before capturing
    /// the exchange in a CUDA graph. haloex-md uses it by default
    /// (HALOEX_FORWARD_FIRST=0 turns it off; docs/md-engine.md).
    virtual bool signalForwardLaunched(void* event) {
        (void)event;
        return false;
    }
};

}  // namespace haloex::transport
