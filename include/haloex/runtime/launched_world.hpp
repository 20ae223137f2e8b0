#pragma once
/// @file
/// The World a launcher gave this process, in every build, for programs that
/// run under mpirun/srun or alone (`docs/architecture.md#layers`); library
/// haloex_launch (component launch) in every build: over haloex_mpi with MPI,
/// a refusal without it.
/// startLaunchedWorld() starts MPI and returns its world when an MPI launcher
/// started the process, and nothing when none did. A build without MPI
/// refuses a launched process (InvalidInput) instead of letting every process
/// run as a job of its own.
#include <memory>

#include "haloex/runtime/world.hpp"

namespace haloex::runtime {

/// True when the environment shows an MPI/PMI launcher started this process
/// (OpenMPI, MPICH/Hydra, PMIx, Slurm's srun, MVAPICH), so applications can
/// choose MPI without a command-line switch.
bool launchedByMpiLauncher();

/// MPI's session and its world while it lives (MPI is finalised with it when
/// this call initialised it).
class LaunchedWorld {
public:
    virtual ~LaunchedWorld() = default;
    virtual World& world() = 0;  ///< the launched job's world
};

/// Collective over the launched job: MPI initialised and its world, or
/// nullptr when no launcher started this process. Throws InvalidInput when a
/// launcher did but this build has no MPI.
std::unique_ptr<LaunchedWorld> startLaunchedWorld();

}  // namespace haloex::runtime
