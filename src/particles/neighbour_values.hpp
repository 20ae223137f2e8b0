#pragma once
// The small host messages of the search step's device pieces: values to
// neighbours while others arrive (counts, receive offsets), several in one
// round trip. Internal to haloex_particles.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "haloex/runtime/world.hpp"

namespace haloex::particles::detail {

// One of several values exchanged together (exchangeValues).
struct ValueExchange {
    std::int64_t value = 0;     // sent to dest
    int dest = -1;              // -1: sent nowhere
    int src = -1;               // -1: nothing received
    std::int64_t received = 0;  // what src sent; left as it is without a src
};

// Each entry's value sent to its dest and its src's received, all in one
// round trip (World::sendRecvMany: every receive posted, then every send,
// matched as one exchange per entry in entry order would be -- two entries
// between the same two ranks keep their order). Every rank must list its
// entries in the same order.
template <std::size_t N>
void exchangeValues(runtime::World& world, std::array<ValueExchange, N>& exchanges, int tag) {
    std::array<runtime::PeerMessage, N> messages{};
    for (std::size_t k = 0; k < N; ++k) {
        ValueExchange& e = exchanges[k];
        messages[k] = {std::as_bytes(std::span(&e.value, 1)), e.dest,
                       std::as_writable_bytes(std::span(&e.received, e.src >= 0 ? 1 : 0)), e.src};
    }
    world.sendRecvMany(messages, tag);
}

}  // namespace haloex::particles::detail
