#pragma once
// exchangeBlock(s) of the GPU-initiated transports whose exchangeBlocksInPlace
// leaves block b of a call in slot b of their staging (nvshmem; the
// load/store transports, nccl-device): one block is a call of one,
// exchangeBlocks copies each landed block out, and every call starts the same
// way (beginBlockCall). The data movement itself is the transport's.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "haloex/core/error.hpp"
#include "haloex/cuda/check.hpp"
#include "haloex/runtime/world.hpp"
#include "haloex/transport/transport.hpp"
#include "search_blocks.hpp"

namespace haloex::transport {

class SlottedBlockTransport : public ParticleTransport {
public:
    void exchangeBlock(const void* send, std::size_t sendBytes, int dest, void* recv, std::size_t recvBytes, int src,
                       StreamHandle stream) final {
        const BlockExchange block{send, sendBytes, dest, recv, recvBytes, src};
        exchangeBlocks(std::span(&block, 1), stream);
    }

    void exchangeBlocks(std::span<const BlockExchange> blocks, StreamHandle stream) final {
        landed_.resize(blocks.size());
        exchangeBlocksInPlace(blocks, landed_, stream);
        for (std::size_t b = 0; b < blocks.size(); ++b) {
            if (blocks[b].src >= 0 && blocks[b].recvBytes > 0) {
                HALOEX_CUDA_CHECK(cudaMemcpyAsync(blocks[b].recv, landed_[b], blocks[b].recvBytes,
                                                  cudaMemcpyDeviceToDevice, static_cast<cudaStream_t>(stream)));
            }
        }
    }

protected:
    // The start of every exchangeBlocksInPlace. A call of more blocks than
    // there are signals is made block by block, each delivered to its recv
    // (a later call would overwrite the staging an earlier one landed in):
    // then it returns nothing and the call is done. Otherwise it synchronises
    // `stream` (this rank has read its previous blocks) and returns the slot
    // size every rank agrees on, the largest block of the call rounded up to
    // 16 bytes. That reduction orders the calls: no rank stores the next
    // blocks before every rank has read its previous ones.
    std::optional<std::int64_t> beginBlockCall(runtime::World& world, std::span<const BlockExchange> blocks,
                                               std::span<const void*> landed, StreamHandle stream) {
        HALOEX_ASSERT(landed.size() == blocks.size(), "exchangeBlocksInPlace: one landed entry per block");
        if (blocks.size() > static_cast<std::size_t>(nvshmem_detail::kMaxBlocksPerCall)) {
            for (std::size_t b = 0; b < blocks.size(); ++b) {
                const BlockExchange& x = blocks[b];
                exchangeBlock(x.send, x.sendBytes, x.dest, x.recv, x.recvBytes, x.src, stream);
                landed[b] = x.recv;
            }
            return std::nullopt;
        }
        HALOEX_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
        std::int64_t mySlot = 0;
        for (const BlockExchange& b : blocks) {
            if (b.dest >= 0) mySlot = std::max(mySlot, static_cast<std::int64_t>((b.sendBytes + 15) / 16 * 16));
        }
        return world.allReduceValue<std::int64_t>(mySlot, runtime::ReduceOp::Max);
    }

private:
    std::vector<const void*> landed_;  // exchangeBlocks' scratch
};

}  // namespace haloex::transport
