#pragma once
// staged, ipc and nccl: the CPU-orchestrated variants. The halo moves through
// the library's halo API -- haloex::GridHalo::gather of the faces-only grid
// plan over the backend's transport -- on a high-priority halo stream, while
// the interior is computed on the compute stream.
#include <memory>

#include "haloex/halo/backend.hpp"
#include "haloex/plan/grid_plan.hpp"
#include "haloex/runtime/world.hpp"
#include "haloex/stencil/jacobi_layout.hpp"
#include "jacobi_variant.hpp"

namespace haloex::jacobi::gpu {

// Collective (makes the backend's transport and the fields). `plan` and
// `stencil` describe the same rank's block (the stencil derived from the plan).
std::unique_ptr<Variant> makeHaloVariant(Backend backend, const plan::GridHaloPlan& plan,
                                         const stencil::LocalStencil& stencil, runtime::World& world,
                                         bool allowSharedGpus);

}  // namespace haloex::jacobi::gpu
