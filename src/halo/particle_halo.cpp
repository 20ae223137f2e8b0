// ParticleHalo (halo/particle_halo.hpp): the particle plan's pulses bound to
// a transport, applied through the shared pulse engine.
#include "haloex/halo/particle_halo.hpp"

#include <fmt/format.h>

#include "haloex/core/error.hpp"
#include "pulse_engine.hpp"

namespace haloex {
namespace {

// Whether `now` still describes the pulses the engine was built from. Cheap
// (per pulse, not per atom): counts, offsets, peers, the device map's
// address, and the first and last host index -- enough to catch a plan that
// changed under the halo, which then asks for rebind().
bool samePulses(const std::vector<plan::Pulse>& bound, const plan::ParticleHaloPlan& now, int boundLocal) {
    if (now.numLocal != boundLocal || now.pulses.size() != bound.size()) return false;
    for (std::size_t p = 0; p < bound.size(); ++p) {
        const plan::Pulse& a = bound[p];
        const plan::Pulse& b = now.pulses[p];
        if (a.sendRank != b.sendRank || a.recvRank != b.recvRank || a.sendCount() != b.sendCount() ||
            a.recvCount != b.recvCount || a.recvOffset != b.recvOffset || a.shiftSign != b.shiftSign ||
            a.dim != b.dim || a.deviceSendIndices != b.deviceSendIndices) {
            return false;
        }
        if (!a.sendIndices.empty() &&
            (a.sendIndices.front() != b.sendIndices.front() || a.sendIndices.back() != b.sendIndices.back())) {
            return false;
        }
    }
    return true;
}

}  // namespace

ParticleHalo::ParticleHalo(transport::ParticleTransport& transport) : transport_(&transport) { rebind(); }

ParticleHalo::~ParticleHalo() = default;
ParticleHalo::ParticleHalo(ParticleHalo&&) noexcept = default;
ParticleHalo& ParticleHalo::operator=(ParticleHalo&&) noexcept = default;

void ParticleHalo::rebind() {
    const plan::ParticleHaloPlan& plan = transport_->plan();
    for (const plan::Pulse& p : plan.pulses) {
        if (p.recvOffset < 0) {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("pulse {} of the particle plan has no contiguous receive slot (recvOffset {}); "
                                   "particle plans place received atoms after the home atoms",
                                   p.id, p.recvOffset));
        }
    }
    engine_ = std::make_unique<halo_detail::PulseEngine>(*transport_, plan.pulses, plan.numLocal);
}

const plan::ParticleHaloPlan& ParticleHalo::plan() const { return transport_->plan(); }

transport::MemorySpace ParticleHalo::memorySpace() const { return transport_->memorySpace(); }

void ParticleHalo::requireCurrentPlan() const {
    if (!samePulses(engine_->pulses(), transport_->plan(), engine_->numLocal())) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("the {} transport's plan changed since this ParticleHalo was bound (setPlan after "
                               "repartitioning); call rebind() first",
                               transport_->name()));
    }
}

void ParticleHalo::gatherLayout(void* array, const ElementLayout& layout, const plan::Box* shiftBox,
                                transport::StreamHandle stream) {
    requireCurrentPlan();
    engine_->gather(array, layout, shiftBox, stream);
}

void ParticleHalo::scatterAddLayout(void* array, const ElementLayout& layout, transport::StreamHandle stream) {
    requireCurrentPlan();
    engine_->scatterAdd(array, layout, stream);
}

}  // namespace haloex
