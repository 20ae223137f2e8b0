#include "haloex/plan/rank_grid.hpp"

#include <charconv>
#include <cstdint>
#include <fmt/format.h>

#include "haloex/core/error.hpp"

namespace haloex::plan {

RankGrid::RankGrid(Int3 dims) : dims_(dims) {
    for (int d = 0; d < 3; ++d) {
        if (dims[d] < 1) {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("rank grid {}x{}x{}: every dimension needs at least one rank", dims[0], dims[1],
                                   dims[2]));
        }
    }
    // The product must fit the int rank numbers (65536x65536x1 wrapped to 0).
    const std::int64_t ranks = std::int64_t{dims[0]} * dims[1] * dims[2];
    if (ranks > kMaxGridRanks) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("rank grid {}x{}x{} has {} ranks, more than the {} a job can have; give a grid whose "
                               "product is the number of ranks",
                               dims[0], dims[1], dims[2], ranks, kMaxGridRanks));
    }
}

Int3 RankGrid::coordOf(int rank) const {
    HALOEX_ASSERT(rank >= 0 && rank < size(), "rank out of range");
    return {rank % dims_[0], (rank / dims_[0]) % dims_[1], rank / (dims_[0] * dims_[1])};
}

int RankGrid::rankOf(const Int3& coord) const {
    Int3 c{};
    for (int d = 0; d < 3; ++d) c[d] = ((coord[d] % dims_[d]) + dims_[d]) % dims_[d];
    return c[0] + dims_[0] * (c[1] + dims_[1] * c[2]);
}

int RankGrid::neighbour(int rank, int d, int step) const {
    Int3 c = coordOf(rank);
    c[d] += step;
    return rankOf(c);
}

std::string RankGrid::toString() const { return fmt::format("{}x{}x{}", dims_[0], dims_[1], dims_[2]); }

RankGrid parseRankGrid(std::string_view text) {
    Int3 dims{1, 1, 1};
    int d = 0;
    std::size_t pos = 0;
    auto fail = [&](const char* why) -> RankGrid {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("cannot read rank grid '{}': {}; write it as NXxNYxNZ, e.g. 2x2x1", text, why));
    };
    if (text.empty()) return fail("it is empty");
    while (pos <= text.size()) {
        if (d == 3) return fail("more than three dimensions");
        const std::size_t end = std::min(text.find_first_of("xX", pos), text.size());
        int value = 0;
        const auto* first = text.data() + pos;
        const auto* last = text.data() + end;
        auto [ptr, ec] = std::from_chars(first, last, value);
        if (ec != std::errc() || ptr != last) return fail("expected a whole number between the x's");
        if (value < 1) return fail("every dimension needs at least one rank");
        dims[d++] = value;
        pos = end + 1;
    }
    return RankGrid(dims);
}

void requireGridMatchesRanks(const RankGrid& grid, int numRanks) {
    if (grid.size() != numRanks) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("rank grid {} has {} ranks but the job has {}; give a grid whose product is {} "
                               "or launch {} ranks",
                               grid.toString(), grid.size(), numRanks, numRanks, grid.size()));
    }
}

}  // namespace haloex::plan
