#pragma once
// Every run is checked against a one-device computation of the whole grid:
// the ranks send their blocks to rank 0, which compares them bit by bit with
// the reference, and every rank learns the verdict.
#include <string>
#include <vector>

#include "haloex/runtime/world.hpp"
#include "haloex/stencil/jacobi_layout.hpp"
#include "jacobi_problem.hpp"
#include "jacobi_report.hpp"

namespace haloex::jacobi {

// The whole grid after the run's iterations, on rank 0 (empty elsewhere).
struct Reference {
    std::string kind;              // "gpu" (one GPU) or "cpu" (one host thread)
    std::vector<double> interior;  // nx * ny values, x fastest (rank 0 only)
    double normSquared = 0.0;      // of the last iteration
    double usPerIteration = 0.0;   // known on every rank
};

// Fills r's error fields, norms and status (Passed, or Failed with the
// reason) from this rank's block and its share of the last iteration's
// squared norm. Collective; every rank ends with the same verdict. The field
// must be bitwise equal (every variant performs the same operations in the
// same order); the norm is a sum in varying order: relative error <= 1e-6.
void checkAgainstReference(RunResult& r, const ProblemSpec& spec, const stencil::LocalStencil& stencil,
                           runtime::World& world, const std::vector<double>& myInterior, double myNormSquared,
                           const Reference& reference);

inline constexpr double kNormTolerance = 1e-6;

}  // namespace haloex::jacobi
