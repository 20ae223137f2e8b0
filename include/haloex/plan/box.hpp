#pragma once
/// @file
/// Orthorhombic periodic box (lengths in nm).
#include <array>
#include <span>

#include "haloex/core/vec3.hpp"

namespace haloex::plan {

/// An orthorhombic periodic box, from the origin.
struct Box {
    Vec3d length{};  ///< edge lengths (nm)

    /// Throws InvalidInput unless every length is finite and positive.
    void validate() const;
    double volume() const { return length.x * length.y * length.z; }  ///< the product of the lengths
};

/// Maps a finite coordinate into [0, L) in every dimension (GROMACS files often
/// hold atoms just outside the box). Throws InvalidInput for non-finite input,
/// naming `what` (e.g. "atom 17").
Vec3d wrapIntoBox(const Vec3d& x, const Box& box, const char* what = "a coordinate");

/// Wraps every position in place; a non-finite one throws InvalidInput naming
/// its index ("atom 17", counting from 0).
void wrapPositions(std::span<Vec3d> positions, const Box& box);

}  // namespace haloex::plan
