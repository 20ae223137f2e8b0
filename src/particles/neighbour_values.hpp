#pragma once
// The small host messages of the search step's device pieces: values to
// neighbours (counts, receive offsets), several in one collective that also
// agrees on the largest block of the exchange that follows. Internal to
// haloex_particles.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <fmt/format.h>
#include <vector>

#include "haloex/core/error.hpp"
#include "haloex/runtime/world.hpp"

namespace haloex::particles::detail {

// One of several values exchanged together (exchangeValuesAgreeing).
struct ValueExchange {
    std::int64_t value = 0;     // sent to dest
    int dest = -1;              // -1: sent nowhere
    int src = -1;               // -1: nothing received
    std::int64_t received = 0;  // what src sent; left as it is without a src
};

// Each entry's value sent to its dest and its src's received, in one
// collective (World::allGather of every rank's entries) that also returns
// the largest `agreed` of any rank -- what
// BlockTransport::exchangeAgreedBlocksInPlace needs agreed -- so that the
// block exchange after it makes no collective of its own. A collective is
// also the ordering that call asks for: make it after the stream
// synchronisation that read the values. Every rank must list its entries in
// the same order; a src whose entry goes elsewhere is a bug (Internal).
template <std::size_t N>
std::int64_t exchangeValuesAgreeing(runtime::World& world, std::array<ValueExchange, N>& exchanges,
                                    std::int64_t agreed) {
    struct Entries {
        std::int64_t value[N];
        std::int32_t dest[N];
        std::int64_t agreed;
    };
    Entries mine{};
    for (std::size_t k = 0; k < N; ++k) {
        mine.value[k] = exchanges[k].value;
        mine.dest[k] = exchanges[k].dest;
    }
    mine.agreed = agreed;
    const std::vector<Entries> all = world.allGather(mine);
    std::int64_t largest = 0;
    for (const Entries& e : all) largest = std::max(largest, e.agreed);
    for (std::size_t k = 0; k < N; ++k) {
        ValueExchange& e = exchanges[k];
        if (e.src < 0) continue;
        const Entries& from = all.at(static_cast<std::size_t>(e.src));
        if (from.dest[k] != world.rank()) {
            throwError(ErrorKind::Internal,
                       fmt::format("exchangeValuesAgreeing: rank {} expects entry {} from rank {}, which sends it to "
                                   "rank {}; the ranks list their entries differently (a bug in haloex)",
                                   world.rank(), k, e.src, from.dest[k]));
        }
        e.received = from.value[k];
    }
    return largest;
}

}  // namespace haloex::particles::detail
