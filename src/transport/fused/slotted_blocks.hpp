#pragma once
// The search-step block exchange of the GPU-initiated transports, written
// once (BlockTransport::exchangeBlocks / exchangeBlocksInPlace): block b of a
// call lands in slot b of the receiver's staging and raises the receiver's
// signal b to the call's sequence number; each rank waits for the blocks it
// receives and reads them where they landed (in place) or copies them out.
// exchangeAgreedBlocksInPlace takes the slot size from a collective of the
// caller's and makes neither the synchronisation nor the reduction.
// What differs between transports -- how bytes and signals reach a peer, how
// the staging is allocated, how a rank waits -- is the PeerOps policy:
//
//   void synchronize(StreamHandle)          this rank's earlier work on the
//                                           stream is done (it has read its
//                                           previous blocks)
//   void growStaging(std::size_t bytes)     collective: this rank's staging
//                                           holds `bytes` (the same on every
//                                           rank), and every rank's new one is
//                                           in place before any rank returns
//   std::byte* staging()                    this rank's staging
//   void deliver(std::span<const SlotSend>, const SlotWait&, std::uint64_t
//                sequence, StreamHandle)    the sends into the receivers'
//                                           slots with their signals, then
//                                           the timed wait for this rank's
//   void copyOut(void* to, const void* from, std::size_t bytes, StreamHandle)
//
// nvshmem: put-with-signal and a waiting kernel; nccl-device: a copy kernel
// into the peers' windows, a kernel that raises their signals and waits; the
// host policy of the tests: memcpy and atomics between thread ranks, so CPU
// CI runs this logic.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "haloex/core/error.hpp"
#include "haloex/runtime/world.hpp"
#include "haloex/transport/block_transport.hpp"
#include "haloex/transport/types.hpp"

namespace haloex::transport {

// Blocks one exchangeBlocks call moves together (each has its own signal and
// staging slot): a grid halo's 26 neighbours fit; a call with more makes one
// exchange per block.
inline constexpr int kMaxSlottedBlocks = 32;

// One block this rank sends: into slot `slot` (at `slotOffset` bytes) of rank `dest`'s staging.
struct SlotSend {
    const void* send = nullptr;
    std::size_t bytes = 0;
    int dest = -1;
    int slot = 0;
    std::size_t slotOffset = 0;
};

// The blocks this rank receives in a call: their slots and senders.
struct SlotWait {
    int count = 0;
    int slot[kMaxSlottedBlocks] = {};
    int peer[kMaxSlottedBlocks] = {};
};

template <class PeerOps>
class SlottedBlockExchange {
public:
    SlottedBlockExchange(runtime::World& world, PeerOps& ops) : world_(world), ops_(ops) {}

    void exchangeBlocks(std::span<const BlockExchange> blocks, StreamHandle stream) {
        landed_.resize(blocks.size());
        exchangeBlocksInPlace(blocks, landed_, stream);
        for (std::size_t b = 0; b < blocks.size(); ++b) {
            if (blocks[b].src >= 0 && blocks[b].recvBytes > 0) {
                ops_.copyOut(blocks[b].recv, landed_[b], blocks[b].recvBytes, stream);
            }
        }
    }

    void exchangeBlocksInPlace(std::span<const BlockExchange> blocks, std::span<const void*> landed,
                               StreamHandle stream) {
        HALOEX_ASSERT(landed.size() == blocks.size(), "exchangeBlocksInPlace: one landed entry per block");
        if (blocks.size() > static_cast<std::size_t>(kMaxSlottedBlocks)) {
            oneCallPerBlock(blocks, landed, stream);
            return;
        }
        // This rank has read its previous blocks; the reduction that sizes the
        // slots then orders the calls: no rank stores the next blocks before
        // every rank has read its previous ones.
        ops_.synchronize(stream);
        std::size_t mySlot = 0;
        for (const BlockExchange& b : blocks) {
            if (b.dest >= 0) mySlot = std::max(mySlot, b.sendBytes);
        }
        const auto slot = world_.allReduceValue<std::int64_t>(slotBytes(mySlot), runtime::ReduceOp::Max);
        deliverInSlots(blocks, landed, slot, stream);
    }

    // BlockTransport::exchangeAgreedBlocksInPlace: the caller's collective
    // has sized the slots and ordered the calls (every rank synchronised
    // before it), so neither the synchronisation nor the reduction above.
    void exchangeAgreedBlocksInPlace(std::span<const BlockExchange> blocks, std::span<const void*> landed,
                                     std::size_t agreedMaxSendBytes, StreamHandle stream) {
        HALOEX_ASSERT(landed.size() == blocks.size(), "exchangeAgreedBlocksInPlace: one landed entry per block");
        requireWithinAgreement(blocks, agreedMaxSendBytes);
        if (blocks.size() > static_cast<std::size_t>(kMaxSlottedBlocks)) {
            oneCallPerBlock(blocks, landed, stream);  // the same block count on every rank: all go this way
            return;
        }
        deliverInSlots(blocks, landed, slotBytes(agreedMaxSendBytes), stream);
    }

    // The signals' current value: calls made so far.
    std::uint64_t sequence() const { return sequence_; }
    std::size_t stagingBytes() const { return static_cast<std::size_t>(capacity_); }

private:
    static std::int64_t slotBytes(std::size_t sendBytes) {
        return static_cast<std::int64_t>((sendBytes + 15) / 16 * 16);
    }

    // More blocks than signals: one call each, delivered to recv (a later
    // call would overwrite the staging an earlier one landed in).
    void oneCallPerBlock(std::span<const BlockExchange> blocks, std::span<const void*> landed, StreamHandle stream) {
        for (std::size_t b = 0; b < blocks.size(); ++b) {
            exchangeBlocks(blocks.subspan(b, 1), stream);
            landed[b] = blocks[b].recv;
        }
    }

    // Slot b of every receiver at b * slot (the same slot on every rank).
    void deliverInSlots(std::span<const BlockExchange> blocks, std::span<const void*> landed, std::int64_t slot,
                        StreamHandle stream) {
        const std::int64_t need = std::max<std::int64_t>(slot * static_cast<std::int64_t>(blocks.size()), 16);
        if (need > capacity_) {
            // Every rank grows alike (the same need), with headroom.
            capacity_ = std::max<std::int64_t>(need, capacity_ * 5 / 4) + 4096;
            ops_.growStaging(static_cast<std::size_t>(capacity_));
        }
        ++sequence_;
        std::byte* staging = ops_.staging();
        sends_.clear();
        SlotWait wait;
        for (std::size_t b = 0; b < blocks.size(); ++b) {
            const BlockExchange& block = blocks[b];
            const std::size_t slotOffset = b * static_cast<std::size_t>(slot);
            if (block.dest >= 0) {
                sends_.push_back({block.send, block.sendBytes, block.dest, static_cast<int>(b), slotOffset});
            }
            landed[b] = block.recv;
            if (block.src >= 0) {
                wait.slot[wait.count] = static_cast<int>(b);
                wait.peer[wait.count] = block.src;
                ++wait.count;
                landed[b] = staging + slotOffset;
            }
        }
        ops_.deliver(sends_, wait, sequence_, stream);
    }

    runtime::World& world_;
    PeerOps& ops_;
    std::int64_t capacity_ = 0;
    std::uint64_t sequence_ = 0;
    std::vector<SlotSend> sends_;      // per call, kept (no allocation per call)
    std::vector<const void*> landed_;  // exchangeBlocks' scratch
};

}  // namespace haloex::transport
