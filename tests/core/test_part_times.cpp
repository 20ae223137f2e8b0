// PartClock: a call's parts timed in the order they first ran, a recurring
// part accumulated (the search step's account of migration and plan).
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "haloex/core/part_times.hpp"

namespace haloex {
namespace {

TEST(PartClock, KeepsFirstRunOrderAndAccumulatesRecurringParts) {
    PartTimes parts{{"stale", 99.0}};
    PartClock clock(parts);
    EXPECT_TRUE(parts.empty()) << "a new clock empties the parts of the last call";
    for (int pulse = 0; pulse < 2; ++pulse) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        clock.mark("select");
        clock.mark("counts");
        std::this_thread::sleep_for(std::chrono::milliseconds(3));
        // Another array with the same text is the same part.
        static const char kBlocks[] = "blocks";
        clock.mark(pulse == 0 ? "blocks" : kBlocks);
    }
    clock.mark("synchronise");
    ASSERT_EQ(parts.size(), 4u);
    EXPECT_EQ(std::string(parts[0].first), "select");
    EXPECT_EQ(std::string(parts[1].first), "counts");
    EXPECT_EQ(std::string(parts[2].first), "blocks");
    EXPECT_EQ(std::string(parts[3].first), "synchronise");
    EXPECT_GE(parts[0].second, 4.0) << "two sleeps of 2 ms";
    EXPECT_GE(parts[2].second, 6.0) << "two sleeps of 3 ms";
    EXPECT_LT(parts[1].second, parts[0].second);
    for (const auto& [name, ms] : parts) EXPECT_GE(ms, 0.0) << name;
}

}  // namespace
}  // namespace haloex
