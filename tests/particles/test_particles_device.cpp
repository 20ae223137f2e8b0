// The search step's device pieces against their host oracles, ranks as
// threads of this process over the staged device transport (exchangeBlock
// through host staging; the other transports run them in haloex-md's
// multi-rank checks):
//   - DevicePlanBuilder reproduces plan::ParticlePlanBuilder on every
//     decomposition of the plan property suite, with corner and edge pruning
//     (the default) and without (the unpruned_ cases): the same send set per
//     pulse in the same order, counts, offsets, dependency split, zone masks,
//     the halo positions as exact periodic images, carried fields forwarded;
//   - Migrator sends every particle, with all its fields, to the rank the
//     host's rule assigns (wrap, then plan::Decomposition::ownerRank), keeps
//     the stayers' order, and refuses non-finite positions and moves of more
//     than one cell with the particle's id;
//   - ParticleStore::reorder moves every field alike, bound positions too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <span>

#include "test_plan_scenario.hpp"
#include "gpu_test_support.hpp"
#include "test_refusal.hpp"
#include "haloex/core/error.hpp"
#include "haloex/particles/device_plan_builder.hpp"
#include "haloex/particles/migration.hpp"
#include "haloex/particles/particle_store.hpp"
#include "haloex/transport/registry.hpp"

using namespace haloex;
namespace ht = haloex::testing;
using ht::PlanCase;

namespace {

// The device's rule for a float position: wrap in double, round to float,
// a value that rounds up to L becomes 0 (particles::Migrator).
Vec3f wrappedAsOnDevice(Vec3f x, const Vec3d& L) {
    for (int d = 0; d < 3; ++d) {
        float w = static_cast<float>(plan::wrapIntoBox(Vec3d{x[d], 0.0, 0.0}, plan::Box{{L[d], 1.0, 1.0}}).x);
        if (static_cast<double>(w) >= L[d]) w = 0.0f;
        x[d] = w;
    }
    return x;
}

std::unique_ptr<transport::BlockTransport> stagedDevice(runtime::World& world) {
    transport::TransportOptions options;
    options.memorySpace = transport::MemorySpace::Device;
    options.allowSharedGpus = true;
    return transport::makeTransport(transport::Backend::Staged, world, options);
}

template <class T>
std::vector<T> downloadPointer(const T* d, std::size_t count) {
    std::vector<T> host(count);
    HALOEX_CUDA_CHECK(cudaDeviceSynchronize());
    if (count) HALOEX_CUDA_CHECK(cudaMemcpy(host.data(), d, count * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
}

class DevicePlanBuilderProperty : public ::testing::TestWithParam<PlanCase> {};

TEST_P(DevicePlanBuilderProperty, ReproducesTheHostPlanner) {
    HALOEX_REQUIRE_GPU();
    const PlanCase& c = GetParam();
    const plan::Decomposition dd(ht::specOf(c));
    // The device holds float positions: the oracle plans the same values.
    std::vector<Vec3d> positions = ht::randomAtoms(c, dd);
    plan::wrapPositions(positions, dd.box());
    std::vector<Vec3f> asFloat(positions.size());
    for (std::size_t i = 0; i < positions.size(); ++i) {
        asFloat[i] = wrappedAsOnDevice(static_cast<Vec3f>(positions[i]), c.box);
        positions[i] = static_cast<Vec3d>(asFloat[i]);
    }
    const std::vector<std::vector<int>> homeIds = plan::partitionAtoms(dd, positions);
    const int numRanks = dd.grid().size();
    std::vector<std::vector<Vec3d>> homePositions(numRanks);
    for (int r = 0; r < numRanks; ++r) {
        for (int id : homeIds[r]) homePositions[r].push_back(positions[id]);
    }
    const plan::InProcessPlans host = plan::buildParticlePlansInProcess(dd, homePositions, c.alignment);

    runtime::runInProcess(numRanks, [&](runtime::World& world) {
        const int r = world.rank();
        const plan::ParticleHaloPlan& expected = host.plans[r];
        std::vector<Vec3f> homeX;
        std::vector<std::int64_t> ids;
        for (int id : homeIds[r]) {
            homeX.push_back(asFloat[id]);
            ids.push_back(id);
        }
        const auto dX = ht::upload(homeX);
        const auto dIds = ht::upload(ids);
        auto transport = stagedDevice(world);
        particles::DevicePlanBuilder builder;
        const particles::DeviceField carried[] = {{dIds.data(), sizeof(std::int64_t)}};
        cuda::Stream stream;
        const plan::ParticleHaloPlan& got = builder.build(dd, dX.data(), static_cast<int>(homeX.size()), carried,
                                                          c.alignment, world, *transport, stream.get());
        // Without pulses the builder does not wait for its copies: the reads below do.
        HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
        SCOPED_TRACE("rank " + std::to_string(r));
        ASSERT_TRUE(got.onDevice());
        EXPECT_EQ(got.numHome, expected.numHome);
        ASSERT_EQ(got.numLocal, expected.numLocal);
        ASSERT_EQ(got.pulses.size(), expected.pulses.size());
        for (std::size_t p = 0; p < got.pulses.size(); ++p) {
            const plan::Pulse& g = got.pulses[p];
            const plan::Pulse& e = expected.pulses[p];
            SCOPED_TRACE("pulse " + std::to_string(p));
            ASSERT_TRUE(g.indexMapOnDevice());
            EXPECT_EQ(downloadPointer(g.deviceSendIndices, static_cast<std::size_t>(g.sendCount())), e.sendIndices);
            EXPECT_EQ(g.numIndependent, e.numIndependent);
            EXPECT_EQ(g.dim, e.dim);
            EXPECT_EQ(g.stage, e.stage);
            EXPECT_EQ(g.sendRank, e.sendRank);
            EXPECT_EQ(g.recvRank, e.recvRank);
            EXPECT_EQ(g.shiftSign, e.shiftSign);
            EXPECT_EQ(g.recvCount, e.recvCount);
            EXPECT_EQ(g.recvOffset, e.recvOffset);
            EXPECT_EQ(g.recvCapacity, e.recvCapacity);
            EXPECT_EQ(g.remoteRecvOffset, e.remoteRecvOffset);
            EXPECT_EQ(g.waitsForward, e.waitsForward);
            EXPECT_EQ(g.waitsReverse, e.waitsReverse);
        }
        const auto n = static_cast<std::size_t>(got.numLocal);
        EXPECT_EQ(downloadPointer(builder.localZoneMasks(), n), expected.zoneMask);
        // Halo positions: the unshifted float plus the collected shifts is
        // the host's double position exactly; padding is NaN on both sides.
        const auto x = downloadPointer(builder.localPositions(), n);
        const auto image = downloadPointer(builder.localImages(), n);
        const auto localIds = downloadPointer(static_cast<const std::int64_t*>(builder.localField(0)), n);
        const std::vector<Vec3d>& local = host.localPositions[r];
        for (std::size_t i = 0; i < n; ++i) {
            if (expected.zoneMask[i] & plan::kPaddingMask) {
                EXPECT_TRUE(std::isnan(x[i].x)) << "padding atom " << i;
                EXPECT_EQ(localIds[i], 0) << "padding atom " << i;
                continue;
            }
            for (int d = 0; d < 3; ++d) {
                const double shifted = static_cast<double>(x[i][d]) + (((image[i] >> d) & 1u) ? c.box[d] : 0.0);
                ASSERT_EQ(shifted, local[i][d]) << "local atom " << i << " dimension " << d;
            }
            // The carried id names the owner's atom: its position is the
            // unshifted position.
            ASSERT_GE(localIds[i], 0);
            EXPECT_EQ(asFloat[static_cast<std::size_t>(localIds[i])], x[i]) << "local atom " << i;
        }
    });
}

INSTANTIATE_TEST_SUITE_P(Decompositions, DevicePlanBuilderProperty, ::testing::ValuesIn(ht::planCases()), ht::caseName);

// Particles of every rank moved by up to `reach` cell widths (some by whole
// box lengths too), with a velocity derived from the id to check that fields
// travel with their particle.
struct MovedParticles {
    std::vector<std::vector<Vec3f>> x;
    std::vector<std::vector<Vec3f>> v;
    std::vector<std::vector<std::int64_t>> ids;
};

Vec3f velocityOf(std::int64_t id) { return Vec3f{0.5f * id, -0.25f * id, 1.0f + id}; }

MovedParticles moveParticles(const plan::Decomposition& dd, int atoms, double reach, std::uint64_t seed) {
    std::mt19937_64 engine(seed);
    const Vec3d L = dd.box().length;
    const int n = dd.grid().size();
    MovedParticles m;
    m.x.resize(n);
    m.v.resize(n);
    m.ids.resize(n);
    for (int id = 0; id < atoms; ++id) {
        const Vec3d start{L.x * ht::uniform01(engine), L.y * ht::uniform01(engine), L.z * ht::uniform01(engine)};
        const int owner = dd.ownerRank(start);
        Vec3d moved = start;
        for (int d = 0; d < 3; ++d) moved[d] += (2.0 * ht::uniform01(engine) - 1.0) * reach * dd.cellWidth(d);
        if (id % 17 == 0) moved.x += L.x;
        if (id % 23 == 0) moved.z -= L.z;
        m.x[owner].push_back(static_cast<Vec3f>(moved));
        m.v[owner].push_back(velocityOf(id));
        m.ids[owner].push_back(id);
    }
    return m;
}

struct MigrationResult {
    std::vector<Vec3f> x, v;
    std::vector<std::int64_t> ids;
    bool positionsInCallersArray = false;  // bound positions: still in the caller's array after
};

// Where the store keeps its positions in migrateOnDevice: its own arrays, or
// bound to an array of the caller's (ParticleStore::bindPositions) with room
// for twice the particles, or for exactly those held (then a rank that gains
// particles moves them back into the store's own array).
enum class PositionsIn { Store, BoundArray, BoundArrayTooSmall };

// Runs the device migration of `m` on every rank; per rank what it holds after.
std::vector<MigrationResult> migrateOnDevice(const plan::Decomposition& dd, const MovedParticles& m,
                                             PositionsIn where = PositionsIn::Store) {
    const int n = dd.grid().size();
    std::vector<MigrationResult> out(n);
    runtime::runInProcess(n, [&](runtime::World& world) {
        const int r = world.rank();
        auto transport = stagedDevice(world);
        particles::ParticleStore store({sizeof(Vec3f), sizeof(std::int64_t)});
        const int held = static_cast<int>(m.x[r].size());
        store.upload(held, {m.x[r].data(), m.v[r].data(), m.ids[r].data()});
        const int capacity = where == PositionsIn::BoundArray ? 2 * held + 8 : held;
        cuda::DeviceBuffer<Vec3f> array(static_cast<std::size_t>(std::max(capacity, 1)));
        if (where != PositionsIn::Store) {
            if (held > 0)
                cuda::copyToDeviceNow(array.data(), m.x[r].data(), static_cast<std::size_t>(held) * sizeof(Vec3f));
            store.bindPositions(array.data(), capacity);
            EXPECT_EQ(store.positions(), array.data());
        }
        particles::Migrator migrator(2);
        cuda::Stream stream;
        const particles::MigrationStats stats = migrator.migrate(store, dd, world, *transport, stream.get());
        EXPECT_EQ(stats.particles, store.size());
        if (where == PositionsIn::BoundArray) {  // room for all: they stay in the caller's array
            EXPECT_TRUE(store.positionsIn(array.data())) << "rank " << r;
            EXPECT_EQ(store.positions(), array.data()) << "rank " << r;
        } else if (where == PositionsIn::BoundArrayTooSmall) {
            // A rank that outgrew the array after any one dimension's cut
            // (and maybe shrank again in the next) holds them in its own.
            if (store.size() > capacity) {
                EXPECT_FALSE(store.positionsIn(array.data())) << "rank " << r;
            }
            EXPECT_EQ(store.positionsIn(array.data()), store.positions() == array.data()) << "rank " << r;
        }
        out[r].positionsInCallersArray = store.positionsIn(array.data());
        MigrationResult& mine = out[r];
        mine.x.resize(store.size());
        mine.v.resize(store.size());
        mine.ids.resize(store.size());
        store.download({mine.x.data(), mine.v.data(), mine.ids.data()});
    });
    return out;
}

void expectMigrationMatchesHostRule(const plan::Decomposition& dd, const MovedParticles& m,
                                    PositionsIn where = PositionsIn::Store) {
    const auto result = migrateOnDevice(dd, m, where);
    if (where == PositionsIn::BoundArrayTooSmall && dd.grid().size() > 1) {
        // The case is not vacuous: some rank outgrew its array.
        EXPECT_TRUE(std::any_of(result.begin(), result.end(), [](const MigrationResult& r) {
            return !r.positionsInCallersArray;
        })) << "no rank fell back to the store's own array";
    }
    const int n = dd.grid().size();
    const Vec3d L = dd.box().length;
    std::map<std::int64_t, std::pair<int, Vec3f>> expected;  // id -> (rank, position)
    std::vector<std::vector<std::int64_t>> staying(n);
    for (int r = 0; r < n; ++r) {
        for (std::size_t i = 0; i < m.x[r].size(); ++i) {
            const Vec3f w = wrappedAsOnDevice(m.x[r][i], L);
            const int owner = dd.ownerRank(static_cast<Vec3d>(w));
            expected[m.ids[r][i]] = {owner, w};
            if (owner == r) staying[r].push_back(m.ids[r][i]);
        }
    }
    std::size_t total = 0;
    for (int r = 0; r < n; ++r) {
        SCOPED_TRACE("rank " + std::to_string(r));
        const MigrationResult& got = result[r];
        total += got.ids.size();
        for (std::size_t i = 0; i < got.ids.size(); ++i) {
            const auto it = expected.find(got.ids[i]);
            ASSERT_NE(it, expected.end()) << "unknown id " << got.ids[i];
            EXPECT_EQ(it->second.first, r) << "particle " << got.ids[i] << " is on the wrong rank";
            EXPECT_EQ(it->second.second, got.x[i]) << "particle " << got.ids[i];
            EXPECT_EQ(velocityOf(got.ids[i]), got.v[i]) << "particle " << got.ids[i] << ": fields separated";
        }
        // The particles that stayed come first, in their old order.
        ASSERT_GE(got.ids.size(), staying[r].size());
        EXPECT_TRUE(std::equal(staying[r].begin(), staying[r].end(), got.ids.begin()));
    }
    EXPECT_EQ(total, expected.size()) << "particles lost or duplicated";
}

plan::Decomposition decompositionOf(Vec3d box, plan::Int3 grid) {
    plan::DecompositionSpec spec;
    spec.box.length = box;
    spec.grid = plan::RankGrid(grid);
    spec.rc = 0.9;
    spec.rlist = 1.0;
    return plan::Decomposition(spec);
}

TEST(DeviceMigration, MatchesTheHostRuleOnGridsOfOneToThreeDimensions) {
    HALOEX_REQUIRE_GPU();
    struct GridCase {
        Vec3d box;
        plan::Int3 grid;
    };
    for (const GridCase& g : {GridCase{{3.0, 3.0, 3.0}, {1, 1, 1}}, GridCase{{4.0, 3.0, 3.0}, {2, 1, 1}},
                              GridCase{{6.0, 3.0, 3.0}, {3, 1, 1}}, GridCase{{4.0, 4.0, 3.0}, {2, 2, 1}},
                              GridCase{{4.0, 4.0, 4.0}, {2, 2, 2}}, GridCase{{6.0, 4.5, 4.0}, {4, 3, 2}}}) {
        SCOPED_TRACE("grid " + plan::RankGrid(g.grid).toString());
        const plan::Decomposition dd = decompositionOf(g.box, g.grid);
        expectMigrationMatchesHostRule(dd, moveParticles(dd, 3000, 0.45, 7));
    }
}

// Positions bound to the caller's array (the MD backend's coordinate array)
// migrate as the store's own: wrapped in place, the next set written back
// there -- or, on a rank that outgrows the array, into the store's own.
TEST(DeviceMigration, BoundPositionsMigrateInTheCallersArray) {
    HALOEX_REQUIRE_GPU();
    for (const PositionsIn where : {PositionsIn::BoundArray, PositionsIn::BoundArrayTooSmall}) {
        SCOPED_TRACE(where == PositionsIn::BoundArray ? "array with room" : "array too small for a gain");
        for (const plan::Int3 grid :
             {plan::Int3{1, 1, 1}, plan::Int3{2, 1, 1}, plan::Int3{2, 2, 1}, plan::Int3{2, 2, 2}}) {
            SCOPED_TRACE("grid " + plan::RankGrid(grid).toString());
            const plan::Decomposition dd = decompositionOf({4.0, 4.0, 4.0}, grid);
            expectMigrationMatchesHostRule(dd, moveParticles(dd, 2000, 0.45, 11), where);
        }
    }
}

TEST(DeviceMigration, BindingRefusesANullOrTooSmallArray) {
    HALOEX_REQUIRE_GPU();
    particles::ParticleStore store({sizeof(std::int64_t)});
    const std::vector<Vec3f> x(10, Vec3f{1.0f, 2.0f, 3.0f});
    const std::vector<std::int64_t> ids(10, 7);
    store.upload(10, {x.data(), ids.data()});
    cuda::DeviceBuffer<Vec3f> array(9);
    const std::string tooSmall = ht::errorMessageOf([&] { store.bindPositions(array.data(), 9); });
    EXPECT_NE(tooSmall.find("at least the 10 particles held"), std::string::npos) << tooSmall;
    const std::string null = ht::errorMessageOf([&] { store.bindPositions(nullptr, 20); });
    EXPECT_NE(null.find("a null array"), std::string::npos) << null;
    EXPECT_FALSE(store.positionsIn(array.data()));
    // Growing past a bound array takes the positions back, intact.
    cuda::DeviceBuffer<Vec3f> room(10);
    cuda::copyToDeviceNow(room.data(), x.data(), x.size() * sizeof(Vec3f));
    store.bindPositions(room.data(), 10);
    store.resize(12);
    EXPECT_FALSE(store.positionsIn(room.data()));
    const std::vector<Vec3f> kept = downloadPointer(store.positions(), 10);
    EXPECT_EQ(kept, x);
}

// reorder moves every field alike (particle order[i] to place i), in the
// store's own arrays and in a bound array, and refuses a null order.
TEST(ParticleStoreReorder, MovesEveryFieldAlikeOwnAndBoundPositions) {
    HALOEX_REQUIRE_GPU();
    constexpr int n = 1000;
    std::vector<Vec3f> x(n), v(n);
    std::vector<std::int64_t> ids(n);
    for (int i = 0; i < n; ++i) {
        x[i] = Vec3f{static_cast<float>(i), 0.5f * static_cast<float>(i), -1.0f};
        v[i] = Vec3f{-static_cast<float>(i), 2.0f, 3.0f};
        ids[i] = 1000 + 7LL * i;
    }
    std::vector<int> order(n);
    for (int i = 0; i < n; ++i) order[i] = (i * 389 + 17) % n;  // 389 is prime to 1000: a permutation
    const cuda::DeviceBuffer<int> dOrder = ht::upload(order);
    for (const bool bound : {false, true}) {
        SCOPED_TRACE(bound ? "positions bound to the caller's array" : "positions in the store");
        particles::ParticleStore store({sizeof(Vec3f), sizeof(std::int64_t)});
        store.upload(n, {x.data(), v.data(), ids.data()});
        cuda::DeviceBuffer<Vec3f> array(n + 10);
        if (bound) {
            cuda::copyToDeviceNow(array.data(), x.data(), x.size() * sizeof(Vec3f));
            store.bindPositions(array.data(), n + 10);
        }
        cuda::Stream stream;
        store.reorder(dOrder.data(), stream);
        HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
        EXPECT_EQ(store.size(), n);
        EXPECT_EQ(store.positionsIn(array.data()), bound);
        const std::vector<Vec3f> gotX = downloadPointer(store.positions(), n);
        const std::vector<Vec3f> gotV = downloadPointer(store.fieldAs<Vec3f>(1), n);
        const std::vector<std::int64_t> gotIds = downloadPointer(store.fieldAs<std::int64_t>(2), n);
        for (int i = 0; i < n; ++i) {
            const auto k = static_cast<std::size_t>(order[i]);
            ASSERT_EQ(gotX[i], x[k]) << "place " << i;
            ASSERT_EQ(gotV[i], v[k]) << "place " << i;
            ASSERT_EQ(gotIds[i], ids[k]) << "place " << i;
        }
        const std::string null = ht::errorMessageOf([&] { store.reorder(nullptr, stream); });
        EXPECT_NE(null.find("a null order"), std::string::npos) << null;
    }
}

TEST(DeviceMigration, EmptyRanksAndNoMovesAreFine) {
    HALOEX_REQUIRE_GPU();
    const plan::Decomposition dd = decompositionOf({6.0, 3.0, 3.0}, {3, 1, 1});
    MovedParticles m = moveParticles(dd, 600, 0.0, 3);
    m.x[1].clear();
    m.v[1].clear();
    m.ids[1].clear();
    expectMigrationMatchesHostRule(dd, m);
}

TEST(DeviceMigration, RefusesAParticleThatCrossedTwoCells) {
    HALOEX_REQUIRE_GPU();
    const plan::Decomposition dd = decompositionOf({8.0, 3.0, 3.0}, {4, 1, 1});
    MovedParticles m = moveParticles(dd, 400, 0.2, 5);
    m.x[0][0].x += static_cast<float>(2.0 * dd.cellWidth(0));  // two cells up
    const std::int64_t id = m.ids[0][0];
    try {
        migrateOnDevice(dd, m);
        FAIL() << "a move across two cells was accepted";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
        EXPECT_NE(std::string(e.what()).find("particle " + std::to_string(id) + " (global id)"), std::string::npos)
            << e.what();
        EXPECT_NE(std::string(e.what()).find("more than one cell"), std::string::npos) << e.what();
    }
}

// Checked with the first cut's counts (2x1x1), or by completeMigration where
// no dimension is cut (1x1x1: the wrap alone, nothing read in between).
TEST(DeviceMigration, RefusesANonFinitePosition) {
    HALOEX_REQUIRE_GPU();
    for (const plan::Int3 grid : {plan::Int3{2, 1, 1}, plan::Int3{1, 1, 1}}) {
        SCOPED_TRACE("grid " + plan::RankGrid(grid).toString());
        const plan::Decomposition dd = decompositionOf({4.0, 3.0, 3.0}, grid);
        MovedParticles m = moveParticles(dd, 200, 0.1, 9);
        const int r = dd.grid().size() - 1;
        m.x[r][2].y = std::numeric_limits<float>::quiet_NaN();
        const std::int64_t id = m.ids[r][2];
        try {
            migrateOnDevice(dd, m);
            ADD_FAILURE() << "a NaN position was accepted";
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
            EXPECT_NE(std::string(e.what()).find("particle " + std::to_string(id) + " (global id)"), std::string::npos)
                << e.what();
            EXPECT_NE(std::string(e.what()).find("non-finite"), std::string::npos) << e.what();
        }
    }
}

// The two halves give what migrate() gives, the id fingerprint included,
// also when the caller enqueues more work in between (as a search step does).
TEST(DeviceMigration, BeginAndCompleteEqualMigrate) {
    HALOEX_REQUIRE_GPU();
    for (const plan::Int3 grid : {plan::Int3{1, 1, 1}, plan::Int3{2, 2, 1}}) {
        SCOPED_TRACE("grid " + plan::RankGrid(grid).toString());
        const plan::Decomposition dd = decompositionOf({4.0, 4.0, 3.0}, grid);
        const MovedParticles m = moveParticles(dd, 1500, 0.3, 11);
        runtime::runInProcess(dd.grid().size(), [&](runtime::World& world) {
            const int r = world.rank();
            auto transport = stagedDevice(world);
            cuda::Stream stream;
            const auto stored = [&] {
                particles::ParticleStore store({sizeof(Vec3f), sizeof(std::int64_t)});
                store.upload(static_cast<int>(m.x[r].size()), {m.x[r].data(), m.v[r].data(), m.ids[r].data()});
                return store;
            };
            particles::ParticleStore whole = stored(), split = stored();
            particles::Migrator a(2), b(2);
            const particles::MigrationStats once = a.migrate(whole, dd, world, *transport, stream.get());
            particles::MigrationStats halves = b.beginMigration(split, dd, world, *transport, stream.get());
            cuda::DeviceBuffer<int> unrelated(1 << 16);
            unrelated.zeroAsync(stream.get());
            b.completeMigration(halves, split, r);
            EXPECT_EQ(halves.particles, once.particles);
            EXPECT_EQ(halves.sent, once.sent);
            EXPECT_EQ(halves.received, once.received);
            EXPECT_EQ(halves.idSum, once.idSum);
            EXPECT_EQ(halves.idSquareSum, once.idSquareSum);
            std::uint64_t sum = 0, squares = 0;
            std::vector<Vec3f> x(split.size()), v(split.size());
            std::vector<std::int64_t> ids(split.size());
            split.download({x.data(), v.data(), ids.data()});
            for (const std::int64_t id : ids) {
                sum += static_cast<std::uint64_t>(id);
                squares += static_cast<std::uint64_t>(id) * static_cast<std::uint64_t>(id);
            }
            EXPECT_EQ(halves.idSum, sum) << "the fingerprint of the ids the rank holds";
            EXPECT_EQ(halves.idSquareSum, squares);
        });
    }
}

}  // namespace
