#pragma once
// Host-staged movement of device arrays, pulse by pulse over a World: pack on
// the device, copy to pinned host memory, wait for the stream, sendRecvBytes,
// copy the received block back. The `staged` transport is built from it, and
// the `ipc` transport uses it for forwardBytes (caller-owned arrays have no
// IPC handles). Internal to haloex.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "halo_kernels.hpp"
#include "haloex/plan/particle_plan.hpp"
#include "haloex/runtime/world.hpp"
#include "haloex/transport/block_transport.hpp"

namespace haloex::cuda {

class StagedPath {
public:
    explicit StagedPath(runtime::World& world) : world_(world) {}

    // Forward of a per-atom device array of elementSize bytes (packed entries
    // to the receivers' slots). With `box` the elements are Vec3f coordinates
    // and get the pulses' periodic shifts. Returns the host syncs it made.
    std::int64_t forward(const plan::ParticleHaloPlan& plan, const DevicePulseMaps& maps, std::byte* data,
                         std::size_t elementSize, const plan::Box* box, cudaStream_t stream, int tagBase);
    // Reverse: halo forces back to their owners, added through the index maps.
    std::int64_t reverseAdd(const plan::ParticleHaloPlan& plan, const DevicePulseMaps& maps, Vec3f* f,
                            cudaStream_t stream, int tagBase);

    // BlockTransport::exchangeBlock through pinned host memory: copy out,
    // wait, World::sendRecvBytes, copy in (finished on return).
    void exchangeBlock(const void* send, std::size_t sendBytes, int dest, void* recv, std::size_t recvBytes, int src,
                       cudaStream_t stream);
    // BlockTransport::exchangeBlocks: every block's send copied out (one
    // copy per run of sends adjacent in device memory), one host sync, every
    // block's message in one World::sendRecvMany, the receives copied in
    // (again by runs). Returns with the copies in still queued on the stream.
    void exchangeBlocks(std::span<const transport::BlockExchange> blocks, cudaStream_t stream);

private:
    // Grows the staging buffers; waits for the previous call's copies first.
    void reserve(std::size_t sendBytes, std::size_t recvBytes);
    // Host buffers are rewritten by the next call: that call's stream must
    // first pass the point where this call's copies from them were queued.
    void beginCall(cudaStream_t stream);
    void endCall(cudaStream_t stream);

    runtime::World& world_;
    DeviceBuffer<std::byte> deviceSend_, deviceRecv_;
    PinnedBuffer<std::byte> hostSend_, hostRecv_;
    Event lastUse_;
    cudaStream_t lastStream_ = nullptr;  // of the previous call (compared, never used)
    bool used_ = false;
    std::vector<runtime::PeerMessage> messages_;  // exchangeBlocks' scratch
};

}  // namespace haloex::cuda
