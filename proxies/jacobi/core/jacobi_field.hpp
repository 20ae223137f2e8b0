#pragma once
// The initial field and the fixed boundary values as functions of the global
// cell, shared by the host and the device so every rank and every reference
// starts from the same bits. Every cell gets a different value (a hash), so a
// halo cell placed one cell off changes the result.
#include <cstdint>

#include "haloex/stencil/jacobi_update.hpp"

namespace haloex::jacobi {

HALOEX_STENCIL_HD std::uint64_t mix64(std::uint64_t x) {
    // splitmix64's finaliser
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// A double in [0, 1) with 53 random bits (exact, no rounding).
HALOEX_STENCIL_HD double unitHash(std::uint64_t key) {
    return static_cast<double>(mix64(key) >> 11) * (1.0 / 9007199254740992.0);
}

// Value of global cell (gi, gj) at the start, for gi in [-1, nx], gj in
// [-1, ny]: interior cells in [0, 1); with periodic boundaries the halo holds
// the wrapped interior values; with fixed boundaries the cells outside the
// grid hold boundary values in [1, 2), which never change.
HALOEX_STENCIL_HD double initialValue(long long gi, long long gj, long long nx, long long ny, bool periodic) {
    if (periodic) {
        gi = (gi % nx + nx) % nx;
        gj = (gj % ny + ny) % ny;
    }
    const auto key = static_cast<std::uint64_t>(gi + 1) | (static_cast<std::uint64_t>(gj + 1) << 32);
    const bool inside = gi >= 0 && gi < nx && gj >= 0 && gj < ny;
    return inside ? unitHash(key) : 1.0 + unitHash(key ^ 0x5bd1e9955bd1e995ull);
}

}  // namespace haloex::jacobi
