#pragma once
// nvshmem: one fused, GPU-initiated kernel per iteration (the library's
// stencil::NvshmemJacobi, haloex/stencil/jacobi_nvshmem.hpp).
#include <memory>

#include "haloex/runtime/world.hpp"
#include "haloex/stencil/jacobi_layout.hpp"
#include "haloex/stencil/jacobi_nvshmem.hpp"
#include "jacobi_variant.hpp"

namespace haloex::jacobi::gpu {

// Collective inside NVSHMEM: a failure here ends the job with its message.
std::unique_ptr<Variant> makeNvshmemVariant(const stencil::LocalStencil& stencil, runtime::World& world,
                                            const stencil::NvshmemJacobiOptions& options);

}  // namespace haloex::jacobi::gpu
