#pragma once
// nvshmem, nccl-device: one fused, GPU-initiated kernel per iteration
// (stencil::FusedJacobi, haloex/stencil/jacobi_fused.hpp), on the backend's
// peer memory.
#include <memory>

#include "haloex/runtime/world.hpp"
#include "haloex/stencil/jacobi_fused.hpp"
#include "haloex/stencil/jacobi_layout.hpp"
#include "jacobi_variant.hpp"

namespace haloex::jacobi::gpu {

// Collective: a rank that cannot reach a neighbour makes every rank throw.
std::unique_ptr<Variant> makeFusedVariant(const stencil::LocalStencil& stencil, runtime::World& world,
                                          const stencil::FusedJacobiOptions& options);

}  // namespace haloex::jacobi::gpu
