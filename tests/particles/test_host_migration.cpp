// particles::migrateOnHost (include/haloex/particles/host_migration.hpp): the
// host twin of the device migration, on thread ranks -- every particle ends
// on the rank Decomposition::ownerRank names for its wrapped position, none
// is lost or duplicated, those that stay keep their order, a non-finite
// position is refused naming the particle and the rank.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "haloex/core/error.hpp"
#include "haloex/particles/host_migration.hpp"
#include "haloex/plan/decomposition.hpp"
#include "haloex/runtime/world.hpp"

namespace haloex::testing {
namespace {

struct Particle {
    std::int64_t id = 0;
    Vec3d x{};
    double charge = 0;
};

plan::Decomposition decomposition(const char* grid) {
    plan::DecompositionSpec spec;
    spec.box.length = {4.0, 3.0, 2.5};
    spec.grid = plan::parseRankGrid(grid);
    spec.rc = 0.5;
    spec.rlist = 0.6;
    return plan::Decomposition(spec);
}

TEST(HostMigration, EveryParticleEndsOnItsOwnerOnceAndTheStayersKeepTheirOrder) {
    for (const char* grid : {"2x1x1", "2x2x1", "2x2x2"}) {
        SCOPED_TRACE(grid);
        const plan::Decomposition d = decomposition(grid);
        const int n = d.grid().size();
        constexpr int kPerRank = 300;
        std::vector<std::vector<Particle>> after(static_cast<std::size_t>(n));
        std::vector<std::size_t> stayed(static_cast<std::size_t>(n));
        std::vector<std::vector<std::int64_t>> stayersBefore(static_cast<std::size_t>(n));
        runtime::runInProcess(n, [&](runtime::World& w) {
            // Each rank starts with particles anywhere (also outside the box:
            // they must be wrapped), ids unique over the job.
            std::mt19937_64 rng(1234 + static_cast<std::uint64_t>(w.rank()));
            std::uniform_real_distribution<double> u(-1.0, 1.0);
            std::vector<Particle> mine(kPerRank);
            for (int i = 0; i < kPerRank; ++i) {
                Particle& p = mine[static_cast<std::size_t>(i)];
                p.id = static_cast<std::int64_t>(w.rank()) * kPerRank + i;
                for (int k = 0; k < 3; ++k) p.x[k] = (0.5 + 0.9 * u(rng)) * d.box().length[k] * 1.3;
                p.charge = static_cast<double>(p.id) * 0.5;
                if (d.ownerRank(plan::wrapIntoBox(p.x, d.box())) == w.rank()) {
                    stayersBefore[static_cast<std::size_t>(w.rank())].push_back(p.id);
                }
            }
            auto moved = particles::migrateOnHost(
                std::move(mine), d, w, [](Particle& p) -> Vec3d& { return p.x; },
                [](const Particle& p) { return std::to_string(p.id); });
            after[static_cast<std::size_t>(w.rank())] = std::move(moved.particles);
            stayed[static_cast<std::size_t>(w.rank())] = moved.stayed;
        });
        std::vector<int> seen(static_cast<std::size_t>(n * kPerRank), 0);
        for (int r = 0; r < n; ++r) {
            const auto& mine = after[static_cast<std::size_t>(r)];
            std::vector<std::int64_t> stayers;
            for (std::size_t i = 0; i < mine.size(); ++i) {
                const Particle& p = mine[i];
                ++seen[static_cast<std::size_t>(p.id)];
                EXPECT_EQ(d.ownerRank(p.x), r) << "particle " << p.id << " on rank " << r;
                for (int k = 0; k < 3; ++k) {
                    EXPECT_GE(p.x[k], 0.0);
                    EXPECT_LT(p.x[k], d.box().length[k]);
                }
                EXPECT_EQ(p.charge, static_cast<double>(p.id) * 0.5) << "the fields travel with the position";
                if (i < stayed[static_cast<std::size_t>(r)]) stayers.push_back(p.id);
            }
            EXPECT_EQ(stayers, stayersBefore[static_cast<std::size_t>(r)]) << "rank " << r;
        }
        EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; }))
            << "a particle lost or duplicated";
    }
}

TEST(HostMigration, ANonFinitePositionIsRefusedNamingTheParticleAndTheRank) {
    const plan::Decomposition d = decomposition("2x1x1");
    std::string message;
    try {
        runtime::runInProcess(2, [&](runtime::World& w) {
            std::vector<Particle> mine(3);
            for (int i = 0; i < 3; ++i) mine[static_cast<std::size_t>(i)] = {10 * w.rank() + i, {1.0, 1.0, 1.0}, 0};
            if (w.rank() == 1) mine[2].x.y = std::nan("");
            particles::migrateOnHost(
                std::move(mine), d, w, [](Particle& p) -> Vec3d& { return p.x; },
                [](const Particle& p) { return "id " + std::to_string(p.id); });
        });
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
        message = e.what();
    }
    EXPECT_NE(message.find("particle id 12 on rank 1 has a non-finite position"), std::string::npos) << message;
}

}  // namespace
}  // namespace haloex::testing
