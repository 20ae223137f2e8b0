#pragma once
// The `cpu` transport of haloex-jacobi and its reference: host arrays, halos
// through the World pulse by pulse. Runs anywhere (no GPU); its purpose is
// checking, not speed.
#include "haloex/runtime/world.hpp"
#include "haloex/stencil/jacobi_layout.hpp"
#include "jacobi_check.hpp"
#include "jacobi_problem.hpp"
#include "jacobi_report.hpp"

namespace haloex::jacobi {

// The whole grid on rank 0's host thread, timed (`repeats` runs, median).
// Collective (the other ranks wait).
Reference cpuReferenceOnRank0(const ProblemSpec& spec, runtime::World& world, int repeats);

// `repeats` timed distributed runs; the last is checked. Collective.
RunResult runCpuTransport(const ProblemSpec& spec, const stencil::LocalStencil& stencil, runtime::World& world,
                          int repeats, const Reference& reference);

}  // namespace haloex::jacobi
