#pragma once
/// @file
/// The interface a halo backend implements (`docs/api.md#writing-a-backend`):
/// moving blocks of bytes between the ranks of a plan. Everything the halo API
/// does -- typed gathers and scatter-adds, grid halos, the particle search
/// step's migration and plan building, and the coordinate/force exchange of an
/// MD step -- is built on exchangeBlocks. A backend that can do the MD step's
/// exchange faster than a pulse-by-pulse gather (fused kernels, peer stores)
/// adds that as its fast path: makeCoordinateForceExchange().
///
/// A new backend's minimum is three methods: name(), memorySpace() and
/// exchangeBlocks(). The others have defaults that are correct for any
/// backend; they exist for speed (in-place delivery, bound patterns, the fast
/// path) and diagnostics.
///
/// Ordering: calls are enqueued on the given CUDA stream (StreamHandle is a
/// cudaStream_t; null for host backends, which complete before returning).
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "haloex/transport/coordinate_force_exchange.hpp"
#include "haloex/transport/types.hpp"

namespace haloex::transport {

/// Throws InvalidInput naming the first block that sends more than
/// `agreedMaxSendBytes` (BlockTransport::exchangeAgreedBlocksInPlace).
void requireWithinAgreement(std::span<const BlockExchange> blocks, std::size_t agreedMaxSendBytes);

/// A halo backend: moves blocks of bytes between the ranks of a plan (see
/// the file's description). Made by the registry (registry.hpp).
class BlockTransport {
public:
    virtual ~BlockTransport() = default;

    // ---- the minimum a backend implements --------------------------------------

    /// The backend's name, as the registry spells it ("staged", "nvshmem", ...).
    virtual std::string name() const = 0;
    /// Where the arrays it moves live.
    virtual MemorySpace memorySpace() const = 0;
    /// Several blocks that do not depend on one another (no block sends bytes
    /// that another block of the call receives; no two receive ranges
    /// overlap), moved together. Collective: every rank of the World passes
    /// the same number of blocks, and block i of a rank pairs with block i of
    /// its peers; both sides know every size beforehand. Ordered on `stream`:
    /// the received bytes are there for work enqueued on `stream` after the
    /// call, and the sent ones must stay unchanged until then. May block the
    /// host.
    virtual void exchangeBlocks(std::span<const BlockExchange> blocks, StreamHandle stream) = 0;

    // ---- optional: faster forms, and the MD step's fast path -------------------

    /// exchangeBlocks that may leave what block i received where it landed in
    /// the transport's own memory: on return landed[i] (one entry per block)
    /// points at those bytes, in memorySpace(), ordered on `stream` like recv
    /// (it is blocks[i].recv wherever the transport delivered there). They stay
    /// unchanged only until this transport's next call that moves data, so
    /// work that reads them must be enqueued on `stream` before that call. A
    /// rank may call this or exchangeBlocks, whichever its peers call. The
    /// default is exchangeBlocks, landed = recv.
    virtual void exchangeBlocksInPlace(std::span<const BlockExchange> blocks, std::span<const void*> landed,
                                       StreamHandle stream) {
        exchangeBlocks(blocks, stream);
        for (std::size_t i = 0; i < blocks.size() && i < landed.size(); ++i) landed[i] = blocks[i].recv;
    }
    /// exchangeBlocksInPlace where the caller has already agreed, in a
    /// collective of its own, on what a transport would otherwise agree on
    /// in one: `agreedMaxSendBytes` is the same on every rank and at least
    /// every rank's largest sendBytes in this call, and every rank had
    /// synchronised the streams that read what its previous call delivered
    /// before it entered that collective (a search step reads its counts
    /// from the device and exchanges them: that exchange, made a collective,
    /// is the agreement). A transport that sizes its receive slots
    /// collectively (nvshmem, nccl-device) then skips its own stream
    /// synchronisation and reduction. Throws InvalidInput, before moving
    /// anything, for a block larger than agreed. The default checks that and
    /// is exchangeBlocksInPlace.
    virtual void exchangeAgreedBlocksInPlace(std::span<const BlockExchange> blocks, std::span<const void*> landed,
                                             std::size_t agreedMaxSendBytes, StreamHandle stream) {
        requireWithinAgreement(blocks, agreedMaxSendBytes);
        exchangeBlocksInPlace(blocks, landed, stream);
    }
    /// A repeating exchange (a halo gather: the same blocks call after call,
    /// only their bytes and addresses changing) may be bound once, so that the
    /// transport negotiates then what exchangeBlocks would on every call (ipc:
    /// the receivers' landing offers). Collective like exchangeBlocks: every
    /// rank binds its blocks of the same exchange in the same order; only each
    /// block's ranks and byte counts are kept. Returns the pattern's id, or -1
    /// where the transport binds nothing (the default) -- the same answer on
    /// every rank.
    virtual int bindBlockPattern(std::span<const BlockExchange> blocks) {
        (void)blocks;
        return -1;
    }
    /// exchangeBlocksInPlace of blocks whose ranks and byte counts are those
    /// bound as `pattern`, with its every guarantee. Every rank of the exchange
    /// calls this form for a pattern it bound. The default is exchangeBlocksInPlace.
    virtual void exchangeBoundBlocksInPlace(int pattern, std::span<const BlockExchange> blocks,
                                            std::span<const void*> landed, StreamHandle stream) {
        (void)pattern;
        exchangeBlocksInPlace(blocks, landed, stream);
    }

    /// The backend's own exchange of an MD step's coordinates and forces on
    /// the caller's arrays (coordinate_force_exchange.hpp), or null: the halo
    /// API then moves them through exchangeBlocks (halo/coordinate_force_halo.hpp).
    /// Not collective. The transport must outlive what it returns.
    virtual std::unique_ptr<CoordinateForceExchange> makeCoordinateForceExchange() { return nullptr; }
    /// The memory that exchange needs the caller's arrays in.
    virtual ArrayMemory arrayMemory() const {
        return memorySpace() == MemorySpace::Host ? ArrayMemory::Host : ArrayMemory::Device;
    }

    // ---- optional: diagnostics --------------------------------------------------

    /// Lines for a run summary: what the transport chose and why.
    virtual std::vector<std::string> describe() const { return {}; }
    /// Throws (e.g. Error(Timeout) with the diagnostic) if the transport has
    /// detected a failure in work already queued. Call after synchronising.
    virtual void checkForFailure() const {}

    // ---- provided -------------------------------------------------------------

    /// One block: exchangeBlocks of a single BlockExchange.
    void exchangeBlock(const void* send, std::size_t sendBytes, int dest, void* recv, std::size_t recvBytes, int src,
                       StreamHandle stream) {
        const BlockExchange block{send, sendBytes, dest, recv, recvBytes, src};
        exchangeBlocks(std::span(&block, 1), stream);
    }
};

}  // namespace haloex::transport
