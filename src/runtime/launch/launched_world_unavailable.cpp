// startLaunchedWorld() of a build without MPI (CMake compiles this file into
// haloex_launch then; launched_world_mpi.cpp otherwise).
#include "haloex/core/error.hpp"
#include "haloex/runtime/launched_world.hpp"

namespace haloex::runtime {

std::unique_ptr<LaunchedWorld> startLaunchedWorld() {
    if (launchedByMpiLauncher()) {
        throwError(ErrorKind::InvalidInput,
                   "an MPI launcher (mpirun, srun, ...) started this process, but haloex was built without MPI, so "
                   "every process would run alone as a job of its own; run it without the launcher, or build haloex "
                   "with MPI (scripts/setup.sh installs OpenMPI)");
    }
    return nullptr;
}

}  // namespace haloex::runtime
