#pragma once
// The transport-neutral core of the typed halo operations: moves elements of
// a user array along a list of pulses through a transport's exchangeBlock,
// with plain loops for host memory and device kernels for device memory.
// Shared by the particle halo (contiguous receive slots) and usable for
// scattered placements (grid plans: Pulse::recvIndices). gather moves each
// run of consecutive pulses that need nothing from one another (a batch, cut
// alike on every rank: see PulseEngine::batches) with one pack, one
// exchangeBlocks call (exchangeBlocksInPlace on the device where every
// receive is scattered: the unpack reads the blocks where they landed) and
// one unpack; scatterAdd goes pulse by pulse (its additions must keep the
// plan's order). A packed gather (GridHalo::gatherPacked) takes the first
// batch's sends from a staging the caller filled (bindPackedSends) instead of
// packing them. Where the transport binds block patterns (ipc), each batch's
// exchange is bound once per element size. Internal.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "haloex/halo/element.hpp"
#include "haloex/plan/box.hpp"
#include "haloex/plan/pulse.hpp"
#include "haloex/transport/block_transport.hpp"

namespace haloex::halo_detail {

class DeviceMaps;  // device copies of the index maps (pulse_engine_device.cpp)
// Frees them where DeviceMaps is complete (pulse_engine_device.cpp).
struct DeviceMapsDeleter {
    void operator()(DeviceMaps* maps) const;
};

// Whether pulse p's receives land contiguously at its recvOffset.
inline bool contiguous(const plan::Pulse& p) { return p.recvOffset >= 0; }
// Elements this rank sends forward in pulse p (and receives back in reverse).
inline std::size_t sendElements(const plan::Pulse& p) {
    return p.sends() ? static_cast<std::size_t>(p.sendCount()) : 0;
}
// Elements this rank receives forward in pulse p (and sends back in reverse).
inline std::size_t recvElements(const plan::Pulse& p) {
    return p.receives() ? static_cast<std::size_t>(p.recvCount) : 0;
}

// Particle plans place each pulse's received atoms in a contiguous slot after
// the home atoms; InvalidInput for a plan that does not (a grid plan).
void requireContiguousReceiveSlots(const std::vector<plan::Pulse>& pulses);

class PulseEngine {
public:
    // `numLocal`: elements every array holds. Device transports get every
    // host index map uploaded here (send maps, and receive maps of pulses
    // with scattered placement); device-resident send maps are used as they are.
    // `pulsesMayForward`: whether a pulse may forward what an earlier one
    // delivered (particle plans, grid plans with edges and corners) -- a
    // property of the plan's kind, the same on every rank, which decides the
    // batches (see batches()).
    PulseEngine(transport::BlockTransport& transport, std::vector<plan::Pulse> pulses, int numLocal,
                bool pulsesMayForward = true);
    ~PulseEngine();

    // `packed`: the first batch's sends, already packed in the order of
    // packedSendsOf (the staging of bindPackedSends), or null to pack them.
    void gather(void* array, const ElementLayout& layout, const plan::Box* shiftBox, transport::StreamHandle stream,
                const std::byte* packed = nullptr);
    void scatterAdd(void* array, const ElementLayout& layout, transport::StreamHandle stream);
    // Zeroes `bytes` bytes at `array` (host: now; device: enqueued on `stream`).
    void zero(void* array, std::size_t bytes, transport::StreamHandle stream);

    const std::vector<plan::Pulse>& pulses() const { return pulses_; }
    int numLocal() const { return numLocal_; }

    // Pulses [first, first + count) that gather moves together; their sends
    // are packed consecutively, and so are their scattered receives. The cuts
    // are the same on every rank (transports such as ipc pair the ranks'
    // exchangeBlocks calls one for one): where pulses may forward, a batch is
    // the stage-0 pulses of one dimension; otherwise all pulses are one batch.
    struct Batch {
        std::size_t first = 0, count = 0;
        std::size_t sendElements = 0;
        std::size_t scatteredElements = 0;  // received into scratch (scattered placement)
    };
    const std::vector<Batch>& batches() const { return batches_; }

    // The first batch's pulses that a packed gather takes from the staging:
    // pulse p's sends are elements [offset, offset + count) of it, in the
    // order of its send indices (`indices`, in the transport's memory).
    struct PackedPulse {
        std::size_t pulse = 0, offset = 0, count = 0;
        const int* indices = nullptr;
    };
    std::vector<PackedPulse> packedPulses() const;
    // The staging for elements of `elementBytes` bytes (the first batch's
    // sendElements of them, in the transport's memory), made on the first
    // call for that size and kept, unmoved, until the engine goes. The
    // engine never writes it.
    std::byte* packedStaging(std::size_t elementBytes);
    // The first batch's sends of `array` into `staging` (gather's own pack,
    // in packedPulses' order), on `stream` (host: finished on return).
    void packFirstBatch(const void* array, std::size_t elementBytes, std::byte* staging,
                        transport::StreamHandle stream);
    // The staging bound for that size, or null.
    std::byte* boundStaging(std::size_t elementBytes);
    std::vector<std::size_t> boundStagingSizes() const;

private:
    // ---- device memory (pulse_engine_device.cpp) ----
    void uploadMaps();
    const int* deviceSendMap(std::size_t p) const;
    void packFirstBatchDevice(const std::byte* from, std::size_t elementBytes, std::byte* staging,
                              transport::StreamHandle stream);
    void reserveScratch(std::size_t bytes, transport::StreamHandle stream);
    // One block per pulse of `batch`: packed sends from `send` on, scattered
    // receives from `scattered` on, contiguous ones straight into `array`.
    void collectBlocks(const Batch& batch, std::byte* array, std::size_t elementBytes, const std::byte* send,
                       std::byte* scattered);
    void gatherHost(std::byte* array, const ElementLayout& layout, const plan::Box* shiftBox,
                    const std::byte* packedFirst);
    void scatterAddHost(std::byte* array, const ElementLayout& layout);
    void gatherDevice(std::byte* array, const ElementLayout& layout, const plan::Box* shiftBox,
                      transport::StreamHandle stream, const std::byte* packedFirst);
    void scatterAddDevice(std::byte* array, const ElementLayout& layout, transport::StreamHandle stream);
    void zeroDevice(void* array, std::size_t bytes, transport::StreamHandle stream);
    // The scattered receives of batch `b` from where exchangeBlocksInPlace
    // left them (landed_, one per block of blocks_) into `array`.
    void unpackLanded(std::size_t b, std::size_t elementBytes, std::byte* array, transport::StreamHandle stream);
    // exchangeBlocksInPlace of batch b's blocks_, through the pattern the
    // transport bound for (b, elementBytes) (bound on the first call: gather is
    // collective, and every rank binds the same patterns in the same order).
    void exchangeInPlace(std::size_t b, std::size_t elementBytes, transport::StreamHandle stream);

    transport::BlockTransport& transport_;
    std::vector<plan::Pulse> pulses_;
    int numLocal_;
    bool device_;
    std::vector<Batch> batches_;
    std::size_t scratchElements_ = 0;  // the largest pulse or batch side
    std::vector<transport::BlockExchange> blocks_;
    // Per batch: whether all its receives are scattered, so that gather uses
    // exchangeBlocksInPlace and unpacks from where the blocks landed.
    std::vector<std::uint8_t> unpackInPlace_;
    std::vector<const void*> landed_;  // exchangeBlocksInPlace's answer (kept: no allocation per call)
    // Host memory: scratch for packed sends and scattered receives.
    std::vector<std::byte> hostSend_, hostRecv_;
    std::unique_ptr<DeviceMaps, DeviceMapsDeleter> deviceMaps_;  // also owns the device scratch
    // Packed gathers' stagings by element size (host or device memory).
    struct Staging;
    std::map<std::size_t, std::unique_ptr<Staging>> stagings_;
    // The transport's block patterns by (batch, element size); -1: none.
    std::map<std::pair<std::size_t, std::size_t>, int> patterns_;
};

}  // namespace haloex::halo_detail
