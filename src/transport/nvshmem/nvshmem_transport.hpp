#pragma once
// The `nvshmem` transport (library haloex_nvshmem; made through the registry):
// GPU-initiated, fused halo exchange (docs/nvshmem.md).
//
// One kernel per exchange moves every pulse: FusedPackCommX packs the
// coordinates (periodic shift included) and delivers them, FusedCommUnpackF
// brings the halo forces home and accumulates them. Per-pulse signals replace
// host synchronisation: forward and reverse never block the host and may be
// captured in CUDA graphs. NVSHMEM is initialised on first use with a unique
// id broadcast over the World (MPI need not be CUDA-aware).
//
// Paths, chosen per peer (option nvshmemPath):
//   auto   direct where nvshmem_ptr() reaches the peer (NVLink/P2P), else put
//   direct plain stores into the peer's coordinates; forces pulled by loads
//   tma    warp-level bulk copies (cp.async.bulk) for both, NVLink/P2P only
//   put    pack into a symmetric staging slot, then put-with-signal. This is
//          what InfiniBand needs; forced on NVLink hardware it runs through
//          NVSHMEM's peer-to-peer transport -- it is NOT an InfiniBand test.
//
// Launches (option nvshmemLaunch):
//   fused      one kernel per exchange, grid (blocks per pulse, pulses)
//   per-pulse  the same kernel once per pulse, in pulse order (forces in
//              reverse), stream-ordered: the paper's intermediate design,
//              kept as an ablation beside the fused kernel. Same signals,
//              same results; still capturable in CUDA graphs.
//
// Contract: forward and reverse alternate (the force exchange of one step is
// what allows the peers to overwrite this rank's halo coordinates in the
// next); clearForces zeroes home forces, halo forces are zeroed by the next
// forward once the peers have pulled them. Every device-side wait has a time
// limit (waitTimeoutSeconds, or HALOEX_WAIT_TIMEOUT, default 120 s); on expiry
// the rank, pulse, peer and signal values are printed and the job aborted.
#include <memory>

#include "haloex/runtime/world.hpp"
#include "haloex/transport/registry.hpp"
#include "haloex/transport/block_transport.hpp"

namespace haloex::transport {

// Collective. Uses the calling thread's current CUDA device.
std::unique_ptr<BlockTransport> makeNvshmemTransport(runtime::World& world, const TransportOptions& options);

}  // namespace haloex::transport
