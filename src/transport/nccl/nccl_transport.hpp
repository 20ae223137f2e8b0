#pragma once
// The `nccl` transport (library haloex_nccl; made through the registry): stream-ordered ncclSend/ncclRecv
// per pulse (docs/architecture.md#layers). Per pulse, on the given stream: a pack kernel, then
// one ncclGroupStart/ncclSend/ncclRecv/ncclGroupEnd (pulses are not grouped
// together: a later pulse forwards what an earlier one received); for forces,
// in reverse order, the halo slot is sent back and an unpack kernel adds it
// into the owners. The host never waits inside forward/reverse
// (counters().hostSyncs stays 0) but makes one NCCL call per pulse.
// graphCapturable(): forward and reverse may be captured in a CUDA graph
// once one uncaptured forward/reverse pair has run after setPlan (NCCL
// connects to new peers in its first calls); capturing earlier throws.
//
// The communicator is created in the constructor (collective) from a unique
// id broadcast over the World. NCCL refuses two ranks on one GPU, so the
// constructor first compares the ranks' GPUs and throws Error(Nccl) naming
// the ranks and the bus id if any share one.
#include <memory>

#include "haloex/runtime/world.hpp"
#include "haloex/transport/block_transport.hpp"

namespace haloex::transport {

// Collective. The calling thread's current CUDA device holds the arrays.
std::unique_ptr<BlockTransport> makeNcclTransport(runtime::World& world);

}  // namespace haloex::transport
