#pragma once
// Initialising NVSHMEM over a World: rank 0 creates a unique id, the World
// broadcasts it (plain bytes: MPI need not be CUDA-aware), every rank joins.
//
// Header-only on purpose: NVSHMEM keeps one device state per module (shared
// library or executable) that holds NVSHMEM device code, and the inline
// nvshmemx_init_attr() initialises the module it is compiled into. So every
// such module calls this from its own code. Needs nvshmem.h/nvshmemx.h and the
// module's device link against libnvshmem_device.a.
#include <nvshmem.h>
#include <nvshmemx.h>

#include <cstdlib>
#include <span>
#include <string>

#include "haloex/core/error.hpp"
#include "haloex/runtime/world.hpp"

namespace haloex::nvshmem_bootstrap {

// Collective. Select the CUDA device first. Sets NVSHMEM_DISABLE_NVLS=1 unless
// the user set it: NVLink multicast is never used here.
inline void initWithUniqueId(runtime::World& world) {
    setenv("NVSHMEM_DISABLE_NVLS", "1", /*overwrite=*/0);
    nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
    if (world.rank() == 0 && nvshmemx_get_uniqueid(&id) != 0) {
        throwError(ErrorKind::Nvshmem, "nvshmemx_get_uniqueid failed on rank 0");
    }
    world.broadcastBytes(std::as_writable_bytes(std::span(&id, 1)), 0);
    nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
    if (nvshmemx_set_attr_uniqueid_args(world.rank(), world.size(), &id, &attr) != 0) {
        throwError(ErrorKind::Nvshmem,
                   "nvshmemx_set_attr_uniqueid_args failed on rank " + std::to_string(world.rank()));
    }
    if (nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr) != 0) {
        throwError(ErrorKind::Nvshmem, "nvshmemx_init_attr failed on rank " + std::to_string(world.rank()));
    }
    if (nvshmem_my_pe() != world.rank() || nvshmem_n_pes() != world.size()) {
        throwError(ErrorKind::Nvshmem, "NVSHMEM numbered this rank PE " + std::to_string(nvshmem_my_pe()) + " of " +
                                           std::to_string(nvshmem_n_pes()) + ", the job says rank " +
                                           std::to_string(world.rank()) + " of " + std::to_string(world.size()));
    }
}

}  // namespace haloex::nvshmem_bootstrap
