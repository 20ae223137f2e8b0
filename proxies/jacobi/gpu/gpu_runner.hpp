#pragma once
// The GPU side of haloex-jacobi: device selection, the one-GPU reference, and
// the timed runs of the transports (staged, ipc, nccl: CPU-orchestrated over
// the halo API; nvshmem, nccl-device: one fused, GPU-initiated kernel per
// iteration on the backend's peer memory), each
// selected through the backend registry (haloex/halo/backend.hpp). Plain C++:
// gpu_runner.cpp implements it with CUDA, gpu_runner_unavailable.cpp in builds
// without CUDA (every GPU transport skips there, saying why).
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "../core/jacobi_check.hpp"
#include "../core/jacobi_problem.hpp"
#include "../core/jacobi_report.hpp"
#include "haloex/plan/grid_plan.hpp"
#include "haloex/runtime/mpi_world.hpp"
#include "haloex/stencil/jacobi_layout.hpp"

namespace haloex::jacobi::gpu {

struct GpuSettings {
    int warmup = 10;  // iterations run (and discarded) before the timed runs
    int repeats = 1;  // timed runs; the median is reported
    bool allowSharedGpus = false;
    std::string nvshmemPath = "auto";
    double waitTimeoutSeconds = 0.0;
    int maxBlocks = 0;       // fused kernel (0: occupancy bound)
    int tileCells = 0;       // fused kernel: interior cells per work item (0: default)
    bool printNorms = true;  // rank 0 prints the norm at every --nccheck period
};

// What --transport all runs: the GPU transports this build has, in the order
// they run (a build without CUDA: the cpu transport).
std::vector<std::string> defaultTransports();

// Empty when every rank sees a GPU; otherwise the reason (the same on every
// rank). Collective.
std::string noGpuReason(runtime::World& world);

// Picks this rank's GPU (see cuda::selectDevice). Collective only in that
// every rank calls it.
void selectGpu(runtime::World& world, bool allowSharedGpus);

// The whole grid on rank 0's GPU, timed with the same warm-up and repeats.
// Collective (the other ranks wait). With `crossCheckCpu` the result is also
// compared with the CPU reference (throws Internal when they differ).
Reference gpuReference(const ProblemSpec& spec, runtime::World& world, const GpuSettings& settings, bool crossCheckCpu);

// One transport, timed and checked. Skips (status Skipped with the reason)
// where the transport cannot run here. `plan` is this rank's grid plan and
// `stencil` its lines (buildLocalStencil). Collective.
RunResult runGpuTransport(const std::string& name, const ProblemSpec& spec, const plan::GridHaloPlan& plan,
                          const stencil::LocalStencil& stencil, runtime::MpiWorld& world, const GpuSettings& settings,
                          const Reference& reference);

// The devices of the job, for the benchmark record. Collective.
nlohmann::json gpuMachineInfo(runtime::World& world);

}  // namespace haloex::jacobi::gpu
