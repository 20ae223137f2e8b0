#pragma once
// A backend's coordinate and force arrays (home atoms, then the halo slots of
// the plan), owned by the backend and allocated collectively in the memory
// the halo's transport needs them in (halo/collective_buffer.hpp): the halo
// exchange stores into them directly, as GROMACS's takes the caller's d_x and
// d_f.
#include <optional>

#include "haloex/core/vec3.hpp"
#include "haloex/halo/collective_buffer.hpp"
#include "haloex/halo/coordinate_force_halo.hpp"
#include "haloex/plan/particle_plan.hpp"
#include "haloex/runtime/world.hpp"

namespace haloex::md {

class StepArrays {
public:
    // Collective on the first call only, which allocates room for `atoms`
    // local atoms (the maximum over the ranks): early, so that a library
    // initialised by the first allocation (NVSHMEM) sizes itself for them.
    void allocateOnce(CoordinateForceHalo& halo, runtime::World& world, std::size_t atoms) {
        if (x_) return;
        x_.emplace(allocateCollective<Vec3f>(world, halo.transport(), atoms, "the MD coordinates"));
        f_.emplace(allocateCollective<Vec3f>(world, halo.transport(), atoms, "the MD forces"));
    }
    // Collective: the arrays hold plan.numLocal atoms (grown geometrically,
    // contents kept) and `halo` is bound to them and to `plan`.
    void adopt(CoordinateForceHalo& halo, runtime::World& world, const plan::ParticleHaloPlan& plan) {
        const auto n = static_cast<std::size_t>(plan.numLocal);
        allocateOnce(halo, world, n);
        resizeTogether(world, n, *x_, *f_);  // one reduction for both
        halo.setPlan(plan, *x_, *f_);
    }

    Vec3f* coordinates() const { return x_ ? x_->data() : nullptr; }
    std::size_t capacity() const { return x_ ? x_->capacity() : 0; }  // atoms each array holds
    Vec3f* forces() const { return f_ ? f_->data() : nullptr; }

private:
    std::optional<CollectiveBuffer<Vec3f>> x_, f_;
};

}  // namespace haloex::md
