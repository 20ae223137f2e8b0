#pragma once
// The CPU-orchestrated equivalents between ranks 0 and 1: peer
// cudaMemcpyAsync through CUDA IPC with an event (and with an MPI hand-off),
// MPI ping-pong of host buffers, NCCL send/receive.
#include <vector>

#include "haloex/runtime/mpi_world.hpp"
#include "results.hpp"
#include "settings.hpp"

namespace haloex::commbench {

// Collective.
std::vector<Measurement> runCpuOrchestrated(runtime::MpiWorld& world, const BenchSettings& settings);

}  // namespace haloex::commbench
