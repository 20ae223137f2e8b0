#pragma once
// The `ipc` transport (library haloex_ipc; made through the registry,
// transport/registry.hpp): the paper's CPU-orchestrated
// baseline, done the way CUDA-aware MPI and GROMACS's "GPU direct" path do it
// on one node (docs/architecture.md#layers).
//
// The coordinate/force exchange (makeCoordinateForceExchange) exchanges, at
// bind, CUDA IPC handles of the caller's coordinate array (device memory from
// the collective allocator: whole 2 MiB units) and of a per-pulse force
// receive buffer with the peers (ranks of one process share raw pointers
// instead), again whenever an array was reallocated.
// Per pulse, in order, every rank: packs its send entries into a local
// buffer, waits for its stream (host sync 1), handshakes with its peers over
// the World (the receiver's stream is idle, so its slot is free), copies the
// packed block straight into the receiver's coordinates, waits for the copy
// (host sync 2) and notifies the receiver. Forces, in reverse pulse order:
// the owner of halo forces waits for its stream (sync 1), handshakes, copies
// them into the sender's receive buffer, waits (sync 2), notifies; the sender
// adds them into its atoms with a kernel. Exactly 2 host syncs per pulse and
// direction (counters().hostSyncs).
//
// exchangeBlocks (the halo API's path on arrays without IPC handles): each rank keeps one exported landing buffer in two halves,
// call c landing in half c % 2. Per call, every receiver tells its senders
// where each block lands (round 1), the senders copy their blocks into the
// receivers' landing halves, wait for their stream (the one host sync), tell
// the receivers (round 2), and each receiver queues the copies from its
// landing half into its `recv` ranges on the stream -- or, through
// exchangeBlocksInPlace, none: the caller reads the half where the blocks
// landed. Each round is one World::sendRecvMany over all the call's blocks.
// Contract: what lands in call c stays readable by work enqueued on the
// call's stream before call c + 1, because call c + 1's stream sync retires
// that work before call c + 2 offers the half again (a call on another
// stream than the previous one synchronises the device first).
//
// Needs every rank on one node (World::localSize() == size()); two ranks may
// share a GPU. Other streams that read coordinates or write forces must be
// ordered before the next call on the transport's stream.
#include <memory>

#include "haloex/runtime/world.hpp"
#include "haloex/transport/block_transport.hpp"

namespace haloex::transport {

// Collective. The calling thread's current CUDA device holds the arrays.
std::unique_ptr<BlockTransport> makeIpcTransport(runtime::World& world);

}  // namespace haloex::transport
