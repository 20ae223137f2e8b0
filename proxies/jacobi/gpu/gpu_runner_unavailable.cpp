// The GPU side of haloex-jacobi in a build without CUDA (gpu_runner.hpp):
// --transport all is the cpu transport, and every GPU transport asked for
// skips with the registry's configure-time reason. The other entry points are
// only reached after noGpuReason() said there is a GPU, which it never does.
#include "gpu_runner.hpp"

#include "haloex/core/error.hpp"
#include "haloex/halo/backend.hpp"

namespace haloex::jacobi::gpu {
namespace {

[[noreturn]] void noCuda(const char* what) {
    throwError(ErrorKind::Internal, std::string(what) + " in a build without CUDA: " + deviceUnavailableReason());
}

}  // namespace

std::vector<std::string> defaultTransports() { return {"cpu"}; }

std::string noGpuReason(runtime::World&) { return deviceUnavailableReason() + "; only the cpu transport runs"; }

void selectGpu(runtime::World&, bool) { noCuda("selectGpu"); }

Reference gpuReference(const ProblemSpec&, runtime::World&, const GpuSettings&, bool) { noCuda("gpuReference"); }

RunResult runGpuTransport(const std::string&, const ProblemSpec&, const plan::GridHaloPlan&,
                          const stencil::LocalStencil&, runtime::MpiWorld&, const GpuSettings&, const Reference&) {
    noCuda("runGpuTransport");
}

nlohmann::json gpuMachineInfo(runtime::World&) { noCuda("gpuMachineInfo"); }

}  // namespace haloex::jacobi::gpu
