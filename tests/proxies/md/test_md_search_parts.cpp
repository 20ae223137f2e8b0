// The search step's account as the run report carries it: the parts of
// "migrate", "plan" and "pair search" (RunSummary::searchPhasePartsMs, summed
// over the search steps) per search step, a summary line for each phase of
// several parts in the order the step runs its phases, and the JSON's
// migrate_parts_ms, plan_parts_ms and pair_search_parts_ms.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "haloex/md/engine.hpp"
#include "haloex/md/report.hpp"

namespace {

using namespace haloex::md;

RunSummary twoSearchSteps() {
    RunSummary s;
    s.searchSteps = 2;
    s.searchStepMs = 0.75;
    s.searchPhasesMs = {{"migrate", 0.4}, {"plan", 0.3}, {"pair search", 0.6}, {"step", 0.2}};
    s.searchPhasePartsMs["pair search"] = {{"grid and counts", 0.5}, {"lists", 0.1}};
    s.searchPhasePartsMs["migrate"] = {{"classify", 0.2}, {"counts", 0.04}, {"blocks", 0.12}, {"fingerprint", 0.04}};
    s.searchPhasePartsMs["plan"] = {{"home", 0.3}};  // one part: no line of its own
    return s;
}

TEST(SearchStepParts, SummaryLinesPerSearchStepInTheStepsOrder) {
    std::ostringstream out;
    printPerformanceSummary(out, twoSearchSteps(), MdOptions{});
    const std::string text = out.str();
    const auto migrate =
        text.find("of its migrate (ms): classify 0.100, counts 0.020, blocks 0.060, fingerprint 0.020");
    const auto pairSearch = text.find("of its pair search (ms): grid and counts 0.250, lists 0.050");
    ASSERT_NE(migrate, std::string::npos) << text;
    ASSERT_NE(pairSearch, std::string::npos) << text;
    EXPECT_LT(migrate, pairSearch) << "migrate runs before the pair search:\n" << text;
    EXPECT_EQ(text.find("of its plan"), std::string::npos) << "a phase of one part has no line:\n" << text;
}

TEST(SearchStepParts, JsonPerSearchStep) {
    const auto j = nlohmann::json::parse(summaryToJson(twoSearchSteps(), MdOptions{}));
    EXPECT_DOUBLE_EQ(j.at("migrate_parts_ms").at("classify").get<double>(), 0.1);
    EXPECT_DOUBLE_EQ(j.at("migrate_parts_ms").at("blocks").get<double>(), 0.06);
    EXPECT_DOUBLE_EQ(j.at("plan_parts_ms").at("home").get<double>(), 0.15);
    EXPECT_DOUBLE_EQ(j.at("pair_search_parts_ms").at("lists").get<double>(), 0.05);
    // Without a search on the device: the pair search's object is there, empty, and no other.
    const RunSummary noDeviceSearch;
    const auto none = nlohmann::json::parse(summaryToJson(noDeviceSearch, MdOptions{}));
    EXPECT_TRUE(none.at("pair_search_parts_ms").empty());
    EXPECT_FALSE(none.contains("migrate_parts_ms"));
    EXPECT_FALSE(none.contains("plan_parts_ms"));
}

}  // namespace
