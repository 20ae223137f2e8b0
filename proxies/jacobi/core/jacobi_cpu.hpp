#pragma once
// The host implementations: the single-domain reference (no plan, no
// messages: periodic wrap by index arithmetic) that every run is checked
// against, and the distributed host iteration over a World (the `cpu`
// transport), which walks the same LocalStencil lines as the GPU kernels.
#include <cstdint>
#include <vector>

#include "haloex/runtime/world.hpp"
#include "haloex/stencil/jacobi_layout.hpp"
#include "jacobi_problem.hpp"

namespace haloex::jacobi {

struct FieldResult {
    std::vector<double> interior;  // nx * ny values, x fastest
    double normSquared = 0.0;      // sum of (new - old)^2 of the last iteration over these cells
};

// Fills a local array (stencil.numLocal() values, halo included) with the
// initial field of this rank's block.
void initLocalField(const ProblemSpec& spec, const stencil::LocalStencil& stencil, std::vector<double>& a);

// The interior of a local array, x fastest.
std::vector<double> extractInterior(const stencil::LocalStencil& stencil, const std::vector<double>& a);

// The whole grid on one host thread, `iterations` sweeps.
FieldResult cpuReference(const ProblemSpec& spec, int iterations);

// This rank's block after `iterations` sweeps, halos moved through `world`
// pulse by pulse. Collective.
FieldResult cpuDistributed(const ProblemSpec& spec, const stencil::LocalStencil& stencil, runtime::World& world,
                           int iterations);

// Block (originX, originY, nx, ny) of a global interior array (x fastest).
std::vector<double> globalBlock(const std::vector<double>& global, int globalNx, int originX, int originY, int nx,
                                int ny);

struct FieldComparison {
    double maxAbsError = 0.0;
    std::int64_t mismatches = 0;  // cells whose bits differ
    std::int64_t firstMismatch = -1;
    bool bitwiseEqual() const { return mismatches == 0; }
};
FieldComparison compareFields(const double* got, const double* expected, std::size_t count);

}  // namespace haloex::jacobi
