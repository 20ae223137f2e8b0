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
    // Atoms that stay keep their (id-sorted) order; only the few that move
    // are exchanged, sorted and merged in: O(N) per search, not O(N log N).
    if (!std::is_sorted(atoms.begin(), atoms.end(),
                        [](const AtomRecord& a, const AtomRecord& b) { return a.globalId < b.globalId; })) {
        sortById(atoms);
    }
    std::vector<std::vector<AtomRecord>> leaving(world.size());
    std::vector<AtomRecord> staying;
    staying.reserve(atoms.size());
    for (AtomRecord& atom : atoms) {
        if (!isFinite(atom.position)) {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("atom {} (global id) on rank {} has a non-finite position ({}, {}, {}); the "
                                   "simulation is unstable (too large a time step, or bad input)",
                                   atom.globalId, world.rank(), atom.position.x, atom.position.y, atom.position.z));
        }
        atom.position = plan::wrapIntoBox(atom.position, decomposition.box());
        const int owner = decomposition.ownerRank(atom.position);
        if (owner == world.rank()) {
            staying.push_back(atom);
        } else {
            leaving[owner].push_back(atom);
        }
    }
    std::vector<AtomRecord> arriving = world.allToAll(leaving);
    sortById(arriving);
    std::vector<AtomRecord> mine(staying.size() + arriving.size());
    std::merge(staying.begin(), staying.end(), arriving.begin(), arriving.end(), mine.begin(),
               [](const AtomRecord& a, const AtomRecord& b) { return a.globalId < b.globalId; });
    return mine;
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
