// The reference transport through the halo API: coordinates forward with
// the periodic shift, forces back and summed, clearing (CoordinateForceHalo,
// on the reference's own pulse loops and, for a backend with nothing but
// exchangeBlocks, on the generic path), byte-wise fields of many sizes
// (ParticleHalo), counters, and plan replacement. Every halo value is traced
// to its owner by global id.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "haloex/core/error.hpp"
#include "haloex/halo/collective_buffer.hpp"
#include "haloex/halo/coordinate_force_halo.hpp"
#include "haloex/halo/particle_halo.hpp"
#include "haloex/detail/transport/host_exchange.hpp"
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

// A backend at its minimum (docs/api.md#writing-a-backend): a name, a
// memory space and exchangeBlocks, nothing else. The halo API's generic path
// must give it the reference's results.
class MinimalHostBackend final : public transport::BlockTransport {
public:
    explicit MinimalHostBackend(runtime::World& world) : world_(world) {}
    std::string name() const override { return "minimal"; }
    transport::MemorySpace memorySpace() const override { return transport::MemorySpace::Host; }
    void exchangeBlocks(std::span<const transport::BlockExchange> blocks, transport::StreamHandle) override {
        transport::exchangeBlocksOnHost(world_, blocks, messages_);
    }

private:
    runtime::World& world_;
    std::vector<runtime::PeerMessage> messages_;
};

enum class Path { ReferenceFastPath, GenericPath };

std::unique_ptr<transport::BlockTransport> makeBackend(Path path, runtime::World& world) {
    if (path == Path::GenericPath) return std::make_unique<MinimalHostBackend>(world);
    return std::make_unique<transport::ReferenceTransport>(world);
}

Vec3f forceOf(int id) { return {1.0f + static_cast<float>(id % 5), -2.0f, 0.5f * static_cast<float>(id % 3)}; }

void checkCoordinatesAndForces(Scenario& s, const std::vector<int>& images, Path path) {
    const Vec3d L = s.dd.box().length;
    const int n = s.numRanks();
    std::vector<std::vector<Vec3f>> x(n), f(n), cleared(n), haloCleared(n);
    std::vector<transport::TransportCounters> counters(n);
    std::vector<bool> fastPath(n);
    runtime::runInProcess(n, [&](runtime::World& world) {
        const int r = world.rank();
        const auto& plan = s.plan(r);
        auto t = makeBackend(path, world);
        CoordinateForceHalo halo(*t);
        fastPath[r] = halo.usesBackendFastPath();
        auto xs = allocateCollective<Vec3f>(world, *t, plan.numLocal);
        auto fs = allocateCollective<Vec3f>(world, *t, plan.numLocal);
        halo.setPlan(plan, xs, fs);
        EXPECT_EQ(halo.plan().numLocal, plan.numLocal);
        for (int i = 0; i < plan.numHome; ++i) xs.data()[i] = Vec3f(s.homePositions[r][i]);
        halo.gatherCoordinates(s.dd.box(), nullptr);
        // Every local atom, home or halo, pushes a force that depends on its id.
        for (int i = 0; i < plan.numLocal; ++i) {
            const int id = s.localIds[r][i];
            fs.data()[i] = id >= 0 ? forceOf(id) : Vec3f{};
        }
        halo.scatterAddForces(nullptr);
        x[r].assign(xs.data(), xs.data() + plan.numLocal);
        f[r].assign(fs.data(), fs.data() + plan.numLocal);
        halo.clearForces(nullptr);
        cleared[r].assign(fs.data(), fs.data() + plan.numLocal);
        // clearHaloForces: these exchanges clear every entry, as clearForces.
        for (int i = 0; i < plan.numLocal; ++i) fs.data()[i] = forceOf(i);
        halo.clearHaloForces(nullptr);
        haloCleared[r].assign(fs.data(), fs.data() + plan.numLocal);
        counters[r] = halo.counters();
    });
    for (int r = 0; r < n; ++r) {
        SCOPED_TRACE(::testing::Message() << "rank " << r);
        EXPECT_EQ(fastPath[r], path == Path::ReferenceFastPath);
        const auto& plan = s.plan(r);
        EXPECT_EQ(counters[r].forwardCalls, 1);
        EXPECT_EQ(counters[r].reverseCalls, 1);
        for (int i = 0; i < plan.numLocal; ++i) {
            const int id = s.localIds[r][i];
            EXPECT_EQ(cleared[r][i], Vec3f{});
            EXPECT_EQ(haloCleared[r][i], Vec3f{}) << "local atom " << i << " after clearHaloForces";
            if (id < 0) continue;
            const plan::Int3 k = imageShift(s.local(r)[i], s.positions[id], L);
            Vec3f expected(s.positions[id]);
            for (int d = 0; d < 3; ++d) {
                if (k[d] == 1) expected[d] += static_cast<float>(L[d]);
            }
            EXPECT_EQ(x[r][i], expected) << "local atom " << i << " (id " << id << ")";
        }
        for (int i = 0; i < plan.numHome; ++i) {
            const int id = s.homeIds[r][i];
            // Small integers and halves: float sums are exact.
            EXPECT_EQ(f[r][i], forceOf(id) * static_cast<float>(1 + images[id])) << "home atom " << i;
        }
    }
}

TEST_P(ReferenceTransportTest, CoordinatesForwardShiftedAndForcesReturnSummed) {
    checkCoordinatesAndForces(s(), imageCounts(), Path::ReferenceFastPath);
}

TEST_P(ReferenceTransportTest, AMinimalBackendGetsTheSameThroughTheGenericPath) {
    checkCoordinatesAndForces(s(), imageCounts(), Path::GenericPath);
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

// A field of N-byte elements through ParticleHalo::gather over the
// reference transport: halo entries equal their owners'.
template <std::size_t N>
void checkFieldGather(Scenario& s) {
    const int n = s.numRanks();
    std::vector<std::vector<Blob<N>>> data(n);
    runtime::runInProcess(n, [&](runtime::World& world) {
        const int r = world.rank();
        transport::ReferenceTransport t(world);
        ParticleHalo halo(t, s.plan(r));
        std::vector<Blob<N>> mine(s.plan(r).numLocal, Blob<N>{});
        for (int i = 0; i < s.plan(r).numHome; ++i) mine[i] = blobOf<N>(s.homeIds[r][i]);
        halo.gather(mine.data());
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

TEST_P(ReferenceTransportTest, FieldsOfAnyElementSizeGatherToTheirHaloCopies) {
    static_assert(sizeof(Blob<12>) == 12);
    checkFieldGather<1>(s());
    checkFieldGather<4>(s());
    checkFieldGather<8>(s());
    checkFieldGather<12>(s());
    checkFieldGather<16>(s());
    checkFieldGather<24>(s());
}

INSTANTIATE_TEST_SUITE_P(Decompositions, ReferenceTransportTest, ::testing::ValuesIn(transportCases()), caseName);

TEST(ReferenceTransport, SetPlanAgainTakesTheNewPartitioningAndGrownArrays) {
    // Repartitioning: the same job with more atoms gets a larger plan; the
    // arrays grow and the halo is bound to them again.
    PlanCase small{"small", {4.0, 4.0, 4.0}, {2, 2, 2}, 0.9, 1.0, {1, 1, 1}};
    small.density = 5.0;
    PlanCase large = small;
    large.density = 20.0;
    const Scenario a = buildScenario(small);
    const Scenario b = buildScenario(large);
    runtime::runInProcess(8, [&](runtime::World& world) {
        const int r = world.rank();
        transport::ReferenceTransport t(world);
        CoordinateForceHalo halo(t);
        auto x = allocateCollective<Vec3f>(world, t, 0);
        auto f = allocateCollective<Vec3f>(world, t, 0);
        for (const Scenario* sc : {&a, &b}) {
            const auto& plan = sc->plan(r);
            x.resize(plan.numLocal);
            f.resize(plan.numLocal);
            halo.setPlan(plan, x, f);
            ASSERT_EQ(halo.plan().numLocal, plan.numLocal);
            for (int i = 0; i < plan.numLocal; ++i) x.data()[i] = Vec3f{-1.0f, -1.0f, -1.0f};
            for (int i = 0; i < plan.numHome; ++i) x.data()[i] = Vec3f(sc->homePositions[r][i]);
            halo.gatherCoordinates(sc->dd.box(), nullptr);
            for (int i = plan.numHome; i < plan.numLocal; ++i) {
                if (sc->localIds[r][i] < 0) continue;
                for (int d = 0; d < 3; ++d) {
                    EXPECT_NEAR(x.data()[i][d], sc->local(r)[i][d], 1e-5) << "local atom " << i;
                }
            }
        }
        EXPECT_EQ(halo.counters().forwardCalls, 2);
    });
}

// A small 2x1x1 scenario, and each of its two thread ranks with the
// reference transport, an unbound halo on it and the rank's plan.
Scenario twoRankScenario() {
    PlanCase c{"c", {4.0, 4.0, 4.0}, {2, 1, 1}, 0.9, 1.0, {1, 1, 1}};
    c.density = 10.0;
    return buildScenario(c);
}
template <class Body>
void onTwoReferenceRanks(const Scenario& sc, Body body) {
    runtime::runInProcess(2, [&](runtime::World& world) {
        transport::ReferenceTransport t(world);
        CoordinateForceHalo halo(t);
        body(world, t, halo, sc.plan(world.rank()));
    });
}

TEST(ReferenceTransport, RefusesArraysSmallerThanThePlan) {
    const Scenario sc = twoRankScenario();
    onTwoReferenceRanks(sc, [&](runtime::World& world, transport::ReferenceTransport& t, CoordinateForceHalo& halo,
                                const plan::ParticleHaloPlan& plan) {
        auto x = allocateCollective<Vec3f>(world, t, plan.numLocal);
        auto f = allocateCollective<Vec3f>(world, t, 1);
        try {
            halo.setPlan(plan, x, f);
            ADD_FAILURE() << "forces of 1 element accepted for " << plan.numLocal << " local atoms";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("resize them to plan.numLocal"), std::string::npos) << e.what();
        }
        EXPECT_THROW(halo.gatherCoordinates(sc.dd.box(), nullptr), Error) << "no plan bound yet";
    });
}

// copyReceivedCoordinates and addHaloForcesFromRecords: refused before a
// plan and for records that cannot hold x, y, z or have no map (with what to
// do); a transport without fused kernels (the reference) declines both, and
// its exchange then leaves the caller's records alone.
TEST(ReferenceTransport, DeclinesHaloRecordsAndRefusesBadOnes) {
    const Scenario sc = twoRankScenario();
    onTwoReferenceRanks(sc, [&](runtime::World& world, transport::ReferenceTransport& t, CoordinateForceHalo& halo,
                                const plan::ParticleHaloPlan& plan) {
        std::vector<float> records(4 * static_cast<std::size_t>(plan.numLocal), -7.0f);
        std::vector<int> recordOf(static_cast<std::size_t>(plan.numLocal));
        for (int i = 0; i < plan.numLocal; ++i) recordOf[static_cast<std::size_t>(i)] = i;
        const transport::HaloRecords good{records.data(), 4, recordOf.data()};
        EXPECT_THROW(halo.copyReceivedCoordinates(good), Error) << "no plan yet";
        EXPECT_THROW(halo.addHaloForcesFromRecords(good), Error) << "no plan yet";
        auto x = allocateCollective<Vec3f>(world, t, plan.numLocal);
        auto f = allocateCollective<Vec3f>(world, t, plan.numLocal);
        halo.setPlan(plan, x, f);
        try {
            halo.copyReceivedCoordinates({records.data(), 2, recordOf.data()});
            ADD_FAILURE() << "a stride of 2 floats accepted";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("at least 3 floats per record"), std::string::npos) << e.what();
        }
        EXPECT_THROW(halo.addHaloForcesFromRecords({records.data(), 4, nullptr}), Error) << "no record map";
        EXPECT_FALSE(halo.copyReceivedCoordinates(good));
        EXPECT_FALSE(halo.addHaloForcesFromRecords(good));
        EXPECT_FALSE(halo.copyReceivedCoordinates({})) << "stopping what was never set";
        for (int i = 0; i < plan.numHome; ++i) x.data()[i] = Vec3f(sc.homePositions[world.rank()][i]);
        halo.gatherCoordinates(sc.dd.box(), nullptr);
        halo.scatterAddForces(nullptr);
        EXPECT_EQ(std::count(records.begin(), records.end(), -7.0f), static_cast<long>(records.size()))
            << "the reference's exchange wrote into records it declined";
    });
}

}  // namespace
}  // namespace haloex::testing
