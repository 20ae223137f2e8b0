#pragma once
/// @file
/// Particle migration in host memory (migrateOnHost).
// Particle migration in host memory (Cabana's Distributor idiom, the host
// twin of particles/migration.hpp): every particle is wrapped into the
// periodic box and sent, with all its fields, to the rank whose cell holds
// it. Header only, CPU only (plan and runtime: no CUDA), for any trivially
// copyable particle type; ownership is plan::Decomposition::ownerRank's.
//
//   auto moved = particles::migrateOnHost(std::move(mine), decomposition, world,
//                                         [](Atom& a) -> Vec3d& { return a.position; },
//                                         [](const Atom& a) { return a.id; });
//   // moved.particles: this rank's now; the first moved.stayed of them stayed,
//   // in their order, the arrivals follow by source rank, each in its order.
//
// Collective over `world` (one all-to-all). A non-finite position throws
// InvalidInput naming the particle (`describe(particle)`, e.g. its global
// id) and this rank: the caller's system has blown up.
#include <cstddef>
#include <fmt/format.h>
#include <string>
#include <type_traits>
#include <vector>

#include "haloex/core/error.hpp"
#include "haloex/core/vec3.hpp"
#include "haloex/plan/decomposition.hpp"
#include "haloex/runtime/world.hpp"

namespace haloex::particles {

/// What migrateOnHost returns.
template <class T>
struct HostMigration {
    std::vector<T> particles;  ///< this rank's particles now: the stayers, then the arrivals
    std::size_t stayed = 0;    ///< particles[0, stayed) stayed on this rank
};

/// Sends every particle to the rank whose cell holds its wrapped position
/// (`positionOf(p)` gives a reference to it); `describe(p)` names a particle
/// in errors. Collective over `world`.
template <class T, class PositionOf, class Describe>
HostMigration<T> migrateOnHost(std::vector<T> particles, const plan::Decomposition& decomposition,
                               runtime::World& world, PositionOf positionOf, Describe describe) {
    static_assert(std::is_trivially_copyable_v<T>, "particles travel as bytes: T must be trivially copyable");
    std::vector<std::vector<T>> leaving(static_cast<std::size_t>(world.size()));
    HostMigration<T> out;
    out.particles.reserve(particles.size());
    for (T& p : particles) {
        Vec3d& x = positionOf(p);
        if (!isFinite(x)) {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("particle {} on rank {} has a non-finite position ({}, {}, {}); the simulation is "
                                   "unstable (too large a time step, or bad input)",
                                   describe(p), world.rank(), x.x, x.y, x.z));
        }
        x = plan::wrapIntoBox(x, decomposition.box());
        const int owner = decomposition.ownerRank(x);
        if (owner == world.rank()) {
            out.particles.push_back(p);
        } else {
            leaving[static_cast<std::size_t>(owner)].push_back(p);
        }
    }
    out.stayed = out.particles.size();
    std::vector<T> arriving = world.allToAll(leaving);
    out.particles.insert(out.particles.end(), arriving.begin(), arriving.end());
    return out;
}

}  // namespace haloex::particles
