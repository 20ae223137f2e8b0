// MpiWorld: identity and every collective, checked against values each rank
// can compute for itself.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "haloex/core/error.hpp"
#include "haloex/runtime/mpi_world.hpp"
#include "send_recv_many_check.hpp"
#include "mpi_test_main.hpp"

using namespace haloex;
using haloex::runtime::ReduceOp;

namespace {
runtime::World& world() { return testsupport::mpiTestWorld(); }
}  // namespace

TEST(MpiWorld, IdentityMatchesMpi) {
    auto& w = world();
    int rank = -1, size = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    EXPECT_EQ(w.rank(), rank);
    EXPECT_EQ(w.size(), size);
    EXPECT_EQ(w.kind(), "mpi");
    // All ranks of this test run on one node.
    EXPECT_EQ(w.localSize(), size);
    EXPECT_EQ(w.localRank(), rank);
    EXPECT_TRUE(runtime::MpiSession::launchedByMpiLauncher());
    const auto* mpiWorld = dynamic_cast<runtime::MpiWorld*>(&w);
    ASSERT_NE(mpiWorld, nullptr);
    int result = MPI_UNEQUAL;
    MPI_Comm_compare(mpiWorld->comm(), MPI_COMM_WORLD, &result);
    EXPECT_EQ(result, MPI_CONGRUENT) << "the world must be a private duplicate of MPI_COMM_WORLD";
}

TEST(MpiWorld, AllReduceSumMaxMin) {
    auto& w = world();
    const int n = w.size(), r = w.rank();
    std::vector<double> d{static_cast<double>(r), 0.5 * r, -1.0 * r};
    w.allReduce(std::span(d).subspan(0, 1), ReduceOp::Sum);
    w.allReduce(std::span(d).subspan(1, 1), ReduceOp::Max);
    w.allReduce(std::span(d).subspan(2, 1), ReduceOp::Min);
    EXPECT_EQ(d[0], n * (n - 1) / 2.0);
    EXPECT_EQ(d[1], 0.5 * (n - 1));
    EXPECT_EQ(d[2], -1.0 * (n - 1));
    std::vector<std::int64_t> i{std::int64_t{1} << 40, r, r};
    w.allReduce(std::span(i).subspan(0, 1), ReduceOp::Sum);
    w.allReduce(std::span(i).subspan(1, 1), ReduceOp::Max);
    w.allReduce(std::span(i).subspan(2, 1), ReduceOp::Min);
    EXPECT_EQ(i[0], n * (std::int64_t{1} << 40));
    EXPECT_EQ(i[1], n - 1);
    EXPECT_EQ(i[2], 0);
    EXPECT_EQ(w.allReduceValue(3, ReduceOp::Sum), 3 * n);
}

TEST(MpiWorld, BroadcastFromEveryRoot) {
    auto& w = world();
    for (int root = 0; root < w.size(); ++root) {
        std::vector<int> data(17, w.rank() == root ? 100 + root : -1);
        w.broadcastBytes(std::as_writable_bytes(std::span(data)), root);
        for (int v : data) ASSERT_EQ(v, 100 + root) << "root " << root;
    }
}

TEST(MpiWorld, AllGatherOrdersByRank) {
    auto& w = world();
    struct Item {
        int rank;
        double value;
    };
    const auto all = w.allGather(Item{w.rank(), 1.5 * w.rank()});
    ASSERT_EQ(static_cast<int>(all.size()), w.size());
    for (int r = 0; r < w.size(); ++r) {
        EXPECT_EQ(all[static_cast<std::size_t>(r)].rank, r);
        EXPECT_EQ(all[static_cast<std::size_t>(r)].value, 1.5 * r);
    }
}

TEST(MpiWorld, AllToAllWithUnevenPieces) {
    auto& w = world();
    // Rank s sends (s + d) % 3 values "1000 s + d" to rank d (some empty).
    std::vector<std::vector<int>> out(static_cast<std::size_t>(w.size()));
    for (int d = 0; d < w.size(); ++d) out[static_cast<std::size_t>(d)].assign((w.rank() + d) % 3, 1000 * w.rank() + d);
    const std::vector<int> got = w.allToAll(out);
    std::vector<int> want;
    for (int s = 0; s < w.size(); ++s) want.insert(want.end(), (s + w.rank()) % 3, 1000 * s + w.rank());
    EXPECT_EQ(got, want);
}

TEST(MpiWorld, SendRecvAroundARingAndToNobody) {
    auto& w = world();
    const int n = w.size(), r = w.rank();
    const int right = (r + 1) % n, left = (r + n - 1) % n;
    // Sizes differ per sender, as the receivers know from the typed helper.
    const std::vector<double> send(static_cast<std::size_t>(r + 1), r + 0.25);
    const auto recv = w.sendRecv(send, right, left, 7);
    ASSERT_EQ(recv.size(), static_cast<std::size_t>(left + 1));
    for (double v : recv) EXPECT_EQ(v, left + 0.25);
    // A non-periodic chain: the ends have no peer on one side.
    const int up = r + 1 < n ? r + 1 : -1, down = r > 0 ? r - 1 : -1;
    const std::vector<int> one{r};
    const auto fromDown = w.sendRecv(one, up, down, 8);
    if (down < 0) {
        EXPECT_TRUE(fromDown.empty());
    } else {
        ASSERT_EQ(fromDown.size(), 1u);
        EXPECT_EQ(fromDown[0], down);
    }
    w.barrier();
}

TEST(MpiWorld, RefusesBadPeersAndTags) {
    auto& w = world();
    int v = 0;
    EXPECT_THROW(w.sendRecvBytes({}, w.size(), {}, -1, 0), Error);
    EXPECT_THROW(w.sendRecvBytes({}, -1, {}, -1, -5), Error);
    // Bytes expected from nobody.
    EXPECT_THROW(w.sendRecvBytes({}, -1, std::as_writable_bytes(std::span(&v, 1)), -1, 0), Error);
}

TEST(MpiWorld, SendRecvManyMatchesTheMessagesOneByOne) {
    auto& w = world();
    testsupport::checkSendRecvMany(w, 21);
    // Again with the same tag: nothing of the first call is left over.
    testsupport::checkSendRecvMany(w, 21);
    w.barrier();
}

TEST(MpiWorld, SendRecvManyRefusesBadPeersAndTagsBeforePostingAnything) {
    auto& w = world();
    std::int64_t v = 0;
    const auto in = std::as_writable_bytes(std::span(&v, 1));
    const std::vector<runtime::PeerMessage> fine{{{}, -1, {}, -1}};
    const std::vector<runtime::PeerMessage> badDest{{{}, -1, {}, -1}, {{}, w.size(), {}, -1}};
    const std::vector<runtime::PeerMessage> noSource{{{}, -1, in, -1}};
    EXPECT_THROW(w.sendRecvMany(badDest, 0), Error);
    EXPECT_THROW(w.sendRecvMany(fine, -5), Error);
    EXPECT_THROW(w.sendRecvMany(noSource, 0), Error);
    w.barrier();
}

TEST(MpiWorld, SendRecvManyNamesAMessageOfTheWrongSize) {
    auto& w = world();
    // Pairs (0, 1), (2, 3), ...: the even rank sends 4 bytes where its
    // partner expects 8.
    const bool even = w.rank() % 2 == 0;
    const int partner = even ? w.rank() + 1 : w.rank() - 1;
    if (partner < w.size()) {
        const std::int32_t small = 5;
        std::int64_t big = 0;
        if (even) {
            const std::vector<runtime::PeerMessage> m{{std::as_bytes(std::span(&small, 1)), partner, {}, -1}};
            w.sendRecvMany(m, 23);
        } else {
            const std::vector<runtime::PeerMessage> m{{{}, -1, std::as_writable_bytes(std::span(&big, 1)), partner}};
            try {
                w.sendRecvMany(m, 23);
                ADD_FAILURE() << "nothing was thrown";
            } catch (const Error& e) {
                EXPECT_NE(std::string(e.what()).find(fmt::format("rank {} expected 8 bytes from rank {} (tag 23) but "
                                                                 "got 4",
                                                                 w.rank(), partner)),
                          std::string::npos)
                    << e.what();
            }
        }
    }
    w.barrier();
}

TEST(MpiSession, AdoptsAnInitialisedMpi) {
    // MPI is running (main's session): a second session neither initialises
    // nor finalises it.
    runtime::MpiSession nested;
    EXPECT_FALSE(nested.ownsMpi());
}
