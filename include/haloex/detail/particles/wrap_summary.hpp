#pragma once
// Internal to haloex_particles (the Migrator holds two of them): what a
// wrap-only migration (no decomposed dimension) reports, in one record so
// that the host reads it with one copy.
namespace haloex::particles::detail {

struct WrapSummary {
    unsigned long long idSum;        // modulo 2^64
    unsigned long long idSquareSum;  // modulo 2^64
    int firstNonFinite;              // the first particle with a non-finite position; INT_MAX: none
    int unused;
};

}  // namespace haloex::particles::detail
