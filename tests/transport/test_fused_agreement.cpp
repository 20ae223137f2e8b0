// agreeOnFusedSetup (src/transport/fused/fused_agreement.hpp): the one host
// reduction in which the fused transports' ranks agree, at every plan, on the
// staging size, the largest pulse, the pulse count and signals per block --
// the maxima over ranks whose plans differ, and a bad HALOEX_EXCHANGE_SIGNALS
// refused on every rank, each naming what it knows. Thread ranks on the CPU.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "fused_agreement.hpp"
#include "haloex/core/error.hpp"
#include "haloex/runtime/world.hpp"

namespace haloex::testing {
namespace {

using nvshmem_detail::agreeOnFusedSetup;
using nvshmem_detail::FusedAgreement;

// A plan with `pulses` pulses, pulse p sending `send + p` atoms and receiving `recv` slots.
plan::ParticleHaloPlan planOf(int pulses, int send, int recv) {
    plan::ParticleHaloPlan plan;
    for (int p = 0; p < pulses; ++p) {
        plan::Pulse pulse;
        pulse.id = p;
        pulse.deviceSendCount = send + p;
        pulse.recvCount = recv;
        pulse.recvCapacity = recv;
        plan.pulses.push_back(pulse);
    }
    return plan;
}

TEST(FusedAgreement, EveryRankGetsTheMaximaOfThemAll) {
    std::vector<FusedAgreement> got(3);
    runtime::runInProcess(3, [&](runtime::World& world) {
        const int r = world.rank();
        // Rank 2 has no pulse; rank 1 the largest send, rank 0 the largest receive.
        const plan::ParticleHaloPlan plan = r == 2 ? planOf(0, 0, 0) : planOf(r + 1, 100 * (r + 1), 350 - 100 * r);
        got[static_cast<std::size_t>(r)] =
            agreeOnFusedSetup(world, plan, std::int64_t{1000} * (3 - r), "block", "test");
    });
    for (const FusedAgreement& a : got) {
        EXPECT_EQ(a.stagingAtoms, 3000);
        EXPECT_EQ(a.largestPulseWork, 350);  // rank 0's receive (rank 1 sends at most 201)
        EXPECT_EQ(a.maxPulses, 2);
        EXPECT_TRUE(a.blockSignalsAsked);
    }
}

TEST(FusedAgreement, SignalsPerBlockOnlyWhenEveryRankAsks) {
    std::vector<int> block(2, -1);
    runtime::runInProcess(2, [&](runtime::World& world) {
        const std::string asked = world.rank() == 0 ? "block" : "";
        block[static_cast<std::size_t>(world.rank())] =
            agreeOnFusedSetup(world, planOf(1, 10, 10), 0, asked, "test").blockSignalsAsked ? 1 : 0;
    });
    EXPECT_EQ(block, (std::vector<int>{0, 0}));
}

TEST(FusedAgreement, ABadSignalsValueOnOneRankStopsEveryRank) {
    std::vector<std::string> messages(3);
    std::atomic<int> returned{0};
    runtime::runInProcess(3, [&](runtime::World& world) {
        const int r = world.rank();
        try {
            agreeOnFusedSetup(world, planOf(1, 10, 10), 0, r == 1 ? "blocks" : "pulse", "nvshmem");
            ++returned;
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
            messages[static_cast<std::size_t>(r)] = e.what();
        }
    });
    EXPECT_EQ(returned.load(), 0) << "a rank went on alone";
    EXPECT_NE(messages[1].find("'blocks' on rank 1"), std::string::npos) << messages[1];
    EXPECT_NE(messages[0].find("on another rank (rank 0 has 'pulse')"), std::string::npos) << messages[0];
    for (const std::string& m : messages) {
        EXPECT_NE(m.find("HALOEX_EXCHANGE_SIGNALS"), std::string::npos) << m;
        EXPECT_NE(m.find("the nvshmem transport takes pulse"), std::string::npos) << m;
    }
}

}  // namespace
}  // namespace haloex::testing
