// The search step's small host messages (src/particles/neighbour_values.hpp):
// counts and offsets to the neighbours and the largest block agreed, in one
// collective, on thread ranks.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "haloex/core/error.hpp"
#include "haloex/runtime/world.hpp"
#include "neighbour_values.hpp"

namespace haloex::testing {
namespace {

using particles::detail::exchangeValuesAgreeing;
using particles::detail::ValueExchange;

TEST(NeighbourValues, EachValueReachesItsDestAndEveryRankAgreesOnTheLargest) {
    // A ring of 4, both directions (as migration sends its two counts), and
    // an entry that sends nowhere and one that receives nothing.
    constexpr int kRanks = 4;
    std::vector<std::string> problems(kRanks);
    runtime::runInProcess(kRanks, [&](runtime::World& w) {
        const int me = w.rank(), lower = (me + kRanks - 1) % kRanks, upper = (me + 1) % kRanks;
        std::array<ValueExchange, 3> values{
            {{10LL * me, lower, upper, 0}, {10LL * me + 1, upper, lower, 0}, {-5, -1, -1, 77}}};
        const std::int64_t largest = exchangeValuesAgreeing(w, values, 7LL * me + 3);
        std::string& out = problems[static_cast<std::size_t>(me)];
        if (values[0].received != 10LL * upper) out += "entry 0 not from upper; ";
        if (values[1].received != 10LL * lower + 1) out += "entry 1 not from lower; ";
        if (values[2].received != 77) out += "an entry without a src was written; ";
        if (largest != 7 * (kRanks - 1) + 3) out += "not the largest of the ranks' values; ";
    });
    for (int r = 0; r < kRanks; ++r) EXPECT_EQ(problems[static_cast<std::size_t>(r)], "") << "rank " << r;
}

TEST(NeighbourValues, RanksThatListTheirEntriesDifferentlyAreABug) {
    // Rank 1 expects entry 0 from rank 0, which sends it to rank 2.
    constexpr int kRanks = 3;
    std::vector<std::string> messages(kRanks);
    runtime::runInProcess(kRanks, [&](runtime::World& w) {
        const int me = w.rank();
        std::array<ValueExchange, 1> values{{{me, me == 0 ? 2 : -1, me == 1 ? 0 : -1, 0}}};
        try {
            exchangeValuesAgreeing(w, values, 0);
        } catch (const Error& e) {
            if (e.kind() == ErrorKind::Internal) messages[static_cast<std::size_t>(me)] = e.what();
        }
    });
    EXPECT_NE(messages[1].find("rank 1 expects entry 0 from rank 0, which sends it to rank 2"), std::string::npos)
        << messages[1];
    EXPECT_EQ(messages[0], "");
    EXPECT_EQ(messages[2], "");
}

}  // namespace
}  // namespace haloex::testing
