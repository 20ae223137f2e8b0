#include <cstdlib>

#include "haloex/runtime/launched_world.hpp"

namespace haloex::runtime {

bool launchedByMpiLauncher() {
    // Variables that OpenMPI, PMI-1/2 (MPICH Hydra, Intel MPI), PMIx, Slurm's
    // srun and MVAPICH set in every process they start.
    for (const char* name :
         {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID", "MV2_COMM_WORLD_SIZE"}) {
        if (std::getenv(name) != nullptr) return true;
    }
    return false;
}

}  // namespace haloex::runtime
