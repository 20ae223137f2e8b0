// ParticleHalo (halo/particle_halo.hpp): a particle plan's pulses bound to a
// transport, applied through the shared pulse engine.
#include "haloex/halo/particle_halo.hpp"

#include <fmt/format.h>

#include "haloex/core/error.hpp"
#include "pulse_engine.hpp"

namespace haloex {

ParticleHalo::ParticleHalo(transport::BlockTransport& transport, const plan::ParticleHaloPlan& plan)
    : transport_(&transport) {
    setPlan(plan);
}

ParticleHalo::~ParticleHalo() = default;
ParticleHalo::ParticleHalo(ParticleHalo&&) noexcept = default;
ParticleHalo& ParticleHalo::operator=(ParticleHalo&&) noexcept = default;

void ParticleHalo::setPlan(const plan::ParticleHaloPlan& plan) {
    halo_detail::requireContiguousReceiveSlots(plan.pulses);
    engine_ = std::make_unique<halo_detail::PulseEngine>(*transport_, plan.pulses, plan.numLocal);
    plan_ = plan;
}

transport::MemorySpace ParticleHalo::memorySpace() const { return transport_->memorySpace(); }

void ParticleHalo::gatherLayout(void* array, const ElementLayout& layout, const plan::Box* shiftBox,
                                transport::StreamHandle stream) {
    engine_->gather(array, layout, shiftBox, stream);
}

void ParticleHalo::scatterAddLayout(void* array, const ElementLayout& layout, transport::StreamHandle stream) {
    engine_->scatterAdd(array, layout, stream);
}

}  // namespace haloex
