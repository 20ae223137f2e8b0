// The exchange kernels' device timestamps as the run summary reports them
// (exchangeKernelParts, backend.hpp): the named intervals in µs, in order,
// parts whose points were not both reached (or are out of order) left out;
// and the summary's text and JSON carrying them (--timeline-parts), and the
// backend's lines on how the step meets the exchange.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "haloex/md/backend.hpp"
#include "haloex/md/engine.hpp"
#include "haloex/md/report.hpp"

namespace {

using namespace haloex;
using namespace haloex::md;

// Two pulses: p0 without dependencies, p1 forwarding what p0 brought.
transport::ExchangeTimestamps twoPulses() {
    transport::ExchangeTimestamps t;
    // start, dependencies, sent, signalled, received, finished (ns)
    t.forward.push_back({10000, 0, 11000, 11500, 14000, 14300});
    t.forward.push_back({10100, 14100, 15000, 15600, 18000, 18200});
    t.forwardEnd = 18500;
    t.reverse.push_back({50000, 0, 0, 50200, 53000, 54000});
    t.reverse.push_back({50050, 0, 0, 50250, 51000, 0});  // its accumulation not reached
    t.reverseEnd = 55000;
    return t;
}

TEST(ExchangeKernelParts, NameTheIntervalsInOrderAndLeaveOutWhatWasNotReached) {
    const std::vector<std::pair<std::string, double>> expected{
        {"forward kernel", 8.5},
        {"forward p0 stores", 1.0},
        {"forward p0 signal", 0.5},
        {"forward p0 until received", 4.0},
        {"forward p0 clear", 0.3},
        {"forward p1 until dependencies", 4.0},
        {"forward p1 stores", 4.9},
        {"forward p1 signal", 0.6},
        {"forward p1 until received", 7.9},
        {"forward p1 clear", 0.2},
        {"reverse kernel", 5.0},
        {"reverse p0 signal", 0.2},
        {"reverse p0 until received", 3.0},
        {"reverse p0 accumulate", 1.0},
        {"reverse p1 signal", 0.2},
        {"reverse p1 until received", 0.95},
    };
    const auto parts = exchangeKernelParts(twoPulses());
    ASSERT_EQ(parts.size(), expected.size());
    for (std::size_t k = 0; k < parts.size(); ++k) {
        EXPECT_EQ(parts[k].first, expected[k].first);
        EXPECT_NEAR(parts[k].second, expected[k].second, 1e-9) << parts[k].first;
    }
    // A later point before an earlier one (another launch's value) is no interval.
    transport::ExchangeTimestamps odd = twoPulses();
    odd.forward[0].signalled = 10500;  // before `sent`
    for (const auto& [name, us] : exchangeKernelParts(odd)) EXPECT_NE(name, "forward p0 signal") << us;
    EXPECT_TRUE(exchangeKernelParts(transport::ExchangeTimestamps{}).empty());
}

TEST(ExchangeKernelParts, TheSummaryPrintsAndRecordsThem) {
    RunSummary s;
    s.timings.samples = 2;
    s.timings.localUs = {20.0, 22.0};
    s.timings.nonlocalUs = {30.0, 30.0};
    s.timings.nonoverlapUs = {5.0, 5.0};
    for (int k = 0; k < 2; ++k) {
        for (const auto& [name, us] : exchangeKernelParts(twoPulses())) s.timings.addExchangeKernelPart(name, us);
    }
    ASSERT_EQ(s.timings.exchangeKernelUs.size(), 16u);
    EXPECT_EQ(s.timings.exchangeKernelUs[0].second.size(), 2u);
    std::ostringstream text;
    printPerformanceSummary(text, s, MdOptions{});
    EXPECT_NE(text.str().find("inside the forward kernel (us, median): kernel 8.5; p0 stores 1.0, signal 0.5, "
                              "until received 4.0, clear 0.3; p1 until dependencies 4.0, stores 4.9"),
              std::string::npos)
        << text.str();
    EXPECT_NE(text.str().find("inside the reverse kernel (us, median): kernel 5.0; p0 signal 0.2"), std::string::npos)
        << text.str();
    const std::string json = summaryToJson(s, MdOptions{});
    EXPECT_NE(json.find("\"exchange_kernels\""), std::string::npos) << json;
    EXPECT_NE(json.find("\"forward p1 until dependencies\""), std::string::npos) << json;
}

}  // namespace

// How the step meets the exchange (RankBackend::exchangeNotes: the launch
// order, who stores the forward's home entries): one summary line each,
// and the JSON's list; a run without a halo says nothing.
TEST(ExchangeNotes, TheSummaryPrintsAndRecordsThem) {
    RunSummary s;
    s.exchangeNotes = {"the forward exchange's kernel is launched first",
                       "the update stores the next forward's home entries into the receivers"};
    const MdOptions o;
    std::ostringstream text;
    printPerformanceSummary(text, s, o);
    for (const std::string& note : s.exchangeNotes) {
        EXPECT_NE(text.str().find("     exchange: " + note + "\n"), std::string::npos) << text.str();
    }
    const std::string json = summaryToJson(s, o);
    EXPECT_NE(json.find("\"exchange_notes\""), std::string::npos) << json;
    EXPECT_NE(json.find("home entries into the receivers"), std::string::npos) << json;
    s.exchangeNotes.clear();
    std::ostringstream none;
    printPerformanceSummary(none, s, o);
    EXPECT_EQ(none.str().find("exchange:"), std::string::npos) << none.str();
}
