#pragma once
// The home atoms split for Nonbonded::updateHomePart (HALOEX_SPLIT_UPDATE=1,
// docs/md-engine.md): the interior ones -- no pulse sends them, so the
// reverse halo exchange adds no force to them -- first, then the boundary
// ones. The interior part of the update can then run beside the reverse
// exchange, and only the boundary part follows it.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "haloex/cuda/device_buffer.hpp"
#include "haloex/md/gpu/nonbonded.hpp"
#include "haloex/plan/particle_plan.hpp"

namespace haloex::md::gpu {

class HomeSplit {
public:
    // Enqueues the split of `numHome` home atoms on `stream` from every
    // pulse's independent send entries (the home atoms it sends; the plan's
    // index maps in device or host memory). No host synchronisation.
    void build(const plan::ParticleHaloPlan& plan, int numHome, cudaStream_t stream);
    // Valid (device pointers) after build, until the next build.
    Nonbonded::HomeAtomsSplit split() const { return {order_.data(), interiorCount_.data()}; }

private:
    cuda::DeviceBuffer<std::uint8_t> interior_;  // per home atom: 1 interior, 0 boundary
    cuda::DeviceBuffer<int> order_;              // interior atoms, then boundary ones (reversed)
    cuda::DeviceBuffer<int> interiorCount_;
    cuda::DeviceBuffer<int> hostMaps_;  // host plans' independent entries, uploaded
    cuda::DeviceBuffer<unsigned char> cubTemp_;
};

}  // namespace haloex::md::gpu
