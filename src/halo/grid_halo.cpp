// GridHalo (halo/grid_halo.hpp): the grid plan's pulses (scattered receive
// placement) through the shared pulse engine.
#include "haloex/halo/grid_halo.hpp"

#include "pulse_engine.hpp"

namespace haloex {

GridHalo::GridHalo(transport::ParticleTransport& transport, const plan::GridHaloPlan& plan)
    : transport_(&transport), plan_(plan),
      engine_(
          std::make_unique<halo_detail::PulseEngine>(transport, plan.pulses, plan.numLocal(), plan.edgesAndCorners)) {}

GridHalo::~GridHalo() = default;
GridHalo::GridHalo(GridHalo&&) noexcept = default;
GridHalo& GridHalo::operator=(GridHalo&&) noexcept = default;

transport::MemorySpace GridHalo::memorySpace() const { return transport_->memorySpace(); }

void GridHalo::gatherLayout(void* field, const ElementLayout& layout, transport::StreamHandle stream) {
    engine_->gather(field, layout, nullptr, stream);
}

void GridHalo::scatterAddLayout(void* field, const ElementLayout& layout, transport::StreamHandle stream) {
    engine_->scatterAdd(field, layout, stream);
}

}  // namespace haloex
