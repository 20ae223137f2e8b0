#include <gtest/gtest.h>

#include "haloex/core/error.hpp"
#include "haloex/plan/decomposition.hpp"

using namespace haloex;
using namespace haloex::plan;

TEST(RankGrid, ParsesAndNumbersXFastest) {
    const RankGrid g = parseRankGrid("4x2x3");
    EXPECT_EQ(g.size(), 24);
    EXPECT_EQ(g.rankOf({1, 0, 0}), 1);
    EXPECT_EQ(g.rankOf({0, 1, 0}), 4);
    EXPECT_EQ(g.rankOf({0, 0, 1}), 8);
    EXPECT_EQ(g.neighbour(0, 0, -1), 3);
    EXPECT_EQ(g.coordOf(23), (Int3{3, 1, 2}));
    EXPECT_EQ(parseRankGrid("2").dims(), (Int3{2, 1, 1}));
}

TEST(RankGrid, RejectsMalformedText) {
    EXPECT_THROW(parseRankGrid("2x"), Error);
    EXPECT_THROW(parseRankGrid("2x0x1"), Error);
    EXPECT_THROW(parseRankGrid("1x1x1x1"), Error);
    EXPECT_THROW(parseRankGrid("abc"), Error);
}
