// GridHalo (halo/grid_halo.hpp): the grid plan's pulses (scattered receive
// placement) through the shared pulse engine.
#include "haloex/halo/grid_halo.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "haloex/core/error.hpp"
#include "pulse_engine.hpp"

namespace haloex {

GridHalo::GridHalo(transport::BlockTransport& transport, const plan::GridHaloPlan& plan)
    : transport_(&transport), plan_(plan),
      engine_(
          std::make_unique<halo_detail::PulseEngine>(transport, plan.pulses, plan.numLocal(), plan.edgesAndCorners)) {
    for (const auto& p : engine_->packedPulses()) packedPulses_.push_back({p.pulse, p.offset, p.count, p.indices});
}

GridHalo::~GridHalo() = default;
GridHalo::GridHalo(GridHalo&&) noexcept = default;
GridHalo& GridHalo::operator=(GridHalo&&) noexcept = default;

transport::MemorySpace GridHalo::memorySpace() const { return transport_->memorySpace(); }

void GridHalo::gatherLayout(void* field, const ElementLayout& layout, transport::StreamHandle stream) {
    engine_->gather(field, layout, nullptr, stream);
}

std::size_t GridHalo::packedSendElements() const {
    return engine_->batches().empty() ? 0 : engine_->batches()[0].sendElements;
}

void* GridHalo::bindPackedSendsLayout(const ElementLayout& layout) { return engine_->packedStaging(layout.bytes); }

namespace {

// The staging bound for the layout's element size; names `what` and says
// what to do when there is none.
std::byte* requireStaging(halo_detail::PulseEngine& engine, const ElementLayout& layout, const char* what) {
    if (layout.bytes == 0) throwError(ErrorKind::InvalidInput, fmt::format("{}: an element type of 0 bytes", what));
    std::byte* staging = engine.boundStaging(layout.bytes);
    if (staging != nullptr) return staging;
    const std::vector<std::size_t> bound = engine.boundStagingSizes();
    throwError(ErrorKind::InvalidInput,
               fmt::format("{}: no send staging is bound for elements of {} bytes ({}); call bindPackedSends<T>() "
                           "with this element type once, fill the staging it returns as PackedSends<T> says, then "
                           "call gatherPacked<T>",
                           what, layout.bytes,
                           bound.empty() ? std::string("none is bound")
                                         : fmt::format("bound: elements of {} bytes", fmt::join(bound, ", "))));
}

}  // namespace

void GridHalo::gatherPackedLayout(void* field, const ElementLayout& layout, transport::StreamHandle stream) {
    engine_->gather(field, layout, nullptr, stream, requireStaging(*engine_, layout, "gatherPacked"));
}

void GridHalo::packSendsLayout(const void* field, const ElementLayout& layout, transport::StreamHandle stream) {
    engine_->packFirstBatch(field, layout.bytes, requireStaging(*engine_, layout, "packSends"), stream);
}

void GridHalo::scatterAddLayout(void* field, const ElementLayout& layout, transport::StreamHandle stream) {
    engine_->scatterAdd(field, layout, stream);
}

}  // namespace haloex
