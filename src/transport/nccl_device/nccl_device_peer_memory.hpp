#pragma once
// Peer memory through NCCL's device API (transport/peer_memory.hpp), in
// haloex_nccl_device, built where NCCL 2.28's device API was found at
// configure time. Everything that touches that experimental API is in
// nccl_device_peer_memory.cu.
#include <cstddef>
#include <memory>
#include <string>

#include "haloex/transport/peer_memory.hpp"
#include "haloex/runtime/world.hpp"

namespace haloex::nccl {

// Collective; empty when this job can use the nccl-device provider, else
// why not, on every rank alike: a thread world of more than one rank (haloex
// runs it one process per GPU), ranks sharing a GPU (NCCL refuses), GPUs of
// one node without CUDA peer access between them, an NCCL library at run
// time other than the 2.28 it was built for. Select the CUDA device first.
std::string deviceApiUnavailableReason(runtime::World& world);

// Collective: a communicator bootstrapped over `world` (as the nccl transport
// does), one ncclMemAlloc'd allocation per rank (the maximum of `bytes`),
// zero-filled, registered with the communicator as a window, and the peers'
// load/store (LSA) pointers resolved once on the device. Throws
// InvalidInput with deviceApiUnavailableReason() when it is not empty.
std::unique_ptr<transport::PeerMemory> makeNcclDevicePeerMemory(runtime::World& world, std::size_t bytes,
                                                                const std::string& what);

}  // namespace haloex::nccl
