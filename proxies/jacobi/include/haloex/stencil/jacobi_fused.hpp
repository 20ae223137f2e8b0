#pragma once
// The GPU-initiated 2D Jacobi iteration (proxies/jacobi/fused): one fused
// kernel per iteration on the library's public device API. The fields live
// in the backend's peer memory (haloex/halo/peer_memory.hpp: nvshmem's
// symmetric heap, nccl-device's registered windows, or CUDA IPC), the
// signals and their timed waits are a device halo view's
// (haloex/halo/device_halo_view.cuh); the kernel is plain CUDA (no -rdc, no
// NVSHMEM or NCCL device library), whichever backend it runs on.
//
// Per iteration the blocks first compute the boundary lines of the new
// field and store each sent line straight into the receiving peer's halo
// (NVLink/P2P stores through the peer's mapped field), then one thread
// signals every receiver; the blocks go on with the interior while the halo
// travels; the last block to finish waits (timed) for the signals of this
// rank's own senders only (no global barrier) and returns. The next launch
// reads complete halos. Every neighbour must be reachable with loads and
// stores (one node, P2P between the GPUs); where one is not, construction
// refuses on every rank with the reason.
//
// Plain C++: no CUDA types (a stream is passed as void*).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "haloex/halo/backend.hpp"
#include "haloex/runtime/world.hpp"
#include "haloex/stencil/jacobi_layout.hpp"

namespace haloex::stencil {

struct FusedJacobiOptions {
    // Where the fields and signals live: Nvshmem, NcclDevice or Ipc (a
    // backend with load/store peer memory, hasPeerMemory()).
    Backend backend = Backend::Nvshmem;
    // "auto" or "direct" (the same: stores into the peers' fields); anything
    // else is refused with what to use instead.
    std::string path = "auto";
    // Device-side wait limit; 0: HALOEX_WAIT_TIMEOUT or 120 s.
    double waitTimeoutSeconds = 0.0;
    // Upper bound on the kernel's blocks (0: what the occupancy calculator
    // allows on this GPU; the kernel never launches more than that).
    int maxBlocks = 0;
    // Interior cells a block takes per fetch of the work counter (0: 4096, a
    // multiple of the block size). Small tiles keep the blocks working on one
    // band of rows, whose neighbour rows stay in L2; large tiles spread them
    // over the whole field, and above ~8192^2 cells per GPU the rows they
    // share are read from memory again.
    int tileCells = 0;
};

class FusedJacobi {
public:
    virtual ~FusedJacobi() = default;

    // The two fields (numLocal() doubles each, the backend's peer memory),
    // parity 0 and 1. The caller initialises both (interior and halo) before
    // the first iterate() and may rewrite them between runs once every rank
    // has synchronised its device and passed a barrier.
    virtual double* field(int parity) = 0;

    // One iteration: reads field(parity) and writes field(1 - parity),
    // including the halo lines this rank receives. One kernel launch on
    // `stream` (a cudaStream_t); never blocks the host. normSquared, when not
    // null, is a device double that receives the sum of (new - old)^2 over
    // this rank's interior (added atomically: the summation order varies).
    // Every rank must call it the same number of times with the same parity.
    virtual void iterate(int parity, double* normSquared, void* stream) = 0;

    // Throws Error(Timeout) with the diagnostic when a device-side wait has
    // timed out (call after synchronising the stream).
    virtual void checkForFailure() const = 0;

    // What was chosen and why (path per peer, blocks), for the run summary.
    virtual std::vector<std::string> describe() const = 0;
    // "direct", or "-" (nothing to send).
    virtual std::string pathSummary() const = 0;
    virtual int blocks() const = 0;
};

// Collective over `world`; uses the calling thread's current CUDA device.
// Every rank passes its own LocalStencil (the peers' remote lines must agree
// with their receives: derive them from one plan).
std::unique_ptr<FusedJacobi> makeFusedJacobi(runtime::World& world, const LocalStencil& stencil,
                                             const FusedJacobiOptions& options);

}  // namespace haloex::stencil
