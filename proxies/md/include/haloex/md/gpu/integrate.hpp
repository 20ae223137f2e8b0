#pragma once
// GPU update of the home atoms (docs/md-engine.md#the-step-on-a-gpu): leapfrog, kinetic energy and the
// non-finite check. Every function only enqueues kernels on `stream` (no host
// synchronisation, no allocation): capturable in a CUDA graph. Results that
// the host wants (kinetic energy, first bad atom) stay in device memory and
// are read on output steps.
//
// Units: nm, ps, u, kJ/mol (u nm^2 ps^-2 = kJ/mol); forces kJ mol^-1 nm^-1.
#include <cuda_runtime.h>

#include <cstdint>

#include "haloex/core/vec3.hpp"

namespace haloex::md::gpu {

struct LeapfrogArgs {
    Vec3f* x = nullptr;            // positions, updated in place
    Vec3f* v = nullptr;            // velocities v(t - dt/2) -> v(t + dt/2)
    const Vec3f* f = nullptr;      // forces at x(t)
    int numAtoms = 0;              // home atoms [0, numAtoms)
    float dt = 0.002f;             // ps
    float invMass = 1.0f / 12.0f;  // 1/u, used when invMassPerAtom is null
    const float* invMassPerAtom = nullptr;
    // Velocity-rescaling factor lambda read from device memory at run time
    // (a thermostat sets it without a host sync); null means 1.
    const float* velocityScale = nullptr;
    // When not null: adds 1/2 (Ekin(t - dt/2) + Ekin(t + dt/2)) of these atoms
    // (kJ/mol), the leapfrog average kinetic energy GROMACS reports, with
    // Ekin(t - dt/2) of the velocities before scaling. Clear it first.
    double* averageKineticEnergy = nullptr;
    float mass = 12.0f;  // u, for the kinetic energy when invMassPerAtom is null
};

// v <- lambda v + f/m dt;  x <- x + v dt  (GROMACS's leapfrog with v-rescale).
void leapfrog(const LeapfrogArgs& args, cudaStream_t stream);

// *dEkin += 1/2 sum m |v|^2 over atoms [0, numAtoms) (kJ/mol). massPerAtom may
// be null (then `mass` for all).
void accumulateKineticEnergy(const Vec3f* v, int numAtoms, float mass, const float* massPerAtom, double* dEkin,
                             cudaStream_t stream);

// Non-finite check: *dFirstBad becomes the smallest index i in [0, numAtoms)
// whose position or force has a NaN/inf component, if smaller than its
// current value. kAllFinite (-1 as int, all bits set) means none: reset with
// resetFiniteCheck (a memset, capturable). f may be null.
inline constexpr int kAllFinite = -1;
void resetFiniteCheck(int* dFirstBad, cudaStream_t stream);
void checkFinite(const Vec3f* x, const Vec3f* f, int numAtoms, int* dFirstBad, cudaStream_t stream);

// out[i] = +charge for type 0, -charge otherwise (the proxy system's two
// types, ForceField::chargeOfType), for i < n.
void chargesOfTypes(const std::int32_t* types, int n, float charge, float* out, cudaStream_t stream);

}  // namespace haloex::md::gpu
