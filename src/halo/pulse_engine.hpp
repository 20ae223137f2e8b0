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
// plan's order). Internal.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "haloex/halo/element.hpp"
#include "haloex/plan/box.hpp"
#include "haloex/plan/pulse.hpp"
#include "haloex/transport/transport.hpp"

namespace haloex::halo_detail {

class DeviceMaps;  // device copies of the index maps (pulse_engine.cpp)

class PulseEngine {
public:
    // `numLocal`: elements every array holds. Device transports get every
    // host index map uploaded here (send maps, and receive maps of pulses
    // with scattered placement); device-resident send maps are used as they are.
    // `pulsesMayForward`: whether a pulse may forward what an earlier one
    // delivered (particle plans, grid plans with edges and corners) -- a
    // property of the plan's kind, the same on every rank, which decides the
    // batches (see batches()).
    PulseEngine(transport::ParticleTransport& transport, std::vector<plan::Pulse> pulses, int numLocal,
                bool pulsesMayForward = true);
    ~PulseEngine();

    void gather(void* array, const ElementLayout& layout, const plan::Box* shiftBox, transport::StreamHandle stream);
    void scatterAdd(void* array, const ElementLayout& layout, transport::StreamHandle stream);

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

private:
    void reserveScratch(std::size_t bytes, transport::StreamHandle stream);
    // One block per pulse of `batch`: packed sends from `send` on, scattered
    // receives from `scattered` on, contiguous ones straight into `array`.
    void collectBlocks(const Batch& batch, std::byte* array, std::size_t elementBytes, std::byte* send,
                       std::byte* scattered);
    void gatherHost(std::byte* array, const ElementLayout& layout, const plan::Box* shiftBox);
    void scatterAddHost(std::byte* array, const ElementLayout& layout);
    void gatherDevice(std::byte* array, const ElementLayout& layout, const plan::Box* shiftBox,
                      transport::StreamHandle stream);
    void scatterAddDevice(std::byte* array, const ElementLayout& layout, transport::StreamHandle stream);
    // The scattered receives of batch `b` from where exchangeBlocksInPlace
    // left them (landed_, one per block of blocks_) into `array`.
    void unpackLanded(std::size_t b, std::size_t elementBytes, std::byte* array, transport::StreamHandle stream);

    transport::ParticleTransport& transport_;
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
    std::unique_ptr<DeviceMaps> deviceMaps_;  // also owns the device scratch
};

}  // namespace haloex::halo_detail
