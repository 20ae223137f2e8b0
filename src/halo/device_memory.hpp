#pragma once
// What the halo API needs of CUDA for its own arrays: device memory and
// blocking copies. Defined by device_memory.cpp where the library has the
// halo API's device half (haloex_transports in a CUDA build) and by
// device_unavailable.cpp where it has not (the CPU-only haloex_halo), which
// says why and refuses; CMake picks (src/halo/CMakeLists.txt).
#include <cstddef>
#include <string>

#include "haloex/transport/types.hpp"

namespace haloex::halo_detail {

// Empty when the halo API has its device half here, else why not.
std::string deviceHalfMissing();

// Device memory on the current GPU, freed with the object.
class DeviceBytes {
public:
    // `bytes` (at least 1), zero-filled when `zeroed`, finished when it returns.
    DeviceBytes(std::size_t bytes, bool zeroed);
    // Frees with cudaFree in device_memory.cpp; only the CPU-only definition is empty.
    ~DeviceBytes();  // NOLINT(performance-trivially-destructible)
    DeviceBytes(const DeviceBytes&) = delete;
    DeviceBytes& operator=(const DeviceBytes&) = delete;
    std::byte* data() const { return data_; }
    std::size_t bytes() const { return bytes_; }

private:
    std::byte* data_ = nullptr;
    std::size_t bytes_ = 0;
};

// Device to device, finished when it returns: work queued earlier on any
// stream is waited for first (a grown array's old copy is freed next).
void copyDeviceNow(void* dst, const void* src, std::size_t bytes);
// Host to device and device to host on `stream`, after the work already
// there, waited for.
void copyHostToDevice(void* dst, const void* host, std::size_t bytes, transport::StreamHandle stream);
void copyDeviceToHost(void* host, const void* src, std::size_t bytes, transport::StreamHandle stream);

}  // namespace haloex::halo_detail
