// Virtual ranks as threads of one process: the CPU reference path and tests.
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <fmt/format.h>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>

#include "haloex/core/error.hpp"
#include "haloex/detail/runtime/host_wait.hpp"
#include "haloex/runtime/world.hpp"

namespace haloex::runtime {
namespace {

struct Shared {
    explicit Shared(int n)
        : numRanks(n), timeoutSeconds(hostWaitTimeoutSeconds()), slots(n),
          exchange(n, std::vector<std::vector<std::byte>>(n)), arrivedIn(n, -1) {}

    const int numRanks;
    const double timeoutSeconds;  // 0: no limit
    std::mutex mutex;
    std::condition_variable changed;
    bool aborted = false;
    std::string abortMessage;
    // Point-to-point messages keyed by (source, destination, tag).
    std::map<std::tuple<int, int, int>, std::deque<std::vector<std::byte>>> mailbox;
    // Collective scratch: one slot per rank, all-to-all matrix [src][dst].
    std::vector<std::vector<std::byte>> slots;
    std::vector<std::vector<std::vector<std::byte>>> exchange;
    int arrived = 0;
    long generation = 0;
    std::vector<long> arrivedIn;  // per rank: the generation of the barrier it last arrived at

    void throwIfAborted() const {
        if (aborted) throwError(ErrorKind::Runtime, "the in-process job was aborted: " + abortMessage);
    }

    // Waits until `done` (or an abort), at most timeoutSeconds; then throws
    // Timeout with `what()` (rank, operation, peers).
    template <class Done, class What>
    void wait(std::unique_lock<std::mutex>& lock, Done done, What what) {
        const auto ready = [&] { return done() || aborted; };
        if (timeoutSeconds <= 0.0) {
            changed.wait(lock, ready);
        } else if (!changed.wait_for(lock, std::chrono::duration<double>(timeoutSeconds), ready)) {
            throwError(ErrorKind::Timeout,
                       fmt::format("{} (waited {} s): {}", what(), timeoutSeconds, hostWaitAdvice()));
        }
        // What completed stays completed: a rank that aborts right after a
        // barrier it took part in must not turn this rank's result into an
        // "aborted" error (that hid rank 0's own message behind rank 1's copy).
        if (!done()) throwIfAborted();
    }

    // `operation` names the collective the barrier belongs to, for messages.
    void barrier(std::unique_lock<std::mutex>& lock, int rank, const char* operation) {
        throwIfAborted();
        const long myGeneration = generation;
        arrivedIn[rank] = myGeneration;
        if (++arrived == numRanks) {
            arrived = 0;
            ++generation;
            changed.notify_all();
        } else {
            wait(
                lock, [&] { return generation != myGeneration; },
                [&] {
                    std::string missing;
                    for (int r = 0; r < numRanks; ++r) {
                        if (arrivedIn[r] != myGeneration)
                            missing += fmt::format("{}{}", missing.empty() ? "" : ", ", r);
                    }
                    return fmt::format("rank {}: {}: virtual rank(s) {} did not arrive", rank, operation, missing);
                });
        }
    }

    void abort(const std::string& message) {
        std::lock_guard lock(mutex);
        if (!aborted) {
            aborted = true;
            abortMessage = message;
        }
        changed.notify_all();
    }
};

class ThreadWorld final : public World {
public:
    ThreadWorld(Shared& shared, int rank) : shared_(shared), rank_(rank) {}

    int rank() const override { return rank_; }
    int size() const override { return shared_.numRanks; }
    int localRank() const override { return rank_; }
    int localSize() const override { return shared_.numRanks; }
    std::string kind() const override { return "threads"; }

    void barrier() override {
        std::unique_lock lock(shared_.mutex);
        shared_.barrier(lock, rank_, "barrier");
    }

    void sendRecvBytes(std::span<const std::byte> send, int dest, std::span<std::byte> recv, int src,
                       int tag) override {
        if (dest >= 0) checkRank(dest, "destination");
        if (src >= 0) checkRank(src, "source");
        std::unique_lock lock(shared_.mutex);
        shared_.throwIfAborted();
        if (dest >= 0) {
            shared_.mailbox[{rank_, dest, tag}].emplace_back(send.begin(), send.end());
            shared_.changed.notify_all();
        }
        if (src < 0) {
            HALOEX_ASSERT(recv.empty(), "nothing can be received without a source");
            return;
        }
        receiveLocked(lock, recv, src, tag, "sendRecv");
    }

    // Every send into the mailboxes first, then every receive: the same
    // matching as the entries one by one (each mailbox is a queue), and
    // no rank waits for a message while holding back one of its own.
    void sendRecvMany(std::span<const PeerMessage> messages, int tag) override {
        for (const PeerMessage& m : messages) {
            if (m.dest >= 0) checkRank(m.dest, "destination");
            if (m.src >= 0) checkRank(m.src, "source");
            HALOEX_ASSERT(m.src >= 0 || m.recv.empty(), "nothing can be received without a source");
        }
        std::unique_lock lock(shared_.mutex);
        shared_.throwIfAborted();
        bool sent = false;
        for (const PeerMessage& m : messages) {
            if (m.dest < 0) continue;
            shared_.mailbox[{rank_, m.dest, tag}].emplace_back(m.send.begin(), m.send.end());
            sent = true;
        }
        if (sent) shared_.changed.notify_all();
        for (const PeerMessage& m : messages) {
            if (m.src >= 0) receiveLocked(lock, m.recv, m.src, tag, "sendRecvMany");
        }
    }

    void allReduce(std::span<double> values, ReduceOp op) override { reduce(values, op); }
    void allReduce(std::span<std::int64_t> values, ReduceOp op) override { reduce(values, op); }

    void broadcastBytes(std::span<std::byte> data, int root) override {
        checkRank(root, "root");
        std::unique_lock lock(shared_.mutex);
        if (rank_ == root) shared_.slots[0].assign(data.begin(), data.end());
        shared_.barrier(lock, rank_, "broadcast");
        if (rank_ != root) {
            HALOEX_ASSERT(shared_.slots[0].size() == data.size(), "broadcast sizes differ between ranks");
            std::copy(shared_.slots[0].begin(), shared_.slots[0].end(), data.begin());
        }
        shared_.barrier(lock, rank_, "broadcast");
    }

    void allGatherBytes(std::span<const std::byte> mine, std::span<std::byte> all) override {
        std::unique_lock lock(shared_.mutex);
        shared_.slots[rank_].assign(mine.begin(), mine.end());
        shared_.barrier(lock, rank_, "allGather");
        HALOEX_ASSERT(all.size() == mine.size() * shared_.numRanks, "allGather output has the wrong size");
        for (int r = 0; r < shared_.numRanks; ++r) {
            HALOEX_ASSERT(shared_.slots[r].size() == mine.size(), "allGather sizes differ between ranks");
            std::copy(shared_.slots[r].begin(), shared_.slots[r].end(), all.begin() + r * mine.size());
        }
        shared_.barrier(lock, rank_, "allGather");
    }

    std::vector<std::byte> allToAllBytes(std::span<const std::byte> send, std::span<const std::int64_t> sendCounts,
                                         std::vector<std::int64_t>& recvCounts) override {
        HALOEX_ASSERT(static_cast<int>(sendCounts.size()) == shared_.numRanks, "one send count per rank");
        std::unique_lock lock(shared_.mutex);
        std::size_t offset = 0;
        for (int r = 0; r < shared_.numRanks; ++r) {
            const auto count = static_cast<std::size_t>(sendCounts[r]);
            shared_.exchange[rank_][r].assign(send.begin() + offset, send.begin() + offset + count);
            offset += count;
        }
        shared_.barrier(lock, rank_, "allToAll");
        std::vector<std::byte> out;
        recvCounts.assign(shared_.numRanks, 0);
        for (int r = 0; r < shared_.numRanks; ++r) {
            const auto& chunk = shared_.exchange[r][rank_];
            out.insert(out.end(), chunk.begin(), chunk.end());
            recvCounts[r] = static_cast<std::int64_t>(chunk.size());
        }
        shared_.barrier(lock, rank_, "allToAll");
        return out;
    }

    [[noreturn]] void abort(const std::string& message, int /*code*/) override {
        shared_.abort(fmt::format("rank {}: {}", rank_, message));
        throwError(ErrorKind::Runtime, fmt::format("rank {} aborted the job: {}", rank_, message));
    }

private:
    // The next message from `src` with `tag` into `recv` (exactly its size),
    // waiting for it under the host-wait limit; `operation` names the call.
    void receiveLocked(std::unique_lock<std::mutex>& lock, std::span<std::byte> recv, int src, int tag,
                       const char* operation) {
        auto& queue = shared_.mailbox[{src, rank_, tag}];
        shared_.wait(
            lock, [&] { return !queue.empty(); },
            [&] {
                return fmt::format("rank {}: {}: the message of {} bytes from rank {} (tag {}) did not come", rank_,
                                   operation, recv.size(), src, tag);
            });
        std::vector<std::byte> message = std::move(queue.front());
        queue.pop_front();
        if (message.size() != recv.size()) {
            throwError(ErrorKind::Internal, fmt::format("rank {} expected {} bytes from rank {} (tag {}) but got {}",
                                                        rank_, recv.size(), src, tag, message.size()));
        }
        std::copy(message.begin(), message.end(), recv.begin());
    }

    void checkRank(int r, const char* what) const {
        if (r < 0 || r >= shared_.numRanks) {
            throwError(ErrorKind::Internal, fmt::format("{} rank {} outside 0..{}", what, r, shared_.numRanks - 1));
        }
    }

    template <class T>
    void reduce(std::span<T> values, ReduceOp op) {
        std::unique_lock lock(shared_.mutex);
        const auto bytes = std::as_bytes(values);
        shared_.slots[rank_].assign(bytes.begin(), bytes.end());
        shared_.barrier(lock, rank_, "allReduce");
        // Every rank reduces in rank order, so all get bitwise-identical results.
        for (std::size_t i = 0; i < values.size(); ++i) {
            T acc{};
            for (int r = 0; r < shared_.numRanks; ++r) {
                HALOEX_ASSERT(shared_.slots[r].size() == bytes.size(), "allReduce sizes differ between ranks");
                T v;
                std::memcpy(&v, shared_.slots[r].data() + i * sizeof(T), sizeof(T));
                if (r == 0) acc = v;
                else if (op == ReduceOp::Sum) acc += v;
                else if (op == ReduceOp::Max) acc = std::max(acc, v);
                else acc = std::min(acc, v);
            }
            values[i] = acc;
        }
        shared_.barrier(lock, rank_, "allReduce");
    }

    Shared& shared_;
    int rank_;
};

class SingleWorld final : public World {
public:
    int rank() const override { return 0; }
    int size() const override { return 1; }
    int localRank() const override { return 0; }
    int localSize() const override { return 1; }
    std::string kind() const override { return "single"; }
    void barrier() override {}
    void sendRecvBytes(std::span<const std::byte> send, int dest, std::span<std::byte> recv, int src, int) override {
        HALOEX_ASSERT(dest <= 0 && src <= 0, "a single-rank world only talks to itself");
        if (src < 0) return;
        HALOEX_ASSERT(dest == 0 && send.size() == recv.size(), "self send and receive sizes differ");
        std::copy(send.begin(), send.end(), recv.begin());
    }
    void allReduce(std::span<double>, ReduceOp) override {}
    void allReduce(std::span<std::int64_t>, ReduceOp) override {}
    void broadcastBytes(std::span<std::byte>, int) override {}
    void allGatherBytes(std::span<const std::byte> mine, std::span<std::byte> all) override {
        std::copy(mine.begin(), mine.end(), all.begin());
    }
    std::vector<std::byte> allToAllBytes(std::span<const std::byte> send, std::span<const std::int64_t>,
                                         std::vector<std::int64_t>& recvCounts) override {
        recvCounts.assign(1, static_cast<std::int64_t>(send.size()));
        return {send.begin(), send.end()};
    }
    [[noreturn]] void abort(const std::string& message, int) override {
        throwError(ErrorKind::Runtime, "aborted: " + message);
    }
};

}  // namespace

void runInProcess(int numRanks, const std::function<void(World&)>& body) {
    if (numRanks < 1) throwError(ErrorKind::InvalidInput, fmt::format("cannot run {} in-process ranks", numRanks));
    Shared shared(numRanks);
    std::vector<std::exception_ptr> errors(numRanks);
    std::vector<std::thread> threads;
    threads.reserve(numRanks);
    for (int r = 0; r < numRanks; ++r) {
        try {
            threads.emplace_back([&, r] {
                ThreadWorld world(shared, r);
                try {
                    body(world);
                } catch (const std::exception& e) {
                    errors[r] = std::current_exception();
                    shared.abort(fmt::format("rank {} failed: {}", r, e.what()));
                } catch (...) {
                    errors[r] = std::current_exception();
                    shared.abort(fmt::format("rank {} failed", r));
                }
            });
        } catch (const std::exception& e) {
            // The system refused a thread (limits, memory): release the ranks
            // already running (they wait for this one) and say so, rather than
            // destroying joinable threads (std::terminate).
            shared.abort(fmt::format("virtual rank {} could not be started", r));
            for (auto& t : threads) t.join();
            throwError(ErrorKind::Runtime,
                       fmt::format("cannot start virtual rank {} of {} as a thread: {}; use fewer ranks (--ranks), or "
                                   "raise the limits on threads or memory (ulimit -u, ulimit -v)",
                                   r, numRanks, e.what()));
        }
    }
    for (auto& t : threads) t.join();
    // Report the error that started it, not the ones it caused on other ranks.
    const auto isConsequence = [](const std::exception_ptr& e) {
        try {
            std::rethrow_exception(e);
        } catch (const Error& err) {
            return std::string_view(err.what()).starts_with("the in-process job was aborted");
        } catch (...) {
        }
        return false;
    };
    std::exception_ptr consequence;
    for (const auto& e : errors) {
        if (!e) continue;
        if (!isConsequence(e)) std::rethrow_exception(e);
        if (!consequence) consequence = e;
    }
    if (consequence) std::rethrow_exception(consequence);
}

World& singleRankWorld() {
    static SingleWorld world;
    return world;
}

}  // namespace haloex::runtime
