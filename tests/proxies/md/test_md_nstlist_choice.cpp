// The automatic nstlist (--nstlist 0, proxies/md/src/nstlist_choice.cpp) for
// the inputs a record measured: every automatic run of
// bench/results/md-nstlist-NVIDIA-H200-2026-12-03.json (one H200, one rank,
// 22 500 to 720 000 atoms, default settings) chose an nstlist, rlist and
// inner radius and logged the model's reason; resolveOptions must choose the
// same today, to the reason's modelled times. A change to the model or its
// constants fails here until the record is measured again (bench/md_bench.py
// nstlist, bench/fit_nstlist.py; docs/md-engine.md, "Choosing nstlist").
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "haloex/md/engine.hpp"

namespace {

using namespace haloex;

const char* const kRecord = HALOEX_BENCH_RESULTS_DIR "/md-nstlist-NVIDIA-H200-2026-12-03.json";

// The record's automatic runs: those whose command gives --nstlist 0.
std::vector<nlohmann::json> automaticRuns() {
    std::ifstream in(kRecord);
    EXPECT_TRUE(in.good()) << "cannot read " << kRecord;
    const nlohmann::json record = nlohmann::json::parse(in);
    std::vector<nlohmann::json> runs;
    for (const auto& run : record.at("runs")) {
        const std::string command = run.at("command");
        if (command.ends_with("--nstlist 0")) runs.push_back(run);
    }
    return runs;
}

TEST(NstlistChoice, ReproducesEveryAutomaticChoiceOfTheRecord) {
    const std::vector<nlohmann::json> runs = automaticRuns();
    ASSERT_EQ(runs.size(), 6u) << "22 500, 45 000, 90 000, 180 000, 360 000 and 720 000 atoms in " << kRecord;
    for (const auto& run : runs) {
        const nlohmann::json& recorded = run.at("settings");
        SCOPED_TRACE(std::to_string(run.at("atoms").get<long long>()) + " atoms, one GPU rank");
        ASSERT_EQ(run.at("ranks").get<int>(), 1);
        md::MdOptions o;
        o.atoms = run.at("atoms");
        const md::MdOptions resolved = md::resolveOptions(o, 1, /*onGpu=*/true);
        EXPECT_EQ(resolved.nstlist, recorded.at("nstlist").get<int>());
        EXPECT_DOUBLE_EQ(resolved.rlist, recorded.at("rlist").get<double>());
        EXPECT_DOUBLE_EQ(resolved.rlistInner, recorded.at("rlist_inner").get<double>());
        EXPECT_EQ(resolved.nstlistReason, recorded.at("nstlist_reason").get<std::string>());
    }
}

// The same inputs on the CPU reference: exact pairs every step, nstlist 50
// whatever the size (its search is not what limits it).
TEST(NstlistChoice, TheCpuReferenceKeepsFifty) {
    for (const long long atoms : {3000LL, 22500LL, 720000LL}) {
        md::MdOptions o;
        o.atoms = atoms;
        EXPECT_EQ(md::resolveOptions(o, 1, /*onGpu=*/false).nstlist, 50) << atoms << " atoms";
    }
}

}  // namespace
