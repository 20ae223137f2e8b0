#pragma once
// Atoms of a start configuration that are too close: their forces would blow
// the system up at the first step, so a run refuses such a start before step
// 0 (MdOptions::minDistance) instead of integrating it to 10^23 K.
#include <cstdint>
#include <optional>
#include <string>

#include "haloex/md/system.hpp"

namespace haloex::md {

struct CloseContact {
    std::int64_t first = 0, second = 0;  // global ids, first < second
    double distance = 0.0;               // nm, minimum image
    std::int64_t pairs = 0;              // pairs nearer than the limit, this one included
};

// The closest pair of atoms nearer than `within` nm (minimum image in the
// periodic box; positions may lie outside it), or nullopt. O(N) with a cell
// grid; ties go to the smaller ids.
std::optional<CloseContact> closestContact(const System& system, double within);

// Throws InvalidInput naming the two atoms (global ids and, for a .gro
// input, their line numbers), their distance and what to do when two atoms
// are nearer than `minDistance` nm. `source` names the start configuration
// in the message ("--gro start.gro").
void requireNoCloseContacts(const System& system, double minDistance, const std::string& source, bool groLines);

}  // namespace haloex::md
