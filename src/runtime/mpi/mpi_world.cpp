#include "haloex/runtime/mpi_world.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fmt/format.h>
#include <limits>
#include <thread>

#include "haloex/core/error.hpp"
#include "haloex/detail/runtime/host_wait.hpp"
#include "haloex/runtime/launched_world.hpp"
#include "haloex/detail/runtime/mpi_check.hpp"

namespace haloex::runtime {
namespace {

// MPI counts are int: larger messages travel in pieces of this many bytes.
constexpr std::size_t kMaxChunkBytes = std::size_t{1} << 30;

std::string mpiErrorString(int code) {
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return fmt::format("MPI error code {}", code);
    return std::string(text, static_cast<std::size_t>(length));
}

bool mpiFinalized() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    return finalized != 0;
}

int chunksFor(std::size_t bytes) {
    return static_cast<int>(std::max<std::size_t>(1, (bytes + kMaxChunkBytes - 1) / kMaxChunkBytes));
}

// Piece `i` of a byte span split into kMaxChunkBytes pieces (empty past the end).
template <class Span>
Span chunkOf(Span bytes, int i) {
    const std::size_t begin = std::min(bytes.size(), static_cast<std::size_t>(i) * kMaxChunkBytes);
    const std::size_t end = std::min(bytes.size(), begin + kMaxChunkBytes);
    return bytes.subspan(begin, end - begin);
}

int toIntCount(std::size_t n, const char* what) {
    if (n > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
        throwError(ErrorKind::Runtime, fmt::format("{} of {} bytes exceeds what one MPI call can move (2^31-1 bytes); "
                                                   "exchange smaller pieces",
                                                   what, n));
    }
    return static_cast<int>(n);
}

// Polling a nonblocking operation costs what MPI's blocking wait costs (both
// spin in MPI's progress engine) as long as the peers answer promptly; only a
// wait of more than kSpinSeconds -- a peer busy or gone -- sleeps between polls.
constexpr double kSpinSeconds = 1.0;

MPI_Op toMpiOp(ReduceOp op) {
    switch (op) {
        case ReduceOp::Sum: return MPI_SUM;
        case ReduceOp::Max: return MPI_MAX;
        case ReduceOp::Min: return MPI_MIN;
    }
    return MPI_SUM;
}

}  // namespace

void checkMpi(int code, const char* call, const char* file, int line) {
    if (code == MPI_SUCCESS) return;
    throwError(ErrorKind::Runtime, fmt::format("{} failed: {} at {}:{}", call, mpiErrorString(code), file, line));
}

// ---- MpiSession -----------------------------------------------------------------

MpiSession::MpiSession() { init(nullptr, nullptr); }
MpiSession::MpiSession(int& argc, char**& argv) { init(&argc, &argv); }

void MpiSession::init(int* argc, char*** argv) {
    int initialized = 0;
    HALOEX_MPI_CHECK(MPI_Initialized(&initialized));
    if (initialized) return;  // the application owns MPI
    if (mpiFinalized()) {
        throwError(ErrorKind::Runtime, "MPI was already finalized in this process; it cannot be started again");
    }
    int provided = 0;
    HALOEX_MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided));
    owns_ = true;
    if (provided < MPI_THREAD_FUNNELED) {
        MPI_Finalize();
        owns_ = false;
        throwError(ErrorKind::Runtime, fmt::format("the MPI library provides thread level {} but haloex needs "
                                                   "MPI_THREAD_FUNNELED; use an MPI built with thread support",
                                                   provided));
    }
}

MpiSession::~MpiSession() {
    if (owns_ && !mpiFinalized()) MPI_Finalize();
}

bool MpiSession::launchedByMpiLauncher() { return runtime::launchedByMpiLauncher(); }

// ---- MpiWorld -------------------------------------------------------------------

MpiWorld::MpiWorld(MPI_Comm parent) {
    int initialized = 0;
    HALOEX_MPI_CHECK(MPI_Initialized(&initialized));
    if (!initialized || mpiFinalized()) {
        throwError(ErrorKind::Runtime, "MpiWorld needs an initialised MPI: create a runtime::MpiSession first");
    }
    HALOEX_MPI_CHECK(MPI_Comm_dup(parent, &comm_));
    // Errors come back as codes, so they can become exceptions with a message.
    HALOEX_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
    HALOEX_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
    HALOEX_MPI_CHECK(MPI_Comm_size(comm_, &size_));
    HALOEX_MPI_CHECK(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &localComm_));
    HALOEX_MPI_CHECK(MPI_Comm_set_errhandler(localComm_, MPI_ERRORS_RETURN));
    HALOEX_MPI_CHECK(MPI_Comm_rank(localComm_, &localRank_));
    HALOEX_MPI_CHECK(MPI_Comm_size(localComm_, &localSize_));
    int* upperBound = nullptr;
    int found = 0;
    HALOEX_MPI_CHECK(MPI_Comm_get_attr(comm_, MPI_TAG_UB, &upperBound, &found));
    if (found && upperBound) tagUpperBound_ = *upperBound;
    waitTimeoutSeconds_ = hostWaitTimeoutSeconds();
}

template <class What>
void MpiWorld::complete(std::span<MPI_Request> requests, std::span<MPI_Status> statuses, const What& what) {
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    for (long polls = 1;; ++polls) {
        int done = 0;
        HALOEX_MPI_CHECK(MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done,
                                     statuses.empty() ? MPI_STATUSES_IGNORE : statuses.data()));
        if (done) return;
        if (polls % 256 != 0) continue;
        const double waited = std::chrono::duration<double>(Clock::now() - start).count();
        if (waitTimeoutSeconds_ > 0.0 && waited > waitTimeoutSeconds_) {
            // The requests stay posted: the caller ends the job (World::abort).
            throwError(ErrorKind::Timeout, fmt::format("rank {}: {} did not complete (waited {} s): {}", rank_, what(),
                                                       waitTimeoutSeconds_, hostWaitAdvice()));
        }
        if (waited > kSpinSeconds) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
}

void MpiWorld::completeCollective(MPI_Request request, const char* operation) {
    complete(std::span(&request, 1), {}, [&] {
        return fmt::format("{} over all {} ranks (at least one rank has not joined it)", operation, size_);
    });
}

MpiWorld::~MpiWorld() {
    if (mpiFinalized()) return;  // the communicators went with MPI
    if (localComm_ != MPI_COMM_NULL) MPI_Comm_free(&localComm_);
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void MpiWorld::barrier() {
    MPI_Request request;
    HALOEX_MPI_CHECK(MPI_Ibarrier(comm_, &request));
    completeCollective(request, "barrier");
}

void MpiWorld::checkPeers(int dest, int src, std::size_t recvBytes, int tag) const {
    for (const auto& [peer, what] : {std::pair{dest, "destination"}, std::pair{src, "source"}}) {
        if (peer < -1 || peer >= size_) {
            throwError(ErrorKind::Internal,
                       fmt::format("rank {}: {} rank {} is outside 0..{}", rank_, what, peer, size_ - 1));
        }
    }
    if (src < 0 && recvBytes > 0) {
        throwError(ErrorKind::Internal,
                   fmt::format("rank {}: {} bytes expected without a source rank (tag {})", rank_, recvBytes, tag));
    }
    if (tag < 0 || tag > tagUpperBound_) {
        throwError(ErrorKind::Internal, fmt::format("rank {}: message tag {} is outside this MPI's range 0..{}", rank_,
                                                    tag, tagUpperBound_));
    }
}

void MpiWorld::sendRecvBytes(std::span<const std::byte> send, int dest, std::span<std::byte> recv, int src, int tag) {
    checkPeers(dest, src, recv.size(), tag);
    const int sendChunks = dest >= 0 ? chunksFor(send.size()) : 0;
    const int recvChunks = src >= 0 ? chunksFor(recv.size()) : 0;
    for (int i = 0; i < std::max(sendChunks, recvChunks); ++i) {
        const auto out = chunkOf(send, i);
        const auto in = chunkOf(recv, i);
        std::array<MPI_Request, 2> requests{};
        std::array<MPI_Status, 2> statuses{};
        HALOEX_MPI_CHECK(MPI_Irecv(in.data(), static_cast<int>(in.size()), MPI_BYTE,
                                   i < recvChunks ? src : MPI_PROC_NULL, tag, comm_, &requests[0]));
        HALOEX_MPI_CHECK(MPI_Isend(out.data(), static_cast<int>(out.size()), MPI_BYTE,
                                   i < sendChunks ? dest : MPI_PROC_NULL, tag, comm_, &requests[1]));
        complete(requests, statuses, [&] {
            std::string parts;
            if (i < sendChunks) parts = fmt::format("{} bytes to rank {}", out.size(), dest);
            if (i < recvChunks) {
                parts += fmt::format("{}{} bytes from rank {}", parts.empty() ? "" : ", ", in.size(), src);
            }
            return fmt::format("sendRecv (tag {}: {})", tag, parts);
        });
        if (i < recvChunks) {
            int received = 0;
            HALOEX_MPI_CHECK(MPI_Get_count(&statuses[0], MPI_BYTE, &received));
            if (static_cast<std::size_t>(received) != in.size()) {
                throwError(ErrorKind::Internal,
                           fmt::format("rank {} expected {} bytes from rank {} (tag {}) but got {}", rank_, in.size(),
                                       src, tag, received));
            }
        }
    }
}

void MpiWorld::sendRecvMany(std::span<const PeerMessage> messages, int tag) {
    for (const PeerMessage& m : messages) checkPeers(m.dest, m.src, m.recv.size(), tag);
    // The same pieces sendRecvBytes would post (a peer of -1 posts nothing),
    // every receive before any send.
    manyRequests_.clear();
    manyPieces_.clear();
    for (std::size_t k = 0; k < messages.size(); ++k) {
        const PeerMessage& m = messages[k];
        if (m.src < 0) continue;
        for (int i = 0; i < chunksFor(m.recv.size()); ++i) {
            const auto in = chunkOf(m.recv, i);
            manyRequests_.emplace_back();
            manyPieces_.push_back({k, i, true});
            HALOEX_MPI_CHECK(
                MPI_Irecv(in.data(), static_cast<int>(in.size()), MPI_BYTE, m.src, tag, comm_, &manyRequests_.back()));
        }
    }
    for (std::size_t k = 0; k < messages.size(); ++k) {
        const PeerMessage& m = messages[k];
        if (m.dest < 0) continue;
        for (int i = 0; i < chunksFor(m.send.size()); ++i) {
            const auto out = chunkOf(m.send, i);
            manyRequests_.emplace_back();
            manyPieces_.push_back({k, i, false});
            HALOEX_MPI_CHECK(MPI_Isend(out.data(), static_cast<int>(out.size()), MPI_BYTE, m.dest, tag, comm_,
                                       &manyRequests_.back()));
        }
    }
    if (manyRequests_.empty()) return;
    manyStatuses_.resize(manyRequests_.size());
    // Named at a timeout: the pieces still pending (their requests stay
    // posted, so MPI_Request_get_status can tell), and how many completed.
    const auto pending = [&] {
        std::string parts;
        std::size_t done = 0;
        for (std::size_t r = 0; r < manyRequests_.size(); ++r) {
            int finished = 0;
            MPI_Status status;
            if (MPI_Request_get_status(manyRequests_[r], &finished, &status) == MPI_SUCCESS && finished) {
                ++done;
                continue;
            }
            const PostedPiece& p = manyPieces_[r];
            const PeerMessage& m = messages[p.message];
            parts += fmt::format("{}{} bytes {} rank {}", parts.empty() ? "" : ", ",
                                 p.receive ? chunkOf(m.recv, p.piece).size() : chunkOf(m.send, p.piece).size(),
                                 p.receive ? "from" : "to", p.receive ? m.src : m.dest);
        }
        return fmt::format("sendRecvMany (tag {}: {} pending, {} of {} transfers done)", tag, parts, done,
                           manyRequests_.size());
    };
    complete(manyRequests_, manyStatuses_, pending);
    for (std::size_t r = 0; r < manyPieces_.size(); ++r) {
        const PostedPiece& p = manyPieces_[r];
        if (!p.receive) break;  // the receives come first
        const PeerMessage& m = messages[p.message];
        const std::size_t expected = chunkOf(m.recv, p.piece).size();
        int received = 0;
        HALOEX_MPI_CHECK(MPI_Get_count(&manyStatuses_[r], MPI_BYTE, &received));
        if (static_cast<std::size_t>(received) != expected) {
            throwError(ErrorKind::Internal, fmt::format("rank {} expected {} bytes from rank {} (tag {}) but got {}",
                                                        rank_, expected, m.src, tag, received));
        }
    }
}

void MpiWorld::allReduce(std::span<double> values, ReduceOp op) {
    MPI_Request request;
    HALOEX_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, values.data(), toIntCount(values.size(), "an allReduce"), MPI_DOUBLE,
                                    toMpiOp(op), comm_, &request));
    completeCollective(request, "allReduce");
}

void MpiWorld::allReduce(std::span<std::int64_t> values, ReduceOp op) {
    MPI_Request request;
    HALOEX_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, values.data(), toIntCount(values.size(), "an allReduce"), MPI_INT64_T,
                                    toMpiOp(op), comm_, &request));
    completeCollective(request, "allReduce");
}

void MpiWorld::broadcastBytes(std::span<std::byte> data, int root) {
    if (root < 0 || root >= size_) {
        throwError(ErrorKind::Internal, fmt::format("broadcast root {} is outside 0..{}", root, size_ - 1));
    }
    for (int i = 0; i < chunksFor(data.size()); ++i) {
        const auto piece = chunkOf(data, i);
        MPI_Request request;
        HALOEX_MPI_CHECK(MPI_Ibcast(piece.data(), static_cast<int>(piece.size()), MPI_BYTE, root, comm_, &request));
        completeCollective(request, "broadcast");
    }
}

void MpiWorld::allGatherBytes(std::span<const std::byte> mine, std::span<std::byte> all) {
    if (all.size() != mine.size() * static_cast<std::size_t>(size_)) {
        throwError(ErrorKind::Internal, fmt::format("allGather: output of {} bytes for {} ranks x {} bytes", all.size(),
                                                    size_, mine.size()));
    }
    toIntCount(all.size(), "an allGather");
    MPI_Request request;
    HALOEX_MPI_CHECK(MPI_Iallgather(mine.data(), static_cast<int>(mine.size()), MPI_BYTE, all.data(),
                                    static_cast<int>(mine.size()), MPI_BYTE, comm_, &request));
    completeCollective(request, "allGather");
}

std::vector<std::byte> MpiWorld::allToAllBytes(std::span<const std::byte> send,
                                               std::span<const std::int64_t> sendCounts,
                                               std::vector<std::int64_t>& recvCounts) {
    if (static_cast<int>(sendCounts.size()) != size_) {
        throwError(ErrorKind::Internal, fmt::format("allToAll: {} send counts for {} ranks", sendCounts.size(), size_));
    }
    recvCounts.assign(static_cast<std::size_t>(size_), 0);
    MPI_Request countsRequest;
    HALOEX_MPI_CHECK(
        MPI_Ialltoall(sendCounts.data(), 1, MPI_INT64_T, recvCounts.data(), 1, MPI_INT64_T, comm_, &countsRequest));
    completeCollective(countsRequest, "allToAll (counts)");
    std::vector<int> sendInt(size_), sendDispl(size_), recvInt(size_), recvDispl(size_);
    std::size_t sendTotal = 0, recvTotal = 0;
    for (int r = 0; r < size_; ++r) {
        sendInt[r] = toIntCount(static_cast<std::size_t>(sendCounts[r]), "an allToAll piece");
        recvInt[r] = toIntCount(static_cast<std::size_t>(recvCounts[r]), "an allToAll piece");
        sendDispl[r] = toIntCount(sendTotal, "an allToAll send buffer");
        recvDispl[r] = toIntCount(recvTotal, "an allToAll receive buffer");
        sendTotal += static_cast<std::size_t>(sendCounts[r]);
        recvTotal += static_cast<std::size_t>(recvCounts[r]);
    }
    if (sendTotal != send.size()) {
        throwError(ErrorKind::Internal,
                   fmt::format("allToAll: send counts add up to {} bytes but {} were given", sendTotal, send.size()));
    }
    std::vector<std::byte> recv(recvTotal);
    MPI_Request request;
    HALOEX_MPI_CHECK(MPI_Ialltoallv(send.data(), sendInt.data(), sendDispl.data(), MPI_BYTE, recv.data(),
                                    recvInt.data(), recvDispl.data(), MPI_BYTE, comm_, &request));
    completeCollective(request, "allToAll");
    return recv;
}

void MpiWorld::abort(const std::string& message, int code) {
    std::fprintf(stderr, "haloex: rank %d aborts the job: %s\n", rank_, message.c_str());
    std::fflush(stderr);
    MPI_Abort(comm_ != MPI_COMM_NULL ? comm_ : MPI_COMM_WORLD, code);
    std::abort();  // MPI_Abort should not return; make sure the process ends
}

}  // namespace haloex::runtime
