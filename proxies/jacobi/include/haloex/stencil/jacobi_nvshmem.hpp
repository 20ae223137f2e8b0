#pragma once
// GPU-initiated 2D Jacobi iteration over NVSHMEM (library haloex_nvshmem; in
// builds without it haloex_transports has makeNvshmemJacobi, which throws
// InvalidInput with unavailableReason(Backend::Nvshmem)).
//
// One fused kernel per iteration: the blocks first compute the boundary lines
// of the new field and store each sent line straight into the receiving
// peer's halo (NVLink: plain stores through nvshmem_ptr; otherwise a
// symmetric staging slot and put-with-signal), then one block signals every
// receiver; the blocks go on with the interior while the halo travels; the
// last block to finish waits for the signals of this rank's own senders only
// (no global barrier) and returns. The next launch reads complete halos.
//
// Plain C++: no NVSHMEM or CUDA types (a stream is passed as void*).
// NVSHMEM is initialised on first use, collectively, by the library itself
// (one initialisation per process, shared with the particle transport).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "haloex/runtime/world.hpp"
#include "haloex/stencil/jacobi_layout.hpp"

namespace haloex::stencil {

struct NvshmemJacobiOptions {
    // "auto": direct stores where nvshmem_ptr() reaches the peer, else put;
    // "direct": stores only (refused where a peer is not reachable);
    // "put": put-with-signal everywhere (on NVLink hardware this runs through
    // NVSHMEM's peer-to-peer transport: it is not an InfiniBand test).
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

class NvshmemJacobi {
public:
    virtual ~NvshmemJacobi() = default;

    // The two fields (numLocal() doubles each, symmetric device memory),
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
    // "direct", "put", "mixed" (some peers each), or "-" (no peers).
    virtual std::string pathSummary() const = 0;
    virtual int blocks() const = 0;
};

// Collective over `world`; uses the calling thread's current CUDA device.
// Every rank passes its own LocalStencil (the peers' remote lines must agree
// with their receives: derive them from one plan).
std::unique_ptr<NvshmemJacobi> makeNvshmemJacobi(runtime::World& world, const LocalStencil& stencil,
                                                 const NvshmemJacobiOptions& options);

}  // namespace haloex::stencil
