#pragma once
/// @file
/// The job's ranks as seen from one of them: identity, the local rank that
/// picks a GPU, and the host-side collectives used at set-up and at
/// repartitioning (never on an MD step's critical path).
///
/// Implementations: MpiWorld (one process per rank, launched by mpirun/srun)
/// and the in-process thread world (virtual ranks as threads, for the CPU
/// reference path and tests). Every call is blocking on the calling host thread.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace haloex::runtime {

/// How World::allReduce combines the ranks' values.
enum class ReduceOp {
    Sum,  ///< the sum
    Max,  ///< the largest
    Min,  ///< the smallest
};

/// One entry of World::sendRecvMany: what sendRecvBytes takes, without the tag.
struct PeerMessage {
    std::span<const std::byte> send;  ///< the bytes sent
    int dest = -1;                    ///< to this rank (-1: none)
    std::span<std::byte> recv;        ///< where exactly recv.size() bytes land
    int src = -1;                     ///< from this rank (-1: none)
};

/// The job's ranks as seen from one of them (see the file's description).
class World {
public:
    virtual ~World() = default;

    virtual int rank() const = 0;  ///< this rank, 0 .. size() - 1
    virtual int size() const = 0;  ///< the number of ranks
    /// Rank among the ranks on this node, and their count (to pick a GPU).
    virtual int localRank() const = 0;
    virtual int localSize() const = 0;     ///< the number of ranks on this node
    virtual std::string kind() const = 0;  ///< "mpi", "threads", "single"

    virtual void barrier() = 0;  ///< returns when every rank has called it
    /// Sends `send` to `dest` and receives exactly recv.size() bytes from `src`.
    /// Either peer may be -1 (no peer, like MPI_PROC_NULL): nothing is sent,
    /// or nothing is received (recv must then be empty).
    virtual void sendRecvBytes(std::span<const std::byte> send, int dest, std::span<std::byte> recv, int src,
                               int tag) = 0;
    /// Several sendRecvBytes of one tag at once; the messages must not overlap
    /// one another's receive ranges. Matched as the same sendRecvBytes calls
    /// in entry order would be (messages of one tag between two ranks arrive
    /// in order), so the result is the same; MpiWorld posts every receive,
    /// then every send, and waits for all together (one round trip instead of
    /// one per message). This default makes one sendRecvBytes per entry, in
    /// order: fine wherever that sequence cannot deadlock (every rank walks
    /// its entries in the same order, as the halo exchanges do).
    virtual void sendRecvMany(std::span<const PeerMessage> messages, int tag) {
        for (const PeerMessage& m : messages) sendRecvBytes(m.send, m.dest, m.recv, m.src, tag);
    }
    /// Every rank's `values` combined element by element with `op`; the result on every rank.
    virtual void allReduce(std::span<double> values, ReduceOp op) = 0;
    /// Every rank's `values` combined element by element with `op`; the result on every rank.
    virtual void allReduce(std::span<std::int64_t> values, ReduceOp op) = 0;
    /// `root`'s `data` into every rank's (the same size on all).
    virtual void broadcastBytes(std::span<std::byte> data, int root) = 0;
    /// Every rank contributes mine.size() bytes (the same on all ranks).
    virtual void allGatherBytes(std::span<const std::byte> mine, std::span<std::byte> all) = 0;
    /// sendCounts[r] bytes of `send` (consecutively) go to rank r; returns what
    /// arrived, ordered by source rank, and fills recvCounts.
    virtual std::vector<std::byte> allToAllBytes(std::span<const std::byte> send,
                                                 std::span<const std::int64_t> sendCounts,
                                                 std::vector<std::int64_t>& recvCounts) = 0;
    /// Ends the whole job (every rank) with a message; used when one rank has
    /// found an error that the others cannot see, so nobody hangs.
    [[noreturn]] virtual void abort(const std::string& message, int code = 1) = 0;

    /// sendRecvBytes of trivially copyable elements; returns what `src` sent
    /// (the size exchanged first).
    template <class T>
    std::vector<T> sendRecv(const std::vector<T>& send, int dest, int src, int tag);
    /// allReduce of one value (double or std::int64_t and what converts to them).
    template <class T>
    T allReduceValue(T value, ReduceOp op);
    /// Every rank's `mine` (trivially copyable), by rank.
    template <class T>
    std::vector<T> allGather(const T& mine);
    /// sendByRank[r] to rank r; returns what each rank sent to this one, by rank.
    template <class T>
    std::vector<T> allToAll(const std::vector<std::vector<T>>& sendByRank);
};

/// Runs `body` on `numRanks` threads, each with its own World. Rethrows the
/// first exception a rank raised (the others are released with an error
/// instead of hanging).
void runInProcess(int numRanks, const std::function<void(World&)>& body);

/// A world of one rank (no MPI, no threads).
World& singleRankWorld();

/// Collective: the reason of the lowest rank that has one (empty when none
/// has), the same text on every rank -- so that no rank goes on to a
/// collective step the others skip because of a reason only they saw.
std::string agreeOnReason(World& world, const std::string& mine);

// ---- typed helpers ----------------------------------------------------------
template <class T>
std::vector<T> World::sendRecv(const std::vector<T>& send, int dest, int src, int tag) {
    static_assert(std::is_trivially_copyable_v<T>);
    std::int64_t sendCount = static_cast<std::int64_t>(send.size());
    std::int64_t recvCount = 0;
    std::span<std::int64_t> recvCountSpan(&recvCount, src >= 0 ? 1 : 0);
    sendRecvBytes(std::as_bytes(std::span(&sendCount, 1)), dest, std::as_writable_bytes(recvCountSpan), src, tag);
    std::vector<T> recv(static_cast<std::size_t>(recvCount));
    sendRecvBytes(std::as_bytes(std::span(send)), dest, std::as_writable_bytes(std::span(recv)), src, tag);
    return recv;
}

template <class T>
T World::allReduceValue(T value, ReduceOp op) {
    if constexpr (std::is_floating_point_v<T>) {
        double v = value;
        allReduce(std::span(&v, 1), op);
        return static_cast<T>(v);
    } else {
        std::int64_t v = value;
        allReduce(std::span(&v, 1), op);
        return static_cast<T>(v);
    }
}

template <class T>
std::vector<T> World::allGather(const T& mine) {
    static_assert(std::is_trivially_copyable_v<T>);
    std::vector<T> all(static_cast<std::size_t>(size()));
    allGatherBytes(std::as_bytes(std::span(&mine, 1)), std::as_writable_bytes(std::span(all)));
    return all;
}

template <class T>
std::vector<T> World::allToAll(const std::vector<std::vector<T>>& sendByRank) {
    static_assert(std::is_trivially_copyable_v<T>);
    std::vector<std::byte> send;
    std::vector<std::int64_t> sendCounts(static_cast<std::size_t>(size()), 0);
    for (std::size_t r = 0; r < sendByRank.size(); ++r) {
        const auto bytes = std::as_bytes(std::span(sendByRank[r]));
        send.insert(send.end(), bytes.begin(), bytes.end());
        sendCounts[r] = static_cast<std::int64_t>(bytes.size());
    }
    std::vector<std::int64_t> recvCounts;
    const std::vector<std::byte> recv = allToAllBytes(send, sendCounts, recvCounts);
    std::vector<T> out(recv.size() / sizeof(T));
    std::memcpy(out.data(), recv.data(), recv.size());
    return out;
}

}  // namespace haloex::runtime
