// Probe for MpiWorld::abort: rank 1 aborts while the others wait in a
// barrier. ctest passes when the message appears (and nothing hangs).
#include "haloex/runtime/mpi_world.hpp"

int main(int argc, char** argv) {
    haloex::runtime::MpiSession session(argc, argv);
    haloex::runtime::MpiWorld world;
    if (world.rank() == 1) world.abort("deliberate abort from the test", 3);
    world.barrier();  // never completes: rank 1 ends the job
    return 0;
}
