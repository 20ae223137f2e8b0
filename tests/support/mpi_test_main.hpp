#pragma once
// GoogleTest under mpirun: main() starts MPI, every test may use the job's
// world, rank 0 prints the usual output, other ranks print only their
// failures (prefixed with the rank), and the exit code is non-zero when any
// rank failed.
#include "haloex/runtime/world.hpp"

namespace haloex::testsupport {

// The job's world (MpiWorld over MPI_COMM_WORLD); valid inside tests.
runtime::World& mpiTestWorld();

// Runs all tests as described above; call from main().
int runMpiTests(int argc, char** argv);

}  // namespace haloex::testsupport
