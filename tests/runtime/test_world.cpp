// The in-process thread world: identity, collectives, point-to-point with
// missing peers, and failure of one rank reaching every rank (no hang) with
// the original message.
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <cstdint>
#include <functional>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "haloex/core/error.hpp"
#include "haloex/detail/runtime/host_wait.hpp"
#include "haloex/runtime/world.hpp"
#include "send_recv_many_check.hpp"

namespace haloex::testing {
namespace {

using runtime::ReduceOp;
using runtime::World;

// Runs `job` on a helper thread and fails the test (instead of hanging the
// suite) when it does not finish in time. Exceptions are handed back.
void runWithDeadline(const std::function<void()>& job, std::chrono::seconds limit = std::chrono::seconds(30)) {
    auto task = std::make_shared<std::packaged_task<void()>>(job);
    std::future<void> done = task->get_future();
    std::thread([task] { (*task)(); }).detach();
    if (done.wait_for(limit) != std::future_status::ready) {
        // The stuck ranks cannot be recovered: report and stop the process.
        ADD_FAILURE() << "the in-process job did not finish within " << limit.count() << " s (hang)";
        std::fflush(stdout);
        std::_Exit(1);
    }
    done.get();
}

TEST(ThreadWorld, IdentityOfEveryRank) {
    std::vector<int> seen(5, 0);
    runtime::runInProcess(5, [&](World& w) {
        EXPECT_EQ(w.size(), 5);
        EXPECT_EQ(w.localSize(), 5);
        EXPECT_EQ(w.localRank(), w.rank());
        EXPECT_EQ(w.kind(), "threads");
        seen[w.rank()] += 1;
        w.barrier();
    });
    EXPECT_EQ(seen, std::vector<int>(5, 1));
}

TEST(ThreadWorld, AllReduceSumMaxMin) {
    constexpr int n = 4;
    runWithDeadline([] {
        runtime::runInProcess(n, [](World& w) {
            const int r = w.rank();
            for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min}) {
                std::vector<double> d{1.0 * r, -2.5 * r, 0.125 + r * r};
                std::vector<std::int64_t> i{r, std::int64_t{-7} * r, (std::int64_t{1} << 40) + r};
                w.allReduce(std::span(d), op);
                w.allReduce(std::span(i), op);
                if (op == ReduceOp::Sum) {
                    EXPECT_EQ(d, (std::vector<double>{6.0, -15.0, 0.5 + 14.0}));
                    EXPECT_EQ(i, (std::vector<std::int64_t>{6, -42, 4 * (std::int64_t{1} << 40) + 6}));
                } else if (op == ReduceOp::Max) {
                    EXPECT_EQ(d, (std::vector<double>{3.0, 0.0, 9.125}));
                    EXPECT_EQ(i, (std::vector<std::int64_t>{3, 0, (std::int64_t{1} << 40) + 3}));
                } else {
                    EXPECT_EQ(d, (std::vector<double>{0.0, -7.5, 0.125}));
                    EXPECT_EQ(i, (std::vector<std::int64_t>{0, -21, std::int64_t{1} << 40}));
                }
            }
            EXPECT_EQ(w.allReduceValue(r + 1, ReduceOp::Sum), 10);
            EXPECT_EQ(w.allReduceValue(0.5 * r, ReduceOp::Max), 1.5);
            EXPECT_EQ(w.allReduceValue(std::int64_t{-r}, ReduceOp::Min), -3);
        });
    });
}

TEST(ThreadWorld, AllReduceGivesBitwiseIdenticalResultsOnEveryRank) {
    constexpr int n = 6;
    std::vector<double> result(n);
    runtime::runInProcess(n, [&](World& w) {
        // Values whose sum depends on the order of addition.
        result[w.rank()] = w.allReduceValue(1.0 / (3.0 + w.rank()) * (w.rank() % 2 ? 1e16 : 1.0), ReduceOp::Sum);
    });
    for (int r = 1; r < n; ++r) EXPECT_EQ(result[r], result[0]);
}

struct Record {
    int rank;
    double value;
    char tag[4];
};

TEST(ThreadWorld, AllGatherOrdersByRank) {
    runWithDeadline([] {
        runtime::runInProcess(3, [](World& w) {
            const Record mine{w.rank(), 0.5 * w.rank(), {'r', static_cast<char>('0' + w.rank()), 0, 0}};
            const auto all = w.allGather(mine);
            ASSERT_EQ(all.size(), 3u);
            for (int r = 0; r < 3; ++r) {
                EXPECT_EQ(all[r].rank, r);
                EXPECT_EQ(all[r].value, 0.5 * r);
                EXPECT_EQ(all[r].tag[1], '0' + r);
            }
        });
    });
}

TEST(ThreadWorld, AllToAllWithUnevenAndEmptyMessages) {
    constexpr int n = 4;
    runWithDeadline([] {
        runtime::runInProcess(n, [](World& w) {
            const int me = w.rank();
            // Rank s sends (s + d) % 3 values to rank d, each encoding (s, d, k).
            std::vector<std::vector<int>> out(n);
            for (int d = 0; d < n; ++d) {
                for (int k = 0; k < (me + d) % 3; ++k) out[d].push_back(1000 * me + 100 * d + k);
            }
            const auto in = w.allToAll(out);
            std::vector<int> expected;
            for (int s = 0; s < n; ++s) {
                for (int k = 0; k < (s + me) % 3; ++k) expected.push_back(1000 * s + 100 * me + k);
            }
            EXPECT_EQ(in, expected);
        });
    });
}

TEST(ThreadWorld, BroadcastFromEveryRoot) {
    constexpr int n = 3;
    runWithDeadline([] {
        runtime::runInProcess(n, [](World& w) {
            for (int root = 0; root < n; ++root) {
                std::vector<std::int32_t> data(5, w.rank() == root ? 100 + root : -1);
                w.broadcastBytes(std::as_writable_bytes(std::span(data)), root);
                EXPECT_EQ(data, std::vector<std::int32_t>(5, 100 + root));
            }
        });
    });
}

// agreeOnReason: the lowest rank's reason reaches every rank, whole (longer
// than any fixed buffer), and none gives an empty answer everywhere.
TEST(ThreadWorld, AgreeOnReasonGivesEveryRankTheLowestRanksReason) {
    const std::string longReason(5000, 'x');
    std::vector<std::string> got(5), none(5);
    runtime::runInProcess(5, [&](runtime::World& w) {
        const std::string mine = w.rank() == 2 ? "rank 2: no GPU" : w.rank() == 4 ? longReason : "";
        got[static_cast<std::size_t>(w.rank())] = runtime::agreeOnReason(w, mine);
        none[static_cast<std::size_t>(w.rank())] = runtime::agreeOnReason(w, "");
    });
    for (int r = 0; r < 5; ++r) {
        EXPECT_EQ(got[static_cast<std::size_t>(r)], "rank 2: no GPU") << "rank " << r;
        EXPECT_EQ(none[static_cast<std::size_t>(r)], "") << "rank " << r;
    }
    std::vector<std::string> whole(3);
    runtime::runInProcess(3, [&](runtime::World& w) {
        whole[static_cast<std::size_t>(w.rank())] = runtime::agreeOnReason(w, w.rank() == 1 ? longReason : "");
    });
    for (const std::string& text : whole) EXPECT_EQ(text, longReason);
}

TEST(ThreadWorld, SendRecvRingAndOpenChainWithMissingPeers) {
    constexpr int n = 5;
    runWithDeadline([] {
        runtime::runInProcess(n, [](World& w) {
            const int me = w.rank();
            // Periodic ring: send up, receive from below, with per-rank sizes.
            std::vector<double> mine(me + 1, 10.0 * me);
            const auto fromBelow = w.sendRecv(mine, (me + 1) % n, (me + n - 1) % n, 7);
            const int below = (me + n - 1) % n;
            EXPECT_EQ(fromBelow, std::vector<double>(below + 1, 10.0 * below));
            // Open chain: the top rank sends nowhere, rank 0 receives from nobody.
            const int dest = me + 1 < n ? me + 1 : -1;
            const int src = me > 0 ? me - 1 : -1;
            const auto got = w.sendRecv(std::vector<int>{me, me}, dest, src, 8);
            if (src < 0) {
                EXPECT_TRUE(got.empty());
            } else {
                EXPECT_EQ(got, (std::vector<int>{src, src}));
            }
            // Empty messages and sending to oneself.
            EXPECT_TRUE(w.sendRecv(std::vector<int>{}, (me + 1) % n, below, 9).empty());
            EXPECT_EQ(w.sendRecv(std::vector<int>{me}, me, me, 10), std::vector<int>{me});
            // Raw bytes with no peer at all.
            w.sendRecvBytes({}, -1, {}, -1, 11);
        });
    });
}

TEST(ThreadWorld, MessagesOfOneTagArriveInOrder) {
    runWithDeadline([] {
        runtime::runInProcess(2, [](World& w) {
            const int other = 1 - w.rank();
            for (int k = 0; k < 20; ++k) {
                const auto got = w.sendRecv(std::vector<int>{k, w.rank()}, other, other, 3);
                EXPECT_EQ(got, (std::vector<int>{k, other}));
            }
        });
    });
}

// A world that keeps World's default sendRecvMany (one sendRecvBytes per
// entry) and forwards everything else to another world.
class DefaultManyWorld final : public World {
public:
    explicit DefaultManyWorld(World& inner) : inner_(inner) {}
    int rank() const override { return inner_.rank(); }
    int size() const override { return inner_.size(); }
    int localRank() const override { return inner_.localRank(); }
    int localSize() const override { return inner_.localSize(); }
    std::string kind() const override { return inner_.kind(); }
    void barrier() override { inner_.barrier(); }
    void sendRecvBytes(std::span<const std::byte> send, int dest, std::span<std::byte> recv, int src,
                       int tag) override {
        ++calls;
        inner_.sendRecvBytes(send, dest, recv, src, tag);
    }
    void allReduce(std::span<double> values, ReduceOp op) override { inner_.allReduce(values, op); }
    void allReduce(std::span<std::int64_t> values, ReduceOp op) override { inner_.allReduce(values, op); }
    void broadcastBytes(std::span<std::byte> data, int root) override { inner_.broadcastBytes(data, root); }
    void allGatherBytes(std::span<const std::byte> mine, std::span<std::byte> all) override {
        inner_.allGatherBytes(mine, all);
    }
    std::vector<std::byte> allToAllBytes(std::span<const std::byte> send, std::span<const std::int64_t> sendCounts,
                                         std::vector<std::int64_t>& recvCounts) override {
        return inner_.allToAllBytes(send, sendCounts, recvCounts);
    }
    [[noreturn]] void abort(const std::string& message, int code) override {
        inner_.abort(message, code);
        std::abort();  // not reached (GCC does not see inner_.abort's [[noreturn]] through the call)
    }

    int calls = 0;  // sendRecvBytes calls

private:
    World& inner_;
};

TEST(ThreadWorld, SendRecvManyMatchesTheMessagesOneByOne) {
    runWithDeadline([] {
        for (const int n : {2, 3, 5}) {
            SCOPED_TRACE(::testing::Message() << n << " ranks");
            runtime::runInProcess(n, [](World& w) { testsupport::checkSendRecvMany(w, 21); });
            // The base class's default: one sendRecvBytes per entry, in order.
            runtime::runInProcess(n, [](World& w) {
                DefaultManyWorld serial(w);
                testsupport::checkSendRecvMany(serial, 22);
                EXPECT_EQ(serial.calls, 7);
            });
        }
    });
}

void expectMessageContains(const std::function<void()>& f, const std::string& part) {
    try {
        f();
        ADD_FAILURE() << "nothing was thrown";
    } catch (const std::exception& e) {
        EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
}

TEST(ThreadWorld, ExceptionOnOneRankReleasesRanksBlockedInCollectives) {
    runWithDeadline([] {
        try {
            runtime::runInProcess(4, [](World& w) {
                if (w.rank() == 2) throwError(ErrorKind::InvalidInput, "rank two found bad input in atom 17");
                std::vector<double> v{1.0};
                w.allReduce(std::span(v), ReduceOp::Sum);  // the others wait here for rank 2
                w.barrier();
            });
            ADD_FAILURE() << "nothing was thrown";
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
            EXPECT_STREQ(e.what(), "rank two found bad input in atom 17");
        }
    });
}

TEST(ThreadWorld, ExceptionOnOneRankReleasesRanksBlockedInReceives) {
    runWithDeadline([] {
        // Ranks wait for a message from rank 0, which fails first.
        expectMessageContains(
            [] {
                runtime::runInProcess(3, [](World& w) {
                    if (w.rank() == 0) throw std::runtime_error("plain std exception from rank 0");
                    std::vector<int> nothing;
                    w.sendRecv(nothing, -1, 0, 5);
                });
            },
            "plain std exception from rank 0");
        // A failure after some successful communication, in a later barrier.
        expectMessageContains(
            [] {
                runtime::runInProcess(3, [](World& w) {
                    w.barrier();
                    if (w.rank() == 1) throwError(ErrorKind::Plan, "late failure on rank 1");
                    w.barrier();
                    w.barrier();
                });
            },
            "late failure on rank 1");
    });
}

TEST(ThreadWorld, AbortEndsTheJobWithItsMessage) {
    runWithDeadline([] {
        try {
            runtime::runInProcess(3, [](World& w) {
                if (w.rank() == 1) w.abort("numbers went wrong on rank 1");
                w.barrier();
            });
            ADD_FAILURE() << "nothing was thrown";
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::Runtime);
            EXPECT_NE(std::string(e.what()).find("numbers went wrong on rank 1"), std::string::npos) << e.what();
        }
    });
}

// HALOEX_HOST_WAIT_TIMEOUT for the length of one test.
class HostWaitLimit {
public:
    explicit HostWaitLimit(const char* seconds) { ::setenv("HALOEX_HOST_WAIT_TIMEOUT", seconds, 1); }
    ~HostWaitLimit() { ::unsetenv("HALOEX_HOST_WAIT_TIMEOUT"); }
};

TEST(ThreadWorld, ARankThatStopsRespondingIsDiagnosedInsteadOfWaitedForForever) {
    const HostWaitLimit limit("1");
    runWithDeadline([] {
        // Rank 2 is stuck (as a stopped process would be) while the others
        // wait for it in a barrier: they give up after the limit, naming it.
        try {
            runtime::runInProcess(3, [](World& w) {
                if (w.rank() == 2) std::this_thread::sleep_for(std::chrono::seconds(4));
                w.barrier();
            });
            ADD_FAILURE() << "nothing was thrown";
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::Timeout) << e.what();
            const std::string message = e.what();
            EXPECT_TRUE(message.starts_with("rank 0: barrier: virtual rank(s) 2 did not arrive (waited 1 s)") ||
                        message.starts_with("rank 1: barrier: virtual rank(s) 2 did not arrive (waited 1 s)"))
                << message;
            EXPECT_NE(message.find("HALOEX_HOST_WAIT_TIMEOUT"), std::string::npos) << message;
        }
        // A message that never comes.
        expectMessageContains(
            [] {
                runtime::runInProcess(2, [](World& w) {
                    if (w.rank() == 0) {
                        std::this_thread::sleep_for(std::chrono::seconds(3));
                        return;
                    }
                    std::vector<int> nothing;
                    w.sendRecv(nothing, -1, 0, 5);
                });
            },
            "rank 1: sendRecv: the message of 8 bytes from rank 0 (tag 5) did not come (waited 1 s)");
        // The same in sendRecvMany, which names the message it waits for.
        expectMessageContains(
            [] {
                runtime::runInProcess(2, [](World& w) {
                    std::int64_t value = w.rank();
                    std::int64_t got = -1;
                    if (w.rank() == 0) {
                        // Rank 1's message arrives; rank 0's second one never leaves.
                        const std::vector<runtime::PeerMessage> m{
                            {{}, -1, std::as_writable_bytes(std::span(&got, 1)), 1}};
                        w.sendRecvMany(m, 6);
                        std::this_thread::sleep_for(std::chrono::seconds(3));
                        return;
                    }
                    const std::vector<runtime::PeerMessage> m{{std::as_bytes(std::span(&value, 1)), 0, {}, -1},
                                                              {{}, -1, std::as_writable_bytes(std::span(&got, 1)), 0}};
                    w.sendRecvMany(m, 6);
                });
            },
            "rank 1: sendRecvMany: the message of 8 bytes from rank 0 (tag 6) did not come (waited 1 s)");
    });
}

TEST(ThreadWorld, SendRecvManyNamesAMessageOfTheWrongSize) {
    runWithDeadline([] {
        expectMessageContains(
            [] {
                runtime::runInProcess(2, [](World& w) {
                    const std::int32_t small = 5;
                    std::int64_t big = 0;
                    const std::vector<runtime::PeerMessage> m{
                        {std::as_bytes(std::span(&small, 1)), 1 - w.rank(), {}, -1},
                        {{}, -1, std::as_writable_bytes(std::span(&big, 1)), 1 - w.rank()}};
                    w.sendRecvMany(m, 4);
                });
            },
            "expected 8 bytes from rank");
        expectMessageContains(
            [] {
                runtime::runInProcess(2, [](World& w) {
                    std::int64_t v = 0;
                    const std::vector<runtime::PeerMessage> m{{{}, 2, std::as_writable_bytes(std::span(&v, 1)), 0}};
                    w.sendRecvMany(m, 4);
                });
            },
            "destination rank 2 outside 0..1");
    });
}

TEST(ThreadWorld, HostWaitLimitComesFromTheEnvironment) {
    {
        const HostWaitLimit limit("soon");
        expectMessageContains([] { runtime::runInProcess(2, [](World& w) { w.barrier(); }); },
                              "HALOEX_HOST_WAIT_TIMEOUT='soon': use a number of seconds >= 0");
    }
    {
        const HostWaitLimit none("0");  // no limit: a slow rank is waited for
        runWithDeadline([] {
            runtime::runInProcess(2, [](World& w) {
                if (w.rank() == 1) std::this_thread::sleep_for(std::chrono::milliseconds(1500));
                w.barrier();
            });
        });
    }
    EXPECT_EQ(runtime::hostWaitTimeoutSeconds(), runtime::kDefaultHostWaitTimeoutSeconds);
}

// The process's virtual memory size (bytes), from /proc/self/status.
std::size_t virtualMemoryBytes() {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line)) {
        if (line.starts_with("VmSize:")) return std::stoull(line.substr(7)) * 1024;
    }
    return 0;
}

TEST(ThreadWorld, AThreadThatCannotBeCreatedIsAClearError) {
    // An address-space limit (root is subject to it too) leaves room for a
    // few thread stacks only: creating the rest fails.
    const std::size_t used = virtualMemoryBytes();
    ASSERT_GT(used, 0u);
    rlimit saved{};
    ASSERT_EQ(::getrlimit(RLIMIT_AS, &saved), 0);
    rlimit small = saved;
    small.rlim_cur = used + (std::size_t{48} << 20);
    ASSERT_EQ(::setrlimit(RLIMIT_AS, &small), 0);
    std::string message;
    ErrorKind kind = ErrorKind::Internal;
    try {
        runtime::runInProcess(256, [](World& w) { w.barrier(); });
    } catch (const Error& e) {
        message = e.what();
        kind = e.kind();
    }
    ASSERT_EQ(::setrlimit(RLIMIT_AS, &saved), 0);
    EXPECT_EQ(kind, ErrorKind::Runtime) << message;
    EXPECT_NE(message.find("cannot start virtual rank"), std::string::npos) << message;
    EXPECT_NE(message.find("of 256 as a thread"), std::string::npos) << message;
    EXPECT_NE(message.find("use fewer ranks (--ranks)"), std::string::npos) << message;
}

TEST(ThreadWorld, RefusesNonPositiveRankCounts) {
    expectMessageContains([] { runtime::runInProcess(0, [](World&) {}); }, "cannot run 0 in-process ranks");
}

TEST(SingleRankWorld, BehavesLikeAJobOfOne) {
    World& w = runtime::singleRankWorld();
    EXPECT_EQ(w.rank(), 0);
    EXPECT_EQ(w.size(), 1);
    EXPECT_EQ(w.kind(), "single");
    EXPECT_EQ(w.allReduceValue(2.5, ReduceOp::Sum), 2.5);
    EXPECT_EQ(w.allGather(7), std::vector<int>{7});
    EXPECT_EQ(w.sendRecv(std::vector<int>{1, 2, 3}, 0, 0, 1), (std::vector<int>{1, 2, 3}));
    EXPECT_TRUE(w.sendRecv(std::vector<int>{1}, -1, -1, 1).empty());
    const auto all = w.allToAll(std::vector<std::vector<int>>{{4, 5}});
    EXPECT_EQ(all, (std::vector<int>{4, 5}));
}

}  // namespace
}  // namespace haloex::testing
