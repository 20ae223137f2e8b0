#include "haloex/md/home_atoms.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "haloex/core/error.hpp"
#include "haloex/particles/host_migration.hpp"

namespace haloex::md {
namespace {
void sortById(std::vector<AtomRecord>& atoms) {
    std::sort(atoms.begin(), atoms.end(),
              [](const AtomRecord& a, const AtomRecord& b) { return a.globalId < b.globalId; });
}
}  // namespace

std::vector<AtomRecord> migrateAtoms(std::vector<AtomRecord> atoms, const plan::Decomposition& decomposition,
                                     runtime::World& world) {
    // Atoms that stay keep their (id-sorted) order; only the few that move
    // are exchanged, sorted and merged in: O(N) per search, not O(N log N).
    if (!std::is_sorted(atoms.begin(), atoms.end(),
                        [](const AtomRecord& a, const AtomRecord& b) { return a.globalId < b.globalId; })) {
        sortById(atoms);
    }
    auto moved = particles::migrateOnHost(
        std::move(atoms), decomposition, world, [](AtomRecord& a) -> Vec3d& { return a.position; },
        [](const AtomRecord& a) { return fmt::format("{} (global id)", a.globalId); });
    const auto arrivals = moved.particles.begin() + static_cast<std::ptrdiff_t>(moved.stayed);
    std::sort(arrivals, moved.particles.end(),
              [](const AtomRecord& a, const AtomRecord& b) { return a.globalId < b.globalId; });
    std::inplace_merge(moved.particles.begin(), arrivals, moved.particles.end(),
                       [](const AtomRecord& a, const AtomRecord& b) { return a.globalId < b.globalId; });
    return std::move(moved.particles);
}

std::int64_t countAtoms(std::span<const AtomRecord> atoms, runtime::World& world) {
    return world.allReduceValue<std::int64_t>(static_cast<std::int64_t>(atoms.size()), runtime::ReduceOp::Sum);
}

std::vector<AtomRecord> gatherAtomsOnRoot(std::span<const AtomRecord> atoms, runtime::World& world) {
    std::vector<std::vector<AtomRecord>> send(static_cast<std::size_t>(world.size()));
    send[0] = std::vector<AtomRecord>(atoms.begin(), atoms.end());
    std::vector<AtomRecord> all = world.allToAll(send);
    sortById(all);
    return all;
}

}  // namespace haloex::md
