// The fused kernels' pulse records from a plan (fused_setup.hpp): which
// pulses publish their done word in the reverse -- those some other pulse's
// reverse waits for, read from waitsReverse, whatever waitsForward says.
#include <gtest/gtest.h>

#include <vector>

#include "fused_setup.hpp"
#include "haloex/plan/particle_plan.hpp"
#include "transport_check.hpp"

using namespace haloex;
using haloex::nvshmem_detail::PulseRecord;

namespace {

std::vector<PulseRecord> recordsOf(const std::vector<plan::Pulse>& pulses) {
    std::vector<PulseRecord> records;
    for (const plan::Pulse& p : pulses) records.push_back(nvshmem_detail::pulseRecordOf(p, nullptr));
    nvshmem_detail::markDonePublishers(records);
    return records;
}

}  // namespace

TEST(FusedRecords, APulseThatForwardedAnotherPublishesItsDoneWord) {
    // Pulse 1 forwards atoms that pulse 0 brought; pulse 2 forwards pulse 1's.
    std::vector<plan::Pulse> pulses(3);
    pulses[1].waitsForward = {0};
    pulses[0].waitsReverse = {1};
    pulses[2].waitsForward = {1};
    pulses[1].waitsReverse = {2};
    const auto records = recordsOf(pulses);
    EXPECT_FALSE(records[0].publishesDone) << "nothing waits for pulse 0's accumulation";
    EXPECT_TRUE(records[1].publishesDone) << "pulse 0's reverse waits for pulse 1's";
    EXPECT_TRUE(records[2].publishesDone) << "pulse 1's reverse waits for pulse 2's";
}

TEST(FusedRecords, TheFlagFollowsWaitsReverseNotWaitsForward) {
    // A plan whose waitsReverse was not derived from waitsForward: the
    // reverse's waiters decide, so a waited-for word is always published.
    std::vector<plan::Pulse> pulses(2);
    pulses[0].waitsReverse = {1};
    const auto records = recordsOf(pulses);
    EXPECT_FALSE(records[0].publishesDone);
    EXPECT_TRUE(records[1].publishesDone);
    EXPECT_EQ(records[1].waitsForward, 0u);
}

TEST(FusedRecords, OnePulseAloneHasNoWaiters) {
    const auto records = recordsOf(std::vector<plan::Pulse>(1));
    EXPECT_FALSE(records[0].publishesDone);
}

// For the plans the CPU planner builds (the device builder's equal them:
// the property suite) the flag is the pulses that forwarded earlier
// pulses' atoms -- the rule the reverse kernel used before the flag, so
// every such plan runs the same kernel path: 1, 2 and 3 pulses along x,
// 2-D and 3-D grids.
TEST(FusedRecords, ForThePlannersPlansThePublishersAreThePulsesThatForwarded) {
    for (int ranks : {2, 3, 4, 6, 8}) {
        for (const testsupport::Scenario& s : testsupport::scenariosForRanks(ranks)) {
            const plan::Decomposition d = testsupport::makeDecomposition(s);
            const auto built = plan::buildParticlePlansInProcess(d, testsupport::randomHomePositions(d, s), 4);
            int publishers = 0;
            for (const plan::ParticleHaloPlan& p : built.plans) {
                const auto records = recordsOf(p.pulses);
                for (std::size_t k = 0; k < records.size(); ++k) {
                    EXPECT_EQ(records[k].publishesDone, records[k].waitsForward != 0)
                        << s.grid << " rank " << p.rank << " pulse " << k;
                    publishers += records[k].publishesDone ? 1 : 0;
                }
            }
            if (s.grid == "2x2x2" || s.grid == "8x1x1" || s.grid == "2x2x1") {
                EXPECT_GT(publishers, 0) << s.grid << ": a grid with forwarding pulses has publishers";
            }
        }
    }
}
