#pragma once
// The small host messages of the search step's device pieces: one value to
// a neighbour while another arrives (counts, receive offsets). Internal to
// haloex_particles.
#include <cstdint>
#include <span>

#include "haloex/runtime/world.hpp"

namespace haloex::particles::detail {

// Sends `value` to dest and returns what src sent (`none` without a src;
// either rank may be -1).
inline std::int64_t exchangeValue(runtime::World& world, std::int64_t value, int dest, int src, int tag,
                                  std::int64_t none = 0) {
    std::int64_t theirs = none;
    world.sendRecvBytes(std::as_bytes(std::span(&value, 1)), dest,
                        std::as_writable_bytes(std::span(&theirs, src >= 0 ? 1 : 0)), src, tag);
    return theirs;
}

}  // namespace haloex::particles::detail
