// The fused Jacobi kernel's factory in a build without haloex_nvshmem (part of
// haloex_transports then): it refuses with the registry's reason, so callers
// choose at run time (unavailableReason(Backend::Nvshmem)) instead of with #if.
#include "haloex/core/error.hpp"
#include "haloex/halo/backend.hpp"
#include "haloex/stencil/jacobi_nvshmem.hpp"

namespace haloex::stencil {

std::unique_ptr<NvshmemJacobi> makeNvshmemJacobi(runtime::World&, const LocalStencil&, const NvshmemJacobiOptions&) {
    throwError(ErrorKind::InvalidInput,
               "the fused NVSHMEM Jacobi kernel is not available: " + unavailableReason(Backend::Nvshmem));
}

}  // namespace haloex::stencil
