// main() of the device-transport suite: under mpirun/srun it runs over
// MpiWorld (one GPU per rank, or shared GPUs); otherwise the tests put their
// ranks on threads of this process.
#include <gtest/gtest.h>

#include "haloex/config.hpp"

#if HALOEX_TEST_WITH_MPI
#include "haloex/runtime/mpi_world.hpp"
#include "mpi_test_main.hpp"
#endif

int main(int argc, char** argv) {
#if HALOEX_TEST_WITH_MPI
    if (haloex::runtime::MpiSession::launchedByMpiLauncher()) return haloex::testsupport::runMpiTests(argc, argv);
#endif
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
