// The nccl-device backend where this library has none
// (transport/entry_points.hpp): CMake compiles this file instead of
// nccl_device_entry.cpp, and HALOEX_NCCL_DEVICE_MISSING says why.
#include "entry_points.hpp"
#include "haloex/core/error.hpp"

namespace haloex::transport::entry {

std::string ncclDeviceMissing() { return HALOEX_NCCL_DEVICE_MISSING; }

std::string ncclDeviceCannotRun(runtime::World&) { return ncclDeviceMissing(); }

std::unique_ptr<PeerMemory> makeNcclWindow(runtime::World&, std::size_t, const std::string& what) {
    throwError(ErrorKind::InvalidInput,
               what + ": the nccl-device backend is not in this build: " + ncclDeviceMissing());
}

std::unique_ptr<BlockTransport> makeNcclDevice(runtime::World&, const TransportOptions&) {
    throwError(ErrorKind::InvalidInput, "the nccl-device backend is not in this build: " + ncclDeviceMissing());
}

}  // namespace haloex::transport::entry
