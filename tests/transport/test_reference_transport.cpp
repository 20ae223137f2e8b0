// The reference transport through its ParticleTransport interface:
// coordinates forward with the periodic shift, forces back and summed,
// clearing, byte-wise fields of every supported size, counters, and plan
// replacement. Every halo value is traced to its owner by global id.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "haloex/core/error.hpp"
#include "test_plan_scenario.hpp"

namespace haloex::testing {
namespace {

std::vector<PlanCase> transportCases() {
    std::vector<PlanCase> picked;
    for (const auto& c : planCases()) {
        for (const char* name : {"g2x2x2", "g4x1x1_3pulses", "align4_g4x1x1_3pulses", "aniso6x3x2p5_g6x3x1",
                                 "emptyRank_g2x2x2", "g1x1x1"}) {
            if (c.name == name) picked.push_back(c);
        }
    }
    return picked;
}

class ReferenceTransportTest : public ::testing::TestWithParam<PlanCase> {
protected:
    void SetUp() override { s_ = std::make_unique<Scenario>(buildScenario(GetParam())); }
    Scenario& s() { return *s_; }

    // Halo images of each atom over the whole job.
    std::vector<int> imageCounts() {
        std::vector<int> counts(s().positions.size(), 0);
        for (int r = 0; r < s().numRanks(); ++r) {
            for (int i = s().plan(r).numHome; i < s().plan(r).numLocal; ++i) {
                if (s().localIds[r][i] >= 0) ++counts[s().localIds[r][i]];
            }
        }
        return counts;
    }

private:
    std::unique_ptr<Scenario> s_;
};

Vec3f forceOf(int id) { return {1.0f + static_cast<float>(id % 5), -2.0f, 0.5f * static_cast<float>(id % 3)}; }

TEST_P(ReferenceTransportTest, CoordinatesForwardShiftedAndForcesReturnSummed) {
    const Vec3d L = s().dd.box().length;
    const int n = s().numRanks();
    std::vector<std::vector<Vec3f>> x(n), f(n), cleared(n);
    std::vector<transport::TransportCounters> counters(n);
    runtime::runInProcess(n, [&](runtime::World& world) {
        const int r = world.rank();
        const auto& plan = s().plan(r);
        transport::ReferenceTransport t(world);
        EXPECT_EQ(t.name(), "reference");
        EXPECT_EQ(t.memorySpace(), transport::MemorySpace::Host);
        t.setPlan(plan);
        EXPECT_EQ(t.plan().numLocal, plan.numLocal);
        for (int i = 0; i < plan.numHome; ++i) t.coordinates()[i] = Vec3f(s().homePositions[r][i]);
        t.forwardCoordinates(s().dd.box(), nullptr);
        // Every local atom, home or halo, pushes a force that depends on its id.
        for (int i = 0; i < plan.numLocal; ++i) {
            const int id = s().localIds[r][i];
            t.forces()[i] = id >= 0 ? forceOf(id) : Vec3f{};
        }
        t.reverseForces(nullptr);
        x[r].assign(t.coordinates(), t.coordinates() + plan.numLocal);
        f[r].assign(t.forces(), t.forces() + plan.numLocal);
        t.clearForces(nullptr);
        cleared[r].assign(t.forces(), t.forces() + plan.numLocal);
        counters[r] = t.counters();
    });
    const auto images = imageCounts();
    for (int r = 0; r < n; ++r) {
        SCOPED_TRACE(::testing::Message() << "rank " << r);
        const auto& plan = s().plan(r);
        EXPECT_EQ(counters[r].forwardCalls, 1);
        EXPECT_EQ(counters[r].reverseCalls, 1);
        for (int i = 0; i < plan.numLocal; ++i) {
            const int id = s().localIds[r][i];
            EXPECT_EQ(cleared[r][i], Vec3f{});
            if (id < 0) continue;
            const plan::Int3 k = imageShift(s().local(r)[i], s().positions[id], L);
            Vec3f expected(s().positions[id]);
            for (int d = 0; d < 3; ++d) {
                if (k[d] == 1) expected[d] += static_cast<float>(L[d]);
            }
            EXPECT_EQ(x[r][i], expected) << "local atom " << i << " (id " << id << ")";
        }
        for (int i = 0; i < plan.numHome; ++i) {
            const int id = s().homeIds[r][i];
            // Small integers and halves: float sums are exact.
            EXPECT_EQ(f[r][i], forceOf(id) * static_cast<float>(1 + images[id])) << "home atom " << i;
        }
    }
}

template <std::size_t N>
struct Blob {
    std::array<std::uint8_t, N> bytes;
};

template <std::size_t N>
Blob<N> blobOf(int id) {
    Blob<N> b{};
    for (std::size_t k = 0; k < N; ++k)
        b.bytes[k] = static_cast<std::uint8_t>((id * 31 + static_cast<int>(k) * 7) & 0xff);
    return b;
}

// forwardBytes with one element size: halo entries equal their owners'.
template <std::size_t N>
void checkForwardBytes(Scenario& s) {
    const int n = s.numRanks();
    std::vector<std::vector<Blob<N>>> data(n);
    runtime::runInProcess(n, [&](runtime::World& world) {
        const int r = world.rank();
        transport::ReferenceTransport t(world);
        t.setPlan(s.plan(r));
        std::vector<Blob<N>> mine(s.plan(r).numLocal, Blob<N>{});
        for (int i = 0; i < s.plan(r).numHome; ++i) mine[i] = blobOf<N>(s.homeIds[r][i]);
        t.forwardBytes(mine.data(), sizeof(Blob<N>), nullptr);
        data[r] = std::move(mine);
    });
    for (int r = 0; r < n; ++r) {
        for (int i = 0; i < s.plan(r).numLocal; ++i) {
            const int id = s.localIds[r][i];
            const Blob<N> expected = id >= 0 ? blobOf<N>(id) : Blob<N>{};
            EXPECT_EQ(data[r][i].bytes, expected.bytes) << N << "-byte field, rank " << r << " local atom " << i;
        }
    }
}

TEST_P(ReferenceTransportTest, ForwardBytesMovesFieldsOfOneToSixteenBytes) {
    static_assert(sizeof(Blob<12>) == 12);
    checkForwardBytes<1>(s());
    checkForwardBytes<4>(s());
    checkForwardBytes<8>(s());
    checkForwardBytes<12>(s());
    checkForwardBytes<16>(s());
}

TEST_P(ReferenceTransportTest, ForwardBytesRefusesElementsLargerThanSixteenBytes) {
    EXPECT_THROW(runtime::runInProcess(s().numRanks(),
                                       [&](runtime::World& world) {
                                           transport::ReferenceTransport t(world);
                                           t.setPlan(s().plan(world.rank()));
                                           std::vector<Blob<24>> big(s().plan(world.rank()).numLocal);
                                           t.forwardBytes(big.data(), sizeof(Blob<24>), nullptr);
                                       }),
                 Error);
}

INSTANTIATE_TEST_SUITE_P(Decompositions, ReferenceTransportTest, ::testing::ValuesIn(transportCases()), caseName);

TEST(ReferenceTransport, SetPlanAgainResizesForTheNewPartitioning) {
    // Repartitioning: the same job with more atoms gets a larger plan.
    PlanCase small{"small", {4.0, 4.0, 4.0}, {2, 2, 2}, 0.9, 1.0, {1, 1, 1}};
    small.density = 5.0;
    PlanCase large = small;
    large.density = 20.0;
    const Scenario a = buildScenario(small);
    const Scenario b = buildScenario(large);
    runtime::runInProcess(8, [&](runtime::World& world) {
        const int r = world.rank();
        transport::ReferenceTransport t(world);
        for (const Scenario* sc : {&a, &b}) {
            const auto& plan = sc->plan(r);
            t.setPlan(plan);
            ASSERT_EQ(t.plan().numLocal, plan.numLocal);
            for (int i = 0; i < plan.numLocal; ++i) t.coordinates()[i] = Vec3f{-1.0f, -1.0f, -1.0f};
            for (int i = 0; i < plan.numHome; ++i) t.coordinates()[i] = Vec3f(sc->homePositions[r][i]);
            t.forwardCoordinates(sc->dd.box(), nullptr);
            for (int i = plan.numHome; i < plan.numLocal; ++i) {
                if (sc->localIds[r][i] < 0) continue;
                for (int d = 0; d < 3; ++d) {
                    EXPECT_NEAR(t.coordinates()[i][d], sc->local(r)[i][d], 1e-5) << "local atom " << i;
                }
            }
        }
        EXPECT_EQ(t.counters().forwardCalls, 2);
    });
}

}  // namespace
}  // namespace haloex::testing
