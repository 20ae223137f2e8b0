// The stop agreement of md::RunStop: which votes stop a run where (first
// signal and --maxh at a search step, a second signal at an energy step, a
// start-up signal before step 0), that every rank decides the same from the
// summed votes, and that the handlers count real signals.
#include <gtest/gtest.h>

#include <array>
#include <csignal>
#include <cstdint>
#include <string>

#include "haloex/core/error.hpp"
#include "haloex/md/run_stop.hpp"

using namespace haloex;
using namespace haloex::md;

namespace {

using Vote = std::array<std::int64_t, RunStop::kVoteSize>;
const auto kNow = RunStop::Clock::now();

}  // namespace

TEST(RunStop, NoVoteNoStop) {
    RunStop stop(0.0, kNow, 1);
    stop.agreeAtSearch(Vote{0, 0, 0, 0}, 50, false, true);
    stop.agreeAtEnergyStep(std::array<double, RunStop::kVoteSize>{0, 0, 0, 0}, 51);
    EXPECT_FALSE(stop.stopRequested());
    EXPECT_EQ(stop.record().exitStatus, 0);
}

TEST(RunStop, ASignalStopsAtASearchStepButNotAtTheFirstOne) {
    RunStop stop(0.0, kNow, 1);
    stop.agreeAtSearch(Vote{1, 0, 0, 0}, 0, false, false);  // the first step's search
    EXPECT_FALSE(stop.stopRequested());
    stop.agreeAtEnergyStep(std::array<double, RunStop::kVoteSize>{1, 0, 0, 0}, 5);  // one signal: not between searches
    EXPECT_FALSE(stop.stopRequested());
    stop.agreeAtSearch(Vote{1, 0, 0, 0}, 10, false, true);
    ASSERT_TRUE(stop.stopRequested());
    EXPECT_EQ(stop.record().reason, "SIGTERM");
    EXPECT_EQ(stop.record().step, 10);
    EXPECT_EQ(stop.record().exitStatus, 128 + SIGTERM);
    EXPECT_FALSE(stop.record().beforeStart);
    // The first agreement stands.
    stop.agreeAtSearch(Vote{0, 2, 2, 0}, 20, false, true);
    EXPECT_EQ(stop.record().step, 10);
}

TEST(RunStop, TheReasonComesFromTheSumsSoEveryRankAgrees) {
    // Two ranks, one saw SIGINT first, the other SIGTERM: both record SIGTERM.
    RunStop a(0.0, kNow, 0), b(0.0, kNow, 1);
    a.agreeAtSearch(Vote{1, 1, 0, 0}, 30, false, true);
    b.agreeAtSearch(Vote{1, 1, 0, 0}, 30, false, true);
    EXPECT_EQ(a.record().reason, b.record().reason);
    EXPECT_EQ(a.record().reason, "SIGTERM");
    RunStop c(0.0, kNow, 0);
    c.agreeAtSearch(Vote{0, 2, 0, 0}, 30, false, true);
    EXPECT_EQ(c.record().reason, "SIGINT");
    EXPECT_EQ(c.record().exitStatus, 128 + SIGINT);
}

TEST(RunStop, HangupAndUsr1StopLikeSigterm) {
    // A closed terminal (SIGHUP) and Slurm's pre-emption warning
    // (sbatch --signal=USR1@...) used to kill the run at once.
    RunStop hup(0.0, kNow, 0);
    hup.agreeAtSearch(Vote{0, 0, 0, 0, 1, 0}, 30, false, true);
    EXPECT_EQ(hup.record().reason, "SIGHUP");
    EXPECT_EQ(hup.record().exitStatus, 128 + SIGHUP);
    RunStop usr1(0.0, kNow, 0);
    usr1.agreeAtSearch(Vote{0, 0, 0, 0, 0, 2}, 30, false, true);
    EXPECT_EQ(usr1.record().reason, "SIGUSR1");
    EXPECT_EQ(usr1.record().exitStatus, 128 + SIGUSR1);
    // Ranks that saw different signals first agree on one name: SIGTERM, SIGINT, SIGHUP, SIGUSR1.
    RunStop mixed(0.0, kNow, 0);
    mixed.agreeAtSearch(Vote{1, 0, 0, 0, 1, 1}, 30, false, true);
    EXPECT_EQ(mixed.record().reason, "SIGTERM");
    RunStop second(0.0, kNow, 0);
    second.agreeAtEnergyStep(std::array<double, RunStop::kVoteSize>{0, 0, 1, 0, 0, 1}, 14);
    EXPECT_EQ(second.record().reason, "SIGUSR1");
    EXPECT_EQ(second.record().step, 14);
}

TEST(RunStop, ASecondSignalStopsAtTheNextEnergyStep) {
    RunStop stop(0.0, kNow, 1);
    stop.agreeAtEnergyStep(std::array<double, RunStop::kVoteSize>{0, 1, 1, 0}, 14);
    ASSERT_TRUE(stop.stopRequested());
    EXPECT_EQ(stop.record().reason, "SIGINT");
    EXPECT_EQ(stop.record().step, 14);
}

TEST(RunStop, MaxhCountsFromTheStartAndOnlyAfterStartUp) {
    RunStop late(1e-9, kNow - std::chrono::seconds(1), 1);
    EXPECT_EQ(late.vote(true)[3], 1);
    EXPECT_EQ(late.vote(false)[3], 0);                     // start-up and energy steps: no wall-clock vote
    late.agreeAtSearch(Vote{0, 0, 0, 1}, 0, true, false);  // start-up: --maxh does not count
    EXPECT_FALSE(late.stopRequested());
    late.agreeAtSearch(Vote{0, 0, 0, 1}, 40, false, true);
    ASSERT_TRUE(late.stopRequested());
    EXPECT_EQ(late.record().reason, "maxh");
    EXPECT_EQ(late.record().exitStatus, kExitMaxh);
    RunStop early(1.0, kNow, 1);  // 0.99 h not yet passed
    EXPECT_EQ(early.vote(true)[3], 0);
    RunStop none(0.0, kNow - std::chrono::hours(1000), 1);  // 0: no limit
    EXPECT_EQ(none.vote(true)[3], 0);
}

TEST(RunStop, ASignalDuringStartUpStopsBeforeStepZero) {
    RunStop stop(0.0, kNow, 1);
    stop.agreeAtSearch(Vote{0, 1, 0, 0}, 0, true, false);
    ASSERT_TRUE(stop.stopRequested());
    EXPECT_TRUE(stop.record().beforeStart);
    EXPECT_EQ(stop.record().step, 0);
}

TEST(RunStop, HandlersCountRealSignalsAndTheVoteShowsThem) {
    installStopSignalHandlers();
    installStopSignalHandlers();  // idempotent
    const int before = stopSignalsReceived();
    ASSERT_EQ(before, 0) << "this test must run in a process of its own (ctest does)";
    RunStop stop(0.0, kNow, 1);
    EXPECT_EQ(stop.vote(true), (Vote{0, 0, 0, 0}));
    ASSERT_EQ(std::raise(SIGINT), 0);  // handled: the process goes on
    EXPECT_EQ(stopSignalsReceived(), 1);
    EXPECT_EQ(firstStopSignal(), SIGINT);
    EXPECT_EQ(stop.vote(true), (Vote{0, 1, 0, 0}));
    ASSERT_EQ(std::raise(SIGTERM), 0);
    EXPECT_EQ(stopSignalsReceived(), 2);
    EXPECT_EQ(firstStopSignal(), SIGINT);  // the first one names the stop
    EXPECT_EQ(stop.vote(true), (Vote{0, 1, 1, 0}));
    // (A third signal would end the process: tested by hand, not here.)
}
