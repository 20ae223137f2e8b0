#include "haloex/md/home_atoms.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "haloex/core/error.hpp"

namespace haloex::md {
namespace {
void sortById(std::vector<AtomRecord>& atoms) {
    std::sort(atoms.begin(), atoms.end(),
              [](const AtomRecord& a, const AtomRecord& b) { return a.globalId < b.globalId; });
}
}  // namespace

std::vector<AtomRecord> migrateAtoms(std::vector<AtomRecord> atoms, const plan::Decomposition& decomposition,
                                     runtime::World& world) {
    std::vector<std::vector<AtomRecord>> byRank(world.size());
    for (AtomRecord& atom : atoms) {
        if (!isFinite(atom.position)) {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("atom {} (global id) on rank {} has a non-finite position ({}, {}, {}); the "
                                   "simulation is unstable (too large a time step, or bad input)",
                                   atom.globalId, world.rank(), atom.position.x, atom.position.y, atom.position.z));
        }
        atom.position = plan::wrapIntoBox(atom.position, decomposition.box());
        byRank[decomposition.ownerRank(atom.position)].push_back(atom);
    }
    std::vector<AtomRecord> mine = world.allToAll(byRank);
    sortById(mine);
    return mine;
}

std::int64_t countAtoms(std::span<const AtomRecord> atoms, runtime::World& world) {
    return world.allReduceValue<std::int64_t>(static_cast<std::int64_t>(atoms.size()), runtime::ReduceOp::Sum);
}

std::vector<AtomRecord> gatherAllAtoms(std::span<const AtomRecord> atoms, runtime::World& world) {
    std::vector<std::vector<AtomRecord>> toAll(world.size(), std::vector<AtomRecord>(atoms.begin(), atoms.end()));
    std::vector<AtomRecord> all = world.allToAll(toAll);
    sortById(all);
    return all;
}

}  // namespace haloex::md
