// The Auto that measures (haloex/halo/auto_select.hpp) over thread ranks with
// the reference and staged backends in host memory, timed by a fake clock
// that each rank's representative steps advance by a chosen cost per step:
// the fastest by the median of its repeats wins (warm-up untimed), the
// decision is the slowest rank's and so the same on every rank, a cached
// choice is not measured again (in this process and through the cache file),
// a corrupt or stale cache file is reported and measured again, candidates
// that cannot run are listed with the reason, and the cases with nothing to
// compare are decided without measuring.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "haloex/build_info.hpp"
#include "haloex/core/error.hpp"
#include "haloex/halo/auto_select.hpp"
#include "haloex/runtime/world.hpp"
#include "test_refusal.hpp"
#include "test_temp_dir.hpp"

namespace {

using namespace haloex;
using transport::MemorySpace;

// Seconds per step of `backend` on `rank` in its `call`-th call (0: the
// warm-up when there is one).
using Cost = std::function<double(Backend backend, int rank, int call)>;

struct RankResult {
    AutoRecord record;
    std::string transportName;
    int prepared = 0;  // candidates this rank set up (measured)
    std::vector<std::string> warnings;
};

AutoSelectOptions hostOptions(const std::string& key) {
    AutoSelectOptions o;
    o.shapeKey = key;
    o.transport.memorySpace = MemorySpace::Host;
    o.candidates = {Backend::Reference, Backend::Staged};
    o.warmupSteps = 4;
    o.stepsPerRepeat = 10;
    o.repeats = 3;
    return o;
}

// selectBackend on `ranks` thread ranks, each with its own fake clock.
std::vector<RankResult> selectOnThreads(int ranks, const AutoSelectOptions& base, const Cost& cost) {
    std::vector<RankResult> out(static_cast<std::size_t>(ranks));
    runtime::runInProcess(ranks, [&](runtime::World& world) {
        RankResult& mine = out[static_cast<std::size_t>(world.rank())];
        double now = 0.0;
        AutoSelectOptions o = base;
        o.clock = [&now] { return now; };
        o.warn = [&mine](const std::string& w) { mine.warnings.push_back(w); };
        const int rank = world.rank();
        AutoSelection s = selectBackend(world, o, [&](transport::BlockTransport& t, Backend b) -> RepresentativeSteps {
            ++mine.prepared;
            EXPECT_EQ(t.name(), toString(b)) << "the steps run on the candidate's own transport";
            auto calls = std::make_shared<int>(0);
            return [&now, &cost, b, rank, calls](int steps) { now += steps * cost(b, rank, (*calls)++); };
        });
        mine.record = s.record;
        mine.transportName = s.transport ? s.transport->name() : "";
    });
    return out;
}

const AutoCandidateTime& timeOf(const AutoRecord& r, Backend b) {
    for (const AutoCandidateTime& m : r.measured) {
        if (m.backend == b) return m;
    }
    throw std::runtime_error("not measured: " + std::string(toString(b)));
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

class AutoSelect : public ::testing::Test {
protected:
    void SetUp() override { clearAutoSelectionCache(); }
    void TearDown() override { clearAutoSelectionCache(); }
};

TEST_F(AutoSelect, PicksTheFastestByTheMedianOfItsRepeatsWithTheWarmUpUntimed) {
    // Reference: a slow warm-up (call 0) and one slow repeat; its median is
    // still the fastest. Its mean (3.67 ms) would lose to staged's 2 ms.
    const Cost cost = [](Backend b, int, int call) {
        if (b == Backend::Reference) return call == 0 ? 1.0 : call == 2 ? 9e-3 : 1e-3;
        return 2e-3;
    };
    const auto results = selectOnThreads(2, hostOptions("median"), cost);
    for (const RankResult& r : results) {
        EXPECT_EQ(r.record.chosen, Backend::Reference);
        EXPECT_EQ(r.transportName, "reference") << "the winner's transport is handed back";
        EXPECT_EQ(r.record.source, AutoSource::Measured);
        EXPECT_EQ(r.prepared, 2);
        ASSERT_EQ(r.record.measured.size(), 2u);
        const AutoCandidateTime& ref = timeOf(r.record, Backend::Reference);
        ASSERT_EQ(ref.repeatSecondsPerStep.size(), 3u);
        EXPECT_NEAR(ref.repeatSecondsPerStep[1], 9e-3, 1e-12);
        EXPECT_NEAR(ref.secondsPerStep, 1e-3, 1e-12);
        EXPECT_NEAR(timeOf(r.record, Backend::Staged).secondsPerStep, 2e-3, 1e-12);
        EXPECT_EQ(r.record.warmupSteps, 4);
        EXPECT_EQ(r.record.stepsPerRepeat, 10);
        EXPECT_EQ(r.record.repeats, 3);
        EXPECT_EQ(r.record.commit, gitCommit());
        EXPECT_FALSE(r.record.measuredAt.empty());
        EXPECT_TRUE(contains(r.record.reason, "chosen by measurement")) << r.record.reason;
        EXPECT_TRUE(contains(r.record.reason, "reference 1000.0 us/step, staged 2000.0 us/step")) << r.record.reason;
    }
}

TEST_F(AutoSelect, DecidesTogetherByTheSlowestRank) {
    // Alone, rank 0 would pick reference (1 ms against 3 ms); rank 1 makes
    // reference 5 ms. Over both the slowest rank counts: staged, everywhere.
    const Cost cost = [](Backend b, int rank, int) {
        if (b == Backend::Reference) return rank == 0 ? 1e-3 : 5e-3;
        return 3e-3;
    };
    const auto results = selectOnThreads(2, hostOptions("collective"), cost);
    for (const RankResult& r : results) {
        EXPECT_EQ(r.record.chosen, Backend::Staged);
        EXPECT_EQ(r.transportName, "staged");
        EXPECT_NEAR(timeOf(r.record, Backend::Reference).secondsPerStep, 5e-3, 1e-12) << "the slowest rank's time";
    }
    EXPECT_EQ(results[0].record.toJson(), results[1].record.toJson()) << "the same record on every rank";
}

TEST_F(AutoSelect, ATieKeepsTheEarlierCandidate) {
    const auto results = selectOnThreads(2, hostOptions("tie"), [](Backend, int, int) { return 1e-3; });
    EXPECT_EQ(results[0].record.chosen, Backend::Reference);
    AutoSelectOptions reversed = hostOptions("tie reversed");
    reversed.candidates = {Backend::Staged, Backend::Reference};
    EXPECT_EQ(selectOnThreads(2, reversed, [](Backend, int, int) { return 1e-3; })[1].record.chosen, Backend::Staged);
}

TEST_F(AutoSelect, ACachedChoiceIsNotMeasuredAgain) {
    const Cost stagedFaster = [](Backend b, int, int) { return b == Backend::Staged ? 1e-3 : 2e-3; };
    const Cost referenceFaster = [](Backend b, int, int) { return b == Backend::Reference ? 1e-3 : 2e-3; };
    const auto first = selectOnThreads(2, hostOptions("cached"), stagedFaster);
    ASSERT_EQ(first[0].record.chosen, Backend::Staged);
    // The same shape again: no candidate is set up, the first figures stand.
    const auto again = selectOnThreads(2, hostOptions("cached"), referenceFaster);
    for (const RankResult& r : again) {
        EXPECT_EQ(r.prepared, 0) << "measured although cached";
        EXPECT_EQ(r.record.source, AutoSource::ProcessCache);
        EXPECT_EQ(r.record.chosen, Backend::Staged);
        EXPECT_EQ(r.transportName, "staged") << "a cached choice still gets its transport";
        EXPECT_NEAR(timeOf(r.record, Backend::Reference).secondsPerStep, 2e-3, 1e-12);
        EXPECT_TRUE(contains(r.record.reason, "chosen by measurement earlier in this process")) << r.record.reason;
    }
    // Another shape, or another rank count, is measured.
    EXPECT_EQ(selectOnThreads(2, hostOptions("another shape"), referenceFaster)[0].record.chosen, Backend::Reference);
    const auto threeRanks = selectOnThreads(3, hostOptions("cached"), referenceFaster);
    EXPECT_EQ(threeRanks[0].prepared, 2);
    EXPECT_EQ(threeRanks[0].record.chosen, Backend::Reference);
}

TEST_F(AutoSelect, TheCacheFileCarriesTheChoiceToTheNextRun) {
    const auto dir = haloex::testing::freshTestDir("auto_select");
    AutoSelectOptions o = hostOptions("file round trip");
    o.cacheFile = (dir / "auto.json").string();
    const auto first = selectOnThreads(2, o, [](Backend b, int, int) { return b == Backend::Staged ? 1e-3 : 4e-3; });
    ASSERT_EQ(first[0].record.source, AutoSource::Measured);
    ASSERT_EQ(first[0].record.chosen, Backend::Staged);
    const nlohmann::json file = nlohmann::json::parse(haloex::testing::fileContents(o.cacheFile));
    EXPECT_EQ(file["format"], "haloex-auto-selection");
    EXPECT_EQ(file["version"], 1);
    ASSERT_TRUE(file["entries"].contains(first[0].record.key)) << file.dump(2);
    EXPECT_EQ(file["entries"][first[0].record.key]["chosen"], "staged");

    clearAutoSelectionCache();  // a new process: only the file remembers
    const auto second =
        selectOnThreads(2, o, [](Backend b, int, int) { return b == Backend::Reference ? 1e-3 : 4e-3; });
    for (const RankResult& r : second) {
        EXPECT_EQ(r.prepared, 0);
        EXPECT_EQ(r.record.source, AutoSource::FileCache);
        EXPECT_EQ(r.record.chosen, Backend::Staged);
        EXPECT_EQ(r.transportName, "staged");
        EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
        EXPECT_NEAR(timeOf(r.record, Backend::Reference).secondsPerStep, 4e-3, 1e-12);
        EXPECT_TRUE(contains(r.record.reason, "read from " + o.cacheFile)) << r.record.reason;
        EXPECT_EQ(r.record.measuredAt, first[0].record.measuredAt);
    }
    // Another shape is measured and added; the first entry stays.
    AutoSelectOptions other = hostOptions("file round trip, other shape");
    other.cacheFile = o.cacheFile;
    EXPECT_EQ(selectOnThreads(2, other, [](Backend, int, int) { return 1e-3; })[0].record.source, AutoSource::Measured);
    const nlohmann::json both = nlohmann::json::parse(haloex::testing::fileContents(o.cacheFile));
    EXPECT_EQ(both["entries"].size(), 2u);
    EXPECT_TRUE(both["entries"].contains(first[0].record.key));
}

TEST_F(AutoSelect, ACorruptOrStaleCacheFileIsMeasuredAgainWithAWarning) {
    const auto dir = haloex::testing::freshTestDir("auto_select");
    AutoSelectOptions o = hostOptions("stale");
    o.cacheFile = (dir / "auto.json").string();
    const Cost cost = [](Backend b, int, int) { return b == Backend::Staged ? 1e-3 : 2e-3; };
    selectOnThreads(2, o, cost);  // a valid file to spoil
    const std::string valid = haloex::testing::fileContents(o.cacheFile);
    nlohmann::json otherCommit = nlohmann::json::parse(valid);
    const std::string key = otherCommit["entries"].begin().key();
    otherCommit["entries"][key]["commit"] = "0123abc";
    nlohmann::json unknownBackend = nlohmann::json::parse(valid);
    unknownBackend["entries"][key]["chosen"] = "warp-drive";
    nlohmann::json noFigures = nlohmann::json::parse(valid);
    noFigures["entries"][key].erase("candidates");
    nlohmann::json newerLayout = nlohmann::json::parse(valid);
    newerLayout["version"] = 99;
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"{\"format\": \"haloex-auto-sel", "not valid JSON"},
        {"[1, 2, 3]", "not an auto-selection cache"},
        {newerLayout.dump(), "version 99 of the layout"},
        {unknownBackend.dump(), "malformed: unknown halo backend 'warp-drive'"},
        {noFigures.dump(), "malformed: the field \"candidates\" is missing"},
        {otherCommit.dump(), "was measured by haloex 0123abc, this is " + std::string(gitCommit())},
    };
    for (const auto& [contents, why] : cases) {
        SCOPED_TRACE(why);
        haloex::testing::writeFileText(o.cacheFile, contents);
        clearAutoSelectionCache();
        const auto results = selectOnThreads(2, o, cost);
        for (const RankResult& r : results) {
            EXPECT_EQ(r.prepared, 2) << "measured again";
            EXPECT_EQ(r.record.source, AutoSource::Measured);
            EXPECT_EQ(r.record.chosen, Backend::Staged);
            ASSERT_EQ(r.warnings.size(), 1u) << "one warning, on every rank";
            EXPECT_TRUE(contains(r.warnings[0], why)) << r.warnings[0];
            EXPECT_TRUE(contains(r.warnings[0], "auto-selection cache " + o.cacheFile)) << r.warnings[0];
            EXPECT_TRUE(contains(r.warnings[0], "measuring again")) << r.warnings[0];
            EXPECT_EQ(r.record.warnings, r.warnings) << "the record keeps them";
        }
        // Rewritten: valid again, with this commit's measurement.
        const nlohmann::json rewritten = nlohmann::json::parse(haloex::testing::fileContents(o.cacheFile));
        EXPECT_EQ(rewritten["version"], 1);
        EXPECT_EQ(rewritten["entries"][key]["commit"], gitCommit());
    }
}

TEST_F(AutoSelect, CandidatesThatCannotRunAreListedWithTheirReasons) {
    AutoSelectOptions o = hostOptions("skipped");
    o.candidates = {Backend::Reference, Backend::Staged, Backend::Ipc, Backend::Nccl, Backend::Nvshmem};
    const auto results = selectOnThreads(2, o, [](Backend, int, int) { return 1e-3; });
    const AutoRecord& r = results[0].record;
    ASSERT_EQ(r.measured.size(), 2u);
    ASSERT_EQ(r.skipped.size(), 3u);
    for (const AutoSkipped& s : r.skipped) {
        EXPECT_TRUE(contains(s.reason, "keeps its arrays in device memory, and these are in host memory")) << s.reason;
    }
    const std::vector<std::string> lines = r.describe();
    EXPECT_TRUE(std::any_of(lines.begin(), lines.end(),
                            [](const std::string& l) { return contains(l, "  nccl: skipped: it keeps its arrays"); }));
    // Device memory: a backend this job cannot run is skipped with the
    // registry's reason (on this CPU-only machine, all of them).
    runtime::runInProcess(2, [](runtime::World& world) {
        std::vector<AutoSkipped> skipped;
        const std::vector<Backend> asked{Backend::Ipc, Backend::Nccl, Backend::Nvshmem};
        const std::vector<Backend> usable = autoCandidates(world, MemorySpace::Device, asked, skipped);
        EXPECT_EQ(usable.size() + skipped.size(), asked.size());
        for (const AutoSkipped& s : skipped) EXPECT_EQ(s.reason, unavailableReason(s.backend, world));
        if (!deviceUnavailableReason().empty()) {
            EXPECT_TRUE(usable.empty()) << "no GPU, yet a device backend can run";
        }
        // The reference transport outside an in-process world.
        skipped.clear();
        EXPECT_TRUE(
            autoCandidates(runtime::singleRankWorld(), MemorySpace::Device, {Backend::Reference}, skipped).empty());
        ASSERT_EQ(skipped.size(), 1u);
        EXPECT_TRUE(contains(skipped[0].reason, "host memory")) << skipped[0].reason;
    });
}

TEST_F(AutoSelect, NothingIsMeasuredWhereThereIsNothingToCompare) {
    const Cost cost = [](Backend, int, int) { return 1e-3; };
    // The default candidates on thread ranks: the rule's reference transport.
    AutoSelectOptions threads = hostOptions("rule");
    threads.candidates.clear();
    for (const RankResult& r : selectOnThreads(2, threads, cost)) {
        EXPECT_EQ(r.prepared, 0);
        EXPECT_EQ(r.record.source, AutoSource::Rule);
        EXPECT_EQ(r.transportName, "reference");
        EXPECT_TRUE(contains(r.record.reason, "by rule, without measuring: virtual ranks")) << r.record.reason;
        EXPECT_TRUE(r.record.measured.empty());
        EXPECT_EQ(r.record.repeats, 0) << "no repeats were run";
    }
    // One rank: the staged transport, nothing to move between ranks.
    int prepared = 0;
    AutoSelection one = selectBackend(runtime::singleRankWorld(), threads, [&](transport::BlockTransport&, Backend) {
        ++prepared;
        return RepresentativeSteps([](int) {});
    });
    EXPECT_EQ(prepared, 0);
    EXPECT_EQ(one.record.chosen, Backend::Staged);
    EXPECT_TRUE(contains(one.record.reason, "one rank")) << one.record.reason;
    // Only one candidate can run here.
    AutoSelectOptions single = hostOptions("one candidate");
    single.candidates = {Backend::Ipc, Backend::Staged};
    for (const RankResult& r : selectOnThreads(2, single, cost)) {
        EXPECT_EQ(r.prepared, 0);
        EXPECT_EQ(r.record.chosen, Backend::Staged);
        EXPECT_TRUE(contains(r.record.reason, "the only candidate that can run here")) << r.record.reason;
        ASSERT_EQ(r.record.skipped.size(), 1u);
        EXPECT_EQ(r.record.skipped[0].backend, Backend::Ipc);
    }
}

TEST_F(AutoSelect, BadOptionsAndJobsWithoutACandidateAreRefused) {
    const auto refused = [](AutoSelectOptions o) {
        std::vector<std::string> messages(2);
        runtime::runInProcess(2, [&](runtime::World& world) {
            messages[static_cast<std::size_t>(world.rank())] = haloex::testing::invalidInputMessage([&] {
                selectBackend(world, o,
                              [](transport::BlockTransport&, Backend) { return RepresentativeSteps([](int) {}); });
            });
        });
        EXPECT_EQ(messages[0], messages[1]) << "every rank refuses alike";
        return messages[0];
    };
    AutoSelectOptions o = hostOptions("refused");
    o.candidates = {Backend::Staged, Backend::Auto};
    EXPECT_TRUE(contains(refused(o), "Auto among the candidates"));
    o = hostOptions("refused");
    o.stepsPerRepeat = 0;
    EXPECT_TRUE(contains(refused(o), "stepsPerRepeat 0: use at least 1"));
    o = hostOptions("refused");
    o.repeats = 0;
    EXPECT_TRUE(contains(refused(o), "repeats 0: use at least 1 timed repeat"));
    o = hostOptions("refused");
    o.warmupSteps = -1;
    EXPECT_TRUE(contains(refused(o), "warmupSteps -1"));
    o = hostOptions("refused");
    o.candidates = {Backend::Nvshmem, Backend::Ipc};
    const std::string none = refused(o);
    EXPECT_TRUE(contains(none, "no candidate backend can run here (nvshmem: ")) << none;
    EXPECT_TRUE(contains(none, "; ipc: ")) << none;
    // A cache file that cannot be written: found before anything is measured.
    o = hostOptions("refused");
    o.cacheFile = (haloex::testing::freshTestDir("auto_select") / "missing" / "auto.json").string();
    const std::string unwritable = refused(o);
    EXPECT_TRUE(contains(unwritable, "auto-selection cache " + o.cacheFile)) << unwritable;
}

TEST_F(AutoSelect, TheRecordSaysWhatWasMeasuredInLinesAndJson) {
    const auto results = selectOnThreads(2, hostOptions("describe"),
                                         [](Backend b, int, int) { return b == Backend::Staged ? 1e-3 : 1.5e-3; });
    const AutoRecord& r = results[0].record;
    const std::vector<std::string> lines = r.describe();
    ASSERT_EQ(lines.size(), 3u);
    EXPECT_TRUE(lines[0].starts_with("auto: staged, chosen by measurement (median of 3 x 10 representative steps"))
        << lines[0];
    EXPECT_EQ(lines[1], "  reference: 1500.0 us/step (+50 % against staged; repeats 1500.0, 1500.0, 1500.0)");
    EXPECT_EQ(lines[2], "  staged: 1000.0 us/step (chosen; repeats 1000.0, 1000.0, 1000.0)");
    const nlohmann::json j = nlohmann::json::parse(r.toJson());
    EXPECT_EQ(j["chosen"], "staged");
    EXPECT_EQ(j["source"], "measured");
    ASSERT_EQ(j["candidates"].size(), 2u);
    EXPECT_EQ(j["candidates"][0]["backend"], "reference");
    EXPECT_NEAR(j["candidates"][0]["us_per_step"].get<double>(), 1500.0, 1e-6);
    EXPECT_EQ(j["candidates"][0]["repeats_us_per_step"].size(), 3u);
    EXPECT_EQ(j["steps_per_repeat"], 10);
    EXPECT_EQ(toString(AutoSource::FileCache), "cache file");
}

}  // namespace
