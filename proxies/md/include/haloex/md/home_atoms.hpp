#pragma once
// The atoms a rank owns, as they travel at search steps (repartitioning):
// each carries its global id and static data with its position and velocity.
#include <cstdint>
#include <span>
#include <vector>

#include "haloex/core/vec3.hpp"
#include "haloex/plan/decomposition.hpp"
#include "haloex/runtime/world.hpp"

namespace haloex::md {

struct AtomRecord {
    std::int64_t globalId = 0;
    std::int32_t type = 0;
    std::int32_t padding = 0;
    Vec3d position{};
    Vec3d velocity{};
};

// Sends every atom to the rank whose cell holds its (wrapped) position and
// returns this rank's atoms sorted by global id. Collective. Non-finite
// positions throw InvalidInput naming the atom's global id and this rank.
std::vector<AtomRecord> migrateAtoms(std::vector<AtomRecord> atoms, const plan::Decomposition& decomposition,
                                     runtime::World& world);

// Total atom count over the job (collective), for conservation checks.
std::int64_t countAtoms(std::span<const AtomRecord> atoms, runtime::World& world);

// Every rank's atoms on rank 0, sorted by global id; the other ranks get
// nothing (O(N) traffic and memory). Collective; for output steps, checkpoints
// and checks, not for the hot path.
std::vector<AtomRecord> gatherAtomsOnRoot(std::span<const AtomRecord> atoms, runtime::World& world);

}  // namespace haloex::md
