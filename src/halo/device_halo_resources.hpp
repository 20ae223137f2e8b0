#pragma once
// The CUDA side of a DeviceHalo (halo/device_halo.hpp): the timeout report in
// mapped page-locked host memory and the device abort flag. Defined by
// device_halo_resources.cpp where the library has the halo API's device half
// and by device_unavailable.cpp, which refuses, where it has not.
#include <memory>
#include <string>

#include "haloex/halo/device_halo.hpp"

namespace haloex::halo_detail {

class DeviceHaloResources {
public:
    // Allocates both, zeroed, and gives `view` their device addresses.
    // `what` names the halo in errors.
    DeviceHaloResources(DeviceHaloView& view, const std::string& what);
    ~DeviceHaloResources();
    DeviceHaloResources(const DeviceHaloResources&) = delete;
    DeviceHaloResources& operator=(const DeviceHaloResources&) = delete;

    // The report as the host reads it.
    const DeviceWaitReport* hostReport() const;
    // Waits for all work on this rank's GPU; errors are thrown.
    static void synchronize();
    // The same in a destructor: errors are ignored.
    static void synchronizeQuietly() noexcept;

private:
    struct Memory;
    std::unique_ptr<Memory> memory_;
};

}  // namespace haloex::halo_detail
