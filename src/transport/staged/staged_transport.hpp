#pragma once
// The `staged` transport: CPU-orchestrated and host-staged, in host memory
// (the reference algorithm over any World; in haloex) or device memory (pack
// on the GPU, copy to pinned host memory, World::sendRecv, copy back; in
// haloex_cuda). Made through the registry (transport/registry.hpp).
#include <memory>

#include "haloex/runtime/world.hpp"
#include "haloex/transport/block_transport.hpp"

namespace haloex::transport {

std::unique_ptr<BlockTransport> makeStagedHostTransport(runtime::World& world);

std::unique_ptr<BlockTransport> makeStagedDeviceTransport(runtime::World& world);

}  // namespace haloex::transport
