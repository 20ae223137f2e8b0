// The halo API's device half where the library has none (the CPU-only
// haloex_halo, or a build without CUDA): CMake compiles this file instead of
// device_memory.cpp, pulse_engine_device.cpp, device_halo_resources.cpp and
// element_kernels.cu, and HALOEX_CUDA_MISSING says why. Device memory is
// refused where it is asked for (the collective allocator, a device
// transport's halo, the device halo view), so the members below that need it
// are never reached.
#include "device_halo_resources.hpp"
#include "device_memory.hpp"
#include "haloex/core/error.hpp"
#include "pulse_engine.hpp"

namespace haloex::halo_detail {
namespace {

[[noreturn]] void refuse(const std::string& what) {
    throwError(ErrorKind::InvalidInput, what + ": " + deviceHalfMissing());
}

}  // namespace

std::string deviceHalfMissing() { return HALOEX_CUDA_MISSING; }

// ---- device memory and copies ----

DeviceBytes::DeviceBytes(std::size_t, bool) { refuse("device memory"); }
DeviceBytes::~DeviceBytes() = default;
void copyDeviceNow(void*, const void*, std::size_t) { refuse("a device copy"); }
void copyHostToDevice(void*, const void*, std::size_t, transport::StreamHandle) { refuse("a device copy"); }
void copyDeviceToHost(void*, const void*, std::size_t, transport::StreamHandle) { refuse("a device copy"); }

// ---- the pulse engine's device members (its constructor refuses device transports) ----

class DeviceMaps {};

void DeviceMapsDeleter::operator()(DeviceMaps* maps) const { delete maps; }
void PulseEngine::uploadMaps() { refuse("the halo operations in device memory"); }
const int* PulseEngine::deviceSendMap(std::size_t) const { return nullptr; }
void PulseEngine::packFirstBatchDevice(const std::byte*, std::size_t, std::byte*, transport::StreamHandle) {}
void PulseEngine::reserveScratch(std::size_t, transport::StreamHandle) {}
void PulseEngine::gatherDevice(std::byte*, const ElementLayout&, const plan::Box*, transport::StreamHandle,
                               const std::byte*) {}
void PulseEngine::exchangeInPlace(std::size_t, std::size_t, transport::StreamHandle) {}
void PulseEngine::unpackLanded(std::size_t, std::size_t, std::byte*, transport::StreamHandle) {}
void PulseEngine::scatterAddDevice(std::byte*, const ElementLayout&, transport::StreamHandle) {}
void PulseEngine::zeroDevice(void*, std::size_t, transport::StreamHandle) {}

// ---- the device halo view's CUDA side ----

struct DeviceHaloResources::Memory {};

DeviceHaloResources::DeviceHaloResources(DeviceHaloView&, const std::string& what) {
    refuse(what + ": the device halo view needs CUDA");
}
DeviceHaloResources::~DeviceHaloResources() = default;
const DeviceWaitReport* DeviceHaloResources::hostReport() const { return nullptr; }
void DeviceHaloResources::synchronize() {}
void DeviceHaloResources::synchronizeQuietly() noexcept {}

}  // namespace haloex::halo_detail
