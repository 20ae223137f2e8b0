// The staged transport in host memory over MpiWorld reproduces the
// in-process reference bitwise; plans built over MPI equal the in-process
// ones; mismatched rank counts and misuse fail with clear errors.
#include <gtest/gtest.h>

#include "haloex/core/error.hpp"
#include "haloex/runtime/plan_exchange.hpp"
#include "haloex/transport/registry.hpp"
#include "mpi_test_main.hpp"
#include "transport_check.hpp"

using namespace haloex;

namespace {

runtime::World& world() { return testsupport::mpiTestWorld(); }

std::vector<testsupport::Scenario> scenarios() {
    auto s = testsupport::scenariosForRanks(world().size());
    if (s.empty()) ADD_FAILURE() << "no decomposition scenario for " << world().size() << " ranks; run with 2, 4 or 8";
    return s;
}

}  // namespace

TEST(MpiStagedHost, PlanOverMpiEqualsInProcessPlan) {
    auto& w = world();
    for (const auto& s : scenarios()) {
        SCOPED_TRACE("grid " + s.grid);
        const plan::Decomposition d = testsupport::makeDecomposition(s);
        const auto home = testsupport::randomHomePositions(d, s);
        const plan::InProcessPlans expected = plan::buildParticlePlansInProcess(d, home);
        const runtime::RankPlan mine = runtime::buildParticlePlan(d, home[static_cast<std::size_t>(w.rank())], w);
        EXPECT_EQ(testsupport::comparePlans(mine.plan, expected.plans[static_cast<std::size_t>(w.rank())]), "");
        EXPECT_GT(mine.plan.numHalo(), 0) << "the scenario must exchange atoms to test anything";
    }
}

TEST(MpiStagedHost, MatchesReferenceBitwise) {
    auto& w = world();
    for (const auto& s : scenarios()) {
        SCOPED_TRACE("grid " + s.grid);
        const plan::Decomposition d = testsupport::makeDecomposition(s);
        const testsupport::Expected e = testsupport::referenceResults(d, s);
        const auto r = static_cast<std::size_t>(w.rank());

        transport::TransportOptions options;
        options.memorySpace = transport::MemorySpace::Host;
        auto t = transport::makeTransport(transport::Backend::Staged, w, options);
        EXPECT_EQ(t->name(), "staged");
        EXPECT_EQ(t->memorySpace(), transport::MemorySpace::Host);
        EXPECT_FALSE(t->describe().empty()) << "the run summary names what the transport does";
        const int steps = 2;
        const auto got =
            testsupport::runTransport(*t, w, e.plans[r], e.inputs[r], d.box(), testsupport::hostMemory(), steps);
        EXPECT_EQ(testsupport::compareResults(got, e.outputs[r], w.rank()), "");

        const auto pulses = static_cast<std::int64_t>(e.plans[r].pulses.size());
        EXPECT_EQ(got.counters.forwardCalls, steps);
        EXPECT_EQ(got.counters.reverseCalls, steps);
        EXPECT_EQ(got.counters.hostSyncs, std::int64_t{2} * steps * pulses) << "one peer wait per pulse and direction";
    }
}

TEST(MpiStagedHost, ReferenceHaloAgreesWithPlanGeometry) {
    // The oracle itself: forwarded coordinates are the plan's shifted
    // positions (computed in double there), to float precision.
    auto& w = world();
    for (const auto& s : scenarios()) {
        SCOPED_TRACE("grid " + s.grid);
        const plan::Decomposition d = testsupport::makeDecomposition(s);
        const testsupport::Expected e = testsupport::referenceResults(d, s);
        const auto r = static_cast<std::size_t>(w.rank());
        const auto& plan = e.plans[r];
        for (int i = plan.numHome; i < plan.numLocal; ++i) {
            const auto k = static_cast<std::size_t>(i);
            if (plan.receivedInPulse[k] < 0) continue;  // padding
            for (int c = 0; c < 3; ++c) {
                ASSERT_NEAR(e.outputs[r].x[k][c], e.localPositions[r][k][c], 1e-5) << "atom " << i;
            }
        }
    }
}

TEST(MpiErrors, RankCountMustMatchGrid) {
    auto& w = world();
    testsupport::Scenario s{w.size() == 2 ? "4x1x1" : "2x1x1"};
    const plan::Decomposition d = testsupport::makeDecomposition(s);
    const std::vector<Vec3d> none;
    try {
        runtime::buildParticlePlan(d, none, w);
        ADD_FAILURE() << "a " << s.grid << " grid over " << w.size() << " ranks must be refused";
    } catch (const Error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find(std::to_string(w.size())), std::string::npos) << what;
    }
}

TEST(MpiErrors, FactoryRefusesReferenceOverMpiAndUnknownNames) {
    auto& w = world();
    transport::TransportOptions host;
    host.memorySpace = transport::MemorySpace::Host;
    try {
        transport::makeTransport(transport::Backend::Reference, w, host);
        ADD_FAILURE() << "reference over MPI must be refused";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
        EXPECT_NE(std::string(e.what()).find("staged"), std::string::npos) << e.what();
    }
    try {
        transport::parseBackend("carrier-pigeon");
        ADD_FAILURE() << "an unknown name must be refused";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("reference, staged, ipc, nccl, nvshmem"), std::string::npos) << e.what();
    }
}
