#pragma once
// Copies every pulse's index map, one after the other, into one device
// array: host maps (host-built plans) in one upload, device maps (GPU-built
// plans, particles/device_plan_builder.hpp) by device copies. Shared by the
// device transports (DevicePulseMaps) and the nvshmem transport. Header-only
// and internal: it needs only the CUDA runtime.
#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

#include "haloex/cuda/check.hpp"
#include "haloex/plan/particle_plan.hpp"

namespace haloex::cuda {

// Entries of all index maps together.
inline std::size_t totalIndexEntries(const plan::ParticleHaloPlan& plan) {
    std::size_t total = 0;
    for (const plan::Pulse& p : plan.pulses) total += static_cast<std::size_t>(p.sendCount());
    return total;
}

// Writes pulse p's map at dst + (entries of the pulses before p); finished
// on the device on return (set-up is blocking and collective anyway).
inline void uploadIndexMaps(const plan::ParticleHaloPlan& plan, int* dst) {
    std::vector<int> host;
    for (const plan::Pulse& p : plan.pulses) {
        if (!p.indexMapOnDevice()) host.insert(host.end(), p.sendIndices.begin(), p.sendIndices.end());
    }
    std::size_t offset = 0, hostOffset = 0;
    bool copied = false;
    for (const plan::Pulse& p : plan.pulses) {
        const std::size_t count = static_cast<std::size_t>(p.sendCount());
        if (count > 0) {
            const bool device = p.indexMapOnDevice();
            HALOEX_CUDA_CHECK(cudaMemcpyAsync(dst + offset, device ? p.deviceSendIndices : host.data() + hostOffset,
                                              count * sizeof(int),
                                              device ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice,
                                              cudaStreamLegacy));
            if (!device) hostOffset += count;
            copied = true;
        }
        offset += count;
    }
    // Nothing to wait for without a map (one rank): no host round trip.
    if (copied) HALOEX_CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
}

}  // namespace haloex::cuda
