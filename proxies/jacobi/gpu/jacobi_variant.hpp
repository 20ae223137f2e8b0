#pragma once
// One way to run a Jacobi iteration on this rank's GPU, as gpu_runner.cpp
// times and checks it: the CPU-orchestrated variants over the halo API
// (halo_variant.hpp) and the fused NVSHMEM kernel (nvshmem_variant.hpp).
#include <cuda_runtime.h>

#include <string>
#include <vector>

namespace haloex::jacobi::gpu {

class Variant {
public:
    virtual ~Variant() = default;
    virtual double* field(int parity) = 0;
    // Reads field(parity), writes field(1 - parity) with its halo lines; norm
    // (optional, device) receives the sum of squared updates.
    virtual void iterate(int parity, double* norm) = 0;
    // Waits on the host for all queued work; throws on a detected failure.
    virtual void finish() = 0;
    virtual cudaStream_t stream() = 0;  // initialisation and read-back go here
    // Collective: one untimed exchange, so that a mechanism that cannot work
    // here fails during set-up (and first-use costs stay out of the timing).
    virtual void connect() {}
    virtual std::string path() const { return "-"; }
    virtual std::vector<std::string> notes() const { return {}; }
};

}  // namespace haloex::jacobi::gpu
