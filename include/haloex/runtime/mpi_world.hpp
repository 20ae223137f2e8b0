#pragma once
/// @file
/// The MPI runtime: one process per rank, launched by mpirun/srun (`docs/architecture.md#layers`).
///
/// MpiSession owns MPI's lifetime (create one at the top of main, before any
/// MpiWorld); MpiWorld is the World over a private duplicate of a communicator,
/// so haloex's messages never match the application's. Every MPI failure
/// throws Error(Runtime) with MPI's own error string and the failing call.
/// Every exchange is nonblocking underneath and polled with a time limit
/// (haloex/detail/runtime/host_wait.hpp): a peer that stops responding gives
/// Error(Timeout) naming this rank, the operation and the peer, instead of a
/// job that spins forever. The timed-out operation stays posted (MPI cannot
/// cancel a collective): end the job with abort(), as haloex's tools do.
#include <mpi.h>

#include <span>
#include <string>

#include "haloex/runtime/world.hpp"

namespace haloex::runtime {

/// MPI initialised for the session's lifetime (finalised with it when it initialised MPI).
class MpiSession {
public:
    /// MPI_Init_thread(MPI_THREAD_FUNNELED): only the thread that created the
    /// session calls MPI. If MPI is already initialised (by the application),
    /// the session neither initialises nor finalises it.
    MpiSession();
    /// The same, passing the program's arguments to MPI_Init_thread.
    MpiSession(int& argc, char**& argv);
    MpiSession(const MpiSession&) = delete;
    MpiSession& operator=(const MpiSession&) = delete;
    ~MpiSession();  ///< MPI_Finalize when this session initialised MPI

    bool ownsMpi() const { return owns_; }  ///< whether this session initialised MPI

    /// runtime::launchedByMpiLauncher() (launched_world.hpp, every build).
    static bool launchedByMpiLauncher();

private:
    void init(int* argc, char*** argv);
    bool owns_ = false;
};

/// The World of an MPI communicator: one process per rank.
class MpiWorld final : public World {
public:
    /// Duplicates `parent` (needs an initialised MPI: create an MpiSession
    /// first). Collective over `parent`.
    explicit MpiWorld(MPI_Comm parent = MPI_COMM_WORLD);
    MpiWorld(const MpiWorld&) = delete;
    MpiWorld& operator=(const MpiWorld&) = delete;
    ~MpiWorld() override;

    int rank() const override { return rank_; }
    int size() const override { return size_; }
    int localRank() const override { return localRank_; }
    int localSize() const override { return localSize_; }
    std::string kind() const override { return "mpi"; }

    void barrier() override;
    void sendRecvBytes(std::span<const std::byte> send, int dest, std::span<std::byte> recv, int src, int tag) override;
    /// Every receive (in pieces of at most 1 GiB, as sendRecvBytes), then every
    /// send, then one timed wait for all; a timeout names the pieces pending.
    void sendRecvMany(std::span<const PeerMessage> messages, int tag) override;
    void allReduce(std::span<double> values, ReduceOp op) override;
    void allReduce(std::span<std::int64_t> values, ReduceOp op) override;
    void broadcastBytes(std::span<std::byte> data, int root) override;
    void allGatherBytes(std::span<const std::byte> mine, std::span<std::byte> all) override;
    std::vector<std::byte> allToAllBytes(std::span<const std::byte> send, std::span<const std::int64_t> sendCounts,
                                         std::vector<std::int64_t>& recvCounts) override;
    /// Prints "haloex: rank R aborts the job: <message>" to stderr, then MPI_Abort.
    [[noreturn]] void abort(const std::string& message, int code = 1) override;

    /// The private communicator (e.g. to bootstrap NVSHMEM or NCCL).
    MPI_Comm comm() const { return comm_; }
    /// The communicator of the ranks on this node.
    MPI_Comm localComm() const { return localComm_; }

private:
    /// Polls the requests until all are done or the host-wait limit passes
    /// (then throws Timeout with "rank R: <what()> did not complete").
    /// A template (defined in mpi_world.cpp, its only user), so that the
    /// message's closure is never copied into a heap-allocated std::function
    /// on the per-iteration paths; it is called only at a timeout.
    template <class What>
    void complete(std::span<MPI_Request> requests, std::span<MPI_Status> statuses, const What& what);
    void completeCollective(MPI_Request request, const char* operation);
    /// sendRecvBytes's and sendRecvMany's checks of the peers, the tag and a
    /// receive without a source.
    void checkPeers(int dest, int src, std::size_t recvBytes, int tag) const;

    MPI_Comm comm_ = MPI_COMM_NULL;
    MPI_Comm localComm_ = MPI_COMM_NULL;
    int rank_ = 0;
    int size_ = 1;
    int localRank_ = 0;
    int localSize_ = 1;
    int tagUpperBound_ = 32767;        ///< the least MPI guarantees; MPI_TAG_UB when known
    double waitTimeoutSeconds_ = 0.0;  ///< host-wait limit, 0: none
    /// sendRecvMany's requests, kept between calls (no allocation per call):
    /// the receives first, then the sends; per receive its message and piece.
    struct PostedPiece {
        std::size_t message = 0;
        int piece = 0;
        bool receive = false;
    };
    std::vector<MPI_Request> manyRequests_;
    std::vector<MPI_Status> manyStatuses_;
    std::vector<PostedPiece> manyPieces_;
};

}  // namespace haloex::runtime
