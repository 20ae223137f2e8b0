// The CUDA side of a DeviceHalo (device_halo_resources.hpp).
#include "device_halo_resources.hpp"

#include <cuda_runtime.h>

#include "haloex/detail/cuda/blocking_ops.hpp"
#include "haloex/cuda/check.hpp"
#include "haloex/cuda/device_buffer.hpp"

namespace haloex::halo_detail {

struct DeviceHaloResources::Memory {
    cuda::PinnedBuffer<DeviceWaitReport> report;
    cuda::DeviceBuffer<int> abortFlag;
};

DeviceHaloResources::DeviceHaloResources(DeviceHaloView& view, const std::string&)
    : memory_(std::make_unique<Memory>()) {
    memory_->report.allocate(1, cudaHostAllocMapped);
    *memory_->report.data() = DeviceWaitReport{};
    memory_->abortFlag.resize(1);
    cuda::fillBytesNow(memory_->abortFlag.data(), 0, sizeof(int));
    HALOEX_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&view.report), memory_->report.data(), 0));
    view.abortFlag = memory_->abortFlag.data();
}

DeviceHaloResources::~DeviceHaloResources() = default;

const DeviceWaitReport* DeviceHaloResources::hostReport() const { return memory_->report.data(); }

void DeviceHaloResources::synchronize() { HALOEX_CUDA_CHECK(cudaDeviceSynchronize()); }

void DeviceHaloResources::synchronizeQuietly() noexcept { cudaDeviceSynchronize(); }

}  // namespace haloex::halo_detail
