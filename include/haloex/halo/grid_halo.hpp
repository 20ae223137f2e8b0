#pragma once
// Typed halo operations on structured-grid fields the USER owns (library
// haloex_transports): the grid counterpart of halo/particle_halo.hpp, with
// the same shape and the same rules (element types, memory, streams,
// collectiveness: see there and docs/api.md).
//
// A field holds plan.numLocal() elements in the grid plan's layout
// (plan/grid_plan.hpp: x fastest, halo cells included around the interior).
//   gather(u)      interior -> halo cells of the neighbours, dimension by
//                  dimension, so edges and corners arrive by forwarding.
//                  Halo cells beyond a non-periodic edge are not filled by
//                  their own dimension: they keep what the caller put there
//                  (boundary values), which later dimensions forward into
//                  the neighbours' corner cells.
//   scatterAdd(u)  halo cells -> the interior cells they copy, added (pulses
//                  in reverse order): the transpose of gather, for
//                  accumulations written into halo cells (e.g. a stencil's
//                  adjoint or particle-to-grid deposits). Halo cells are not
//                  cleared; only interior cells are meaningful afterwards.
//
// The transport serves only as the mechanism (its exchangeBlock); its own
// particle plan plays no part, so any transport of any backend works -- a
// device backend's transport for device-memory fields.
#include <memory>

#include "haloex/halo/element.hpp"
#include "haloex/plan/grid_plan.hpp"
#include "haloex/transport/transport.hpp"

namespace haloex {

namespace halo_detail {
class PulseEngine;
}

class GridHalo {
public:
    // Not collective. Device backends upload the plan's index maps here.
    GridHalo(transport::ParticleTransport& transport, const plan::GridHaloPlan& plan);
    ~GridHalo();
    GridHalo(GridHalo&&) noexcept;
    GridHalo& operator=(GridHalo&&) noexcept;
    GridHalo(const GridHalo&) = delete;
    GridHalo& operator=(const GridHalo&) = delete;

    const plan::GridHaloPlan& plan() const { return plan_; }
    int numLocal() const { return plan_.numLocal(); }  // elements every field must hold
    transport::MemorySpace memorySpace() const;

    template <class T>
    void gather(T* field, transport::StreamHandle stream = nullptr) {
        gatherLayout(field, elementLayoutOf<T>(), stream);
    }
    template <class T>
    void scatterAdd(T* field, transport::StreamHandle stream = nullptr) {
        static_assert(ComponentWise<T>,
                      "scatterAdd adds component by component: T must be a halo scalar, a struct of x, y, z(, w) "
                      "or std::array of one, or specialise haloex::ElementComponents (haloex/halo/element.hpp)");
        scatterAddLayout(field, elementLayoutOf<T>(), stream);
    }

    void gatherLayout(void* field, const ElementLayout& layout, transport::StreamHandle stream);
    void scatterAddLayout(void* field, const ElementLayout& layout, transport::StreamHandle stream);

private:
    transport::ParticleTransport* transport_;
    plan::GridHaloPlan plan_;
    std::unique_ptr<halo_detail::PulseEngine> engine_;
};

}  // namespace haloex
