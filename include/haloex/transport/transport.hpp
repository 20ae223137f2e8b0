#pragma once
// The one interface every particle halo transport implements (docs/architecture.md#layers).
//
// A transport owns the rank's per-atom coordinate and force arrays (home
// atoms first, then the receive slots of the plan), because some mechanisms
// need them in special memory (NVSHMEM's symmetric heap). It moves data in two
// verbs: forward (coordinates, owners -> halo copies, shifted by the periodic
// box) and reverse (forces, halo copies -> owners, accumulated).
//
// Ordering: forward/reverse/clearForces are enqueued on the given CUDA stream
// (StreamHandle is a cudaStream_t; null for host transports, which complete
// before returning). Only the CPU-orchestrated transports (staged, ipc) block
// the calling host thread inside them; count() reports how often.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "haloex/core/vec3.hpp"
#include "haloex/plan/box.hpp"
#include "haloex/plan/particle_plan.hpp"

namespace haloex::transport {

using StreamHandle = void*;

enum class MemorySpace { Host, Device };

// Counters a transport keeps so runs can report what the host did.
struct TransportCounters {
    std::int64_t forwardCalls = 0;
    std::int64_t reverseCalls = 0;
    std::int64_t hostSyncs = 0;  // host waits on device work or on peers inside forward/reverse
};

// One block of ParticleTransport::exchangeBlocks: exchangeBlock's arguments.
struct BlockExchange {
    const void* send = nullptr;
    std::size_t sendBytes = 0;
    int dest = -1;
    void* recv = nullptr;
    std::size_t recvBytes = 0;
    int src = -1;
};

class ParticleTransport {
public:
    virtual ~ParticleTransport() = default;

    virtual std::string name() const = 0;
    virtual MemorySpace memorySpace() const = 0;

    // Collective over the job: adopts a new plan (after repartitioning) and
    // makes coordinates()/forces() hold at least plan.numLocal atoms. Array
    // contents are not preserved; pointers may change.
    virtual void setPlan(const plan::ParticleHaloPlan& plan) = 0;
    virtual const plan::ParticleHaloPlan& plan() const = 0;

    // numLocal atoms each, in memorySpace().
    virtual Vec3f* coordinates() = 0;
    virtual Vec3f* forces() = 0;

    // Forward: the plan's send entries of coordinates() (shifted by the box
    // where the plan says so) into the receivers' slots.
    virtual void forwardCoordinates(const plan::Box& box, StreamHandle stream) = 0;
    // Reverse: forces of received atoms back to their owners, added into the
    // owners' entries. After it the home entries hold complete forces.
    virtual void reverseForces(StreamHandle stream) = 0;
    // Zeroes forces() for the next step, ordered after any peer's reads of them.
    virtual void clearForces(StreamHandle stream) = 0;
    // Forward of a caller-owned per-atom array of numLocal elements of
    // `elementSize` bytes in memorySpace() (static data at search steps:
    // types, charges, global ids). May block the host.
    virtual void forwardBytes(void* data, std::size_t elementSize, StreamHandle stream) = 0;

    // A hint before the first setPlan: plans of up to `localAtoms` local
    // atoms per rank are coming (transports that initialise a library with a
    // fixed-size heap on first use size it from this). Not collective.
    virtual void reserveAtoms(std::int64_t localAtoms) { (void)localAtoms; }

    // Search steps (particles migrating to their new owners, a plan built on
    // the device): sends `sendBytes` bytes at `send` to rank `dest` while
    // receiving `recvBytes` bytes from rank `src` into `recv`, both in
    // memorySpace(), by this transport's own mechanism (NVSHMEM put with
    // signal, NCCL send/receive, host staging for the CPU-orchestrated
    // ones). A rank of -1 means nothing to send (or receive). Both sides know
    // the sizes beforehand (the caller exchanges counts over the World).
    // Collective: every rank makes the same sequence of calls. Ordered on
    // `stream`: `recv` holds the data for work enqueued there after the call,
    // and `send` must stay unchanged until then. May block the host.
    virtual void exchangeBlock(const void* send, std::size_t sendBytes, int dest, void* recv, std::size_t recvBytes,
                               int src, StreamHandle stream) = 0;
    // Several exchangeBlock calls in one, for blocks that do not depend on one
    // another: no block sends bytes that another block of the call receives,
    // and no two receive ranges overlap. The transport may move them together
    // (one host sync for all, one NCCL group, one handshake round). Collective
    // like exchangeBlock: every rank passes the same number of blocks, and
    // block i of a rank pairs with block i of its peers. Ordered on `stream`
    // as exchangeBlock is. The default makes one exchangeBlock call per block.
    virtual void exchangeBlocks(std::span<const BlockExchange> blocks, StreamHandle stream) {
        for (const BlockExchange& b : blocks) {
            exchangeBlock(b.send, b.sendBytes, b.dest, b.recv, b.recvBytes, b.src, stream);
        }
    }
    // exchangeBlocks that may leave what block i received where it landed in
    // the transport's own memory: on return landed[i] (one entry per block)
    // points at those bytes, in memorySpace(), ordered on `stream` like recv
    // (it is blocks[i].recv wherever the transport delivered there). They stay
    // unchanged only until this transport's next call that moves data, so
    // work that reads them must be enqueued on `stream` before that call. The
    // same exchange for the peers: a rank may call this or exchangeBlocks
    // whichever its peers call. The default is exchangeBlocks, landed = recv.
    virtual void exchangeBlocksInPlace(std::span<const BlockExchange> blocks, std::span<const void*> landed,
                                       StreamHandle stream) {
        exchangeBlocks(blocks, stream);
        for (std::size_t i = 0; i < blocks.size() && i < landed.size(); ++i) landed[i] = blocks[i].recv;
    }
    // A repeating exchange (a halo gather: the same blocks call after call,
    // only their bytes and addresses changing) may be bound once, so that the
    // transport negotiates then what exchangeBlocks would on every call (ipc:
    // the receivers' landing offers). Collective like exchangeBlocks: every
    // rank binds its blocks of the same exchange in the same order (block i
    // pairing with block i of the peers, as there); only each block's ranks
    // and byte counts are kept. Returns the pattern's id, or -1 where the
    // transport binds nothing (the default) -- the same answer on every rank.
    virtual int bindBlockPattern(std::span<const BlockExchange> blocks) {
        (void)blocks;
        return -1;
    }
    // exchangeBlocksInPlace of blocks whose ranks and byte counts are those
    // bound as `pattern`, with its every guarantee (order on `stream`, landed
    // bytes unchanged until this transport's next call that moves data,
    // collective). Every rank of the exchange calls this form for a pattern it
    // bound (the protocol may differ from the unbound one). The default is
    // exchangeBlocksInPlace.
    virtual void exchangeBoundBlocksInPlace(int pattern, std::span<const BlockExchange> blocks,
                                            std::span<const void*> landed, StreamHandle stream) {
        (void)pattern;
        exchangeBlocksInPlace(blocks, landed, stream);
    }

    virtual const TransportCounters& counters() const = 0;

    // Lines for the run summary: what the transport chose and why (e.g. the
    // nvshmem path towards every peer).
    virtual std::vector<std::string> describe() const { return {}; }
    // Throws (e.g. Error(Timeout) with the diagnostic) if the transport has
    // detected a failure in work already queued. Call after synchronising.
    virtual void checkForFailure() const {}
    // Whether forward/reverse/clearForces may be captured in a CUDA graph
    // (no host synchronisation, no host-side state that changes per call).
    virtual bool graphCapturable() const { return false; }
};

}  // namespace haloex::transport
