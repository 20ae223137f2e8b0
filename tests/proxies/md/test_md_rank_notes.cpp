// Per-rank notes merged for the run summary (md/rank_notes.hpp): a line that
// several ranks report is printed once, with the ranks it applies to.
#include <gtest/gtest.h>

#include "haloex/md/rank_notes.hpp"

using namespace haloex::md;

TEST(RankNotes, RanksAreListedWithRuns) {
    EXPECT_EQ(describeRanks({3}), "rank 3");
    EXPECT_EQ(describeRanks({0, 1}), "ranks 0, 1");
    EXPECT_EQ(describeRanks({5, 0, 1, 2}), "ranks 0-2, 5");
    EXPECT_EQ(describeRanks({0, 2, 3, 4, 6, 7}), "ranks 0, 2-4, 6, 7");
}

TEST(RankNotes, ALineEveryRankReportsAppearsOnceWithoutRanks) {
    const std::string nccl = "nccl: NCCL 22809, one ncclSend/ncclRecv group per pulse on the stream, no host syncs";
    const std::vector<std::string> grouped = groupRankNotes({{nccl}, {nccl}, {nccl}, {nccl}});
    EXPECT_EQ(grouped, std::vector<std::string>{nccl});
}

TEST(RankNotes, LinesOfSomeRanksNameThemInFirstSeenOrder) {
    const std::vector<std::vector<std::string>> byRank = {
        {"nvshmem: 1 pulse(s)", "pulse 0 -> rank 1: direct"},
        {"nvshmem: 1 pulse(s)", "pulse 0 -> rank 2: direct"},
        {"nvshmem: 1 pulse(s)", "pulse 0 -> rank 3: direct"},
        {"nvshmem: 1 pulse(s)", "pulse 0 -> rank 0: put"},
    };
    const std::vector<std::string> want = {"nvshmem: 1 pulse(s)", "pulse 0 -> rank 1: direct (rank 0)",
                                           "pulse 0 -> rank 2: direct (rank 1)", "pulse 0 -> rank 3: direct (rank 2)",
                                           "pulse 0 -> rank 0: put (rank 3)"};
    EXPECT_EQ(groupRankNotes(byRank), want);
    EXPECT_EQ(groupRankNotes({{"a", "b"}, {"b"}, {"a", "b"}}), (std::vector<std::string>{"a (ranks 0, 2)", "b"}));
}

TEST(RankNotes, OneRankOrNoneKeepsItsLines) {
    EXPECT_EQ(groupRankNotes({{"x", "y"}}), (std::vector<std::string>{"x", "y"}));
    EXPECT_TRUE(groupRankNotes({}).empty());
    EXPECT_TRUE(groupRankNotes({{}, {}}).empty());
}
