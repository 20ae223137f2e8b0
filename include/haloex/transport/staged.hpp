#pragma once
// The `staged` transport: CPU-orchestrated, host-staged exchange over a World
// (docs/architecture.md#layers). Works with any MPI (no CUDA-awareness needed) and without GPUs.
//
// Host memory: coordinates()/forces() are host arrays; each pulse is one
// World::sendRecv, in pulse order (forces in reverse order).
// Device memory: per pulse the send entries are packed by a kernel on the
// given stream, copied to pinned host memory, the host waits for the stream
// (one counted host sync per pulse), exchanges with World::sendRecvBytes and
// copies the received block into the receive slot on the stream. Forces: in
// reverse pulse order the halo slot is copied to the host (one sync), sent
// back, copied to the device and added into the owners by a kernel.
// forward/reverse return with the last host-to-device copy still queued on
// the stream.
#include <memory>

#include "haloex/runtime/world.hpp"
#include "haloex/transport/transport.hpp"

namespace haloex::transport {

// Host memory (library haloex).
std::unique_ptr<ParticleTransport> makeStagedHostTransport(runtime::World& world);

// Device memory (library haloex_cuda; the calling thread's current CUDA
// device holds the arrays, see cuda/device_select.hpp).
std::unique_ptr<ParticleTransport> makeStagedDeviceTransport(runtime::World& world);

// Either memory space (library haloex_transports). Device memory in a build
// without CUDA throws InvalidInput saying so.
std::unique_ptr<ParticleTransport> makeStagedTransport(runtime::World& world, MemorySpace space);

}  // namespace haloex::transport
