#include "haloex/transport/reference.hpp"

#include <algorithm>
#include <cstring>

namespace haloex::transport {

namespace {
// A fixed-size element of a byte-wise exchanged field.
struct Bytes16 {
    std::byte b[16];
};
}  // namespace

void ReferenceTransport::setPlan(const plan::ParticleHaloPlan& plan) {
    requireHostPlan(plan, "the reference transport");
    plan_ = plan;
    x_.assign(plan_.numLocal, Vec3f{});
    f_.assign(plan_.numLocal, Vec3f{});
}

void ReferenceTransport::forwardCoordinates(const plan::Box& box, StreamHandle) {
    forwardPositions(std::span<Vec3f>(x_), box);
    ++counters_.forwardCalls;
}

void ReferenceTransport::reverseForces(StreamHandle) {
    reverseAdd(std::span<Vec3f>(f_));
    ++counters_.reverseCalls;
}

void ReferenceTransport::clearForces(StreamHandle) { std::fill(f_.begin(), f_.end(), Vec3f{}); }

void ReferenceTransport::forwardBytes(void* data, std::size_t elementSize, StreamHandle) {
    HALOEX_ASSERT(elementSize > 0 && elementSize <= sizeof(Bytes16), "forwardBytes supports elements of 1..16 bytes");
    // Widen to a fixed-size element, exchange, narrow back.
    std::vector<Bytes16> wide(plan_.numLocal);
    auto* bytes = static_cast<std::byte*>(data);
    for (int i = 0; i < plan_.numLocal; ++i) std::memcpy(wide[i].b, bytes + i * elementSize, elementSize);
    forward(std::span<Bytes16>(wide));
    for (int i = 0; i < plan_.numLocal; ++i) std::memcpy(bytes + i * elementSize, wide[i].b, elementSize);
}

}  // namespace haloex::transport
