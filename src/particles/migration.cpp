// Particle migration on the device (migration.hpp): the orchestration; the
// kernels are in particle_kernels.cu.
#include "haloex/particles/migration.hpp"

#include <algorithm>
#include <array>
#include <climits>
#include <cstring>
#include <fmt/format.h>

#include "haloex/core/error.hpp"
#include "neighbour_values.hpp"
#include "particle_kernels.hpp"

namespace haloex::particles {
namespace {

using namespace detail;

}  // namespace

MigrationStats Migrator::migrate(ParticleStore& particles, const plan::Decomposition& decomposition,
                                 runtime::World& world, transport::BlockTransport& transport, cudaStream_t stream) {
    MigrationStats stats = beginMigration(particles, decomposition, world, transport, stream);
    completeMigration(stats, particles, world.rank());
    return stats;
}

std::string Migrator::nameOf(const ParticleStore& particles, int i) const {
    if (idField_ < 0) return fmt::format("local particle {}", i);
    std::int64_t id = -1;
    HALOEX_CUDA_CHECK(
        cudaMemcpy(&id, particles.fieldAs<std::int64_t>(idField_) + i, sizeof(id), cudaMemcpyDeviceToHost));
    return fmt::format("particle {} (global id)", id);
}

void Migrator::throwNonFinite(const ParticleStore& particles, int i, int rank) const {
    throwError(ErrorKind::InvalidInput,
               fmt::format("{} on rank {} has a non-finite position; the simulation is unstable (too large a time "
                           "step, or bad input)",
                           nameOf(particles, i), rank));
}

// Nothing moves between ranks: one kernel wraps and sums the ids, one copy
// brings its summary (a search step on one rank launches little else).
void Migrator::beginWrapOnly(ParticleStore& particles, const double lengths[3], cudaStream_t stream) {
    if (wrapSlots_.size() == 0) {
        const WrapSummary empty[2] = {emptyWrapSummary(), emptyWrapSummary()};
        wrapSlots_.resize(2);
        HALOEX_CUDA_CHECK(cudaMemcpy(wrapSlots_.data(), empty, sizeof(empty), cudaMemcpyHostToDevice));
        wrapSummaryHost_.reserve(1);
        wrapParity_ = 0;
    }
    const std::int64_t* ids = idField_ >= 0 ? particles.fieldAs<std::int64_t>(idField_) : nullptr;
    // slots[1 - parity] was read by the last completeMigration (it waited).
    wrapAndSummarise(particles.positions(), particles.size(), lengths, ids, wrapSlots_.data(), wrapParity_, stream);
    HALOEX_CUDA_CHECK(cudaMemcpyAsync(wrapSummaryHost_.data(), wrapSlots_.data() + wrapParity_, sizeof(WrapSummary),
                                      cudaMemcpyDeviceToHost, stream));
    wrapParity_ = 1 - wrapParity_;
    copied_.record(stream);
    wrapOnly_ = true;
    pending_ = true;
}

void Migrator::completeMigration(MigrationStats& stats, const ParticleStore& particles, int rank) {
    HALOEX_ASSERT(pending_, "completeMigration without a beginMigration");
    pending_ = false;
    HALOEX_CUDA_CHECK(cudaEventSynchronize(copied_));
    if (wrapOnly_) {
        const WrapSummary& summary = *wrapSummaryHost_.data();
        if (summary.firstNonFinite != INT_MAX) throwNonFinite(particles, summary.firstNonFinite, rank);
        if (idField_ >= 0) {
            stats.idSum = summary.idSum;
            stats.idSquareSum = summary.idSquareSum;
        }
        return;
    }
    if (statusHost_[kFirstNonFinite] != INT_MAX) {
        throwNonFinite(particles, statusHost_[kFirstNonFinite], rank);
    }
    if (idField_ >= 0) {
        unsigned long long sums[2];
        std::memcpy(sums, statusHost_.data() + kIdSumsAt, sizeof(sums));
        stats.idSum = sums[0];
        stats.idSquareSum = sums[1];
    }
}

MigrationStats Migrator::beginMigration(ParticleStore& particles, const plan::Decomposition& decomposition,
                                        runtime::World& world, transport::BlockTransport& transport,
                                        cudaStream_t stream) {
    HALOEX_ASSERT(!pending_, "beginMigration before the last one's completeMigration");
    PartClock clock(parts_);
    const plan::RankGrid& grid = decomposition.grid();
    plan::requireGridMatchesRanks(grid, world.size());
    const int rank = world.rank();
    const plan::Int3 me = grid.coordOf(rank);
    const auto& L = decomposition.box().length;
    const double lengths[3] = {L.x, L.y, L.z};
    MigrationStats stats;
    status_.resize(kMigrationReadback);
    statusHost_.reserve(kMigrationReadback);

    const auto readStatus = [&] {
        HALOEX_CUDA_CHECK(cudaMemcpyAsync(statusHost_.data(), status_.data(), kMigrationStatus * sizeof(int),
                                          cudaMemcpyDeviceToHost, stream));
        HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
    };

    int n = particles.size();
    if (!grid.decomposed(0) && !grid.decomposed(1) && !grid.decomposed(2)) {
        beginWrapOnly(particles, lengths, stream);
        clock.mark("wrap");
        stats.particles = n;
        return stats;
    }
    wrapOnly_ = false;
    resetMigrationStatus(status_.data(), stream);
    // The first cut wraps and classifies in one kernel; its non-finite check
    // is read with the cut's counts.
    bool wrapChecked = false;

    for (int d = 0; d < 3; ++d) {
        if (!grid.decomposed(d)) continue;  // wrapping was all this dimension needed
        const DimensionCut cut{d, grid.dim(d), me[d], lengths[d]};
        direction_.reserve(static_cast<std::size_t>(std::max(n, 1)));
        selected_.reserve(3 * static_cast<std::size_t>(std::max(n, 1)));
        const int* stayList = selected_.data();
        const int* downList = stayList + n;
        const int* upList = downList + n;
        if (wrapChecked) {
            resetMigrationStatus(status_.data(), stream);
            classifyAndSelect(particles.positions(), n, cut, direction_.data(), selected_.data(), status_.data(),
                              cubTemp_, stream);
        } else {  // the status is fresh from the reset above
            wrapClassifyAndSelect(particles.positions(), n, lengths, cut, direction_.data(), selected_.data(),
                                  status_.data(), cubTemp_, stream);
        }
        readStatus();
        if (!wrapChecked && statusHost_[kFirstNonFinite] != INT_MAX) {
            throwNonFinite(particles, statusHost_[kFirstNonFinite], rank);
        }
        wrapChecked = true;
        if (statusHost_[kFirstTooFar] != INT_MAX) {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("{} on rank {} moved more than one cell width ({:.4g} nm) along {} since the last "
                                   "search; the system is unstable, or the cells are too thin for the search "
                                   "interval: use a smaller --dt or --nstlist, or fewer ranks along {}",
                                   nameOf(particles, statusHost_[kFirstTooFar]), rank, decomposition.cellWidth(d),
                                   "xyz"[d], "xyz"[d]));
        }
        clock.mark("classify");
        const int stay = statusHost_[kCountStay];
        const int down = statusHost_[kCountDown];
        const int up = statusHost_[kCountUp];

        const auto blockBytes = [&](int count) {
            std::size_t total = 0;
            for (int k = 0; k < particles.numFields(); ++k) {
                total += alignedSection(static_cast<std::size_t>(count) * particles.elementBytes(k));
            }
            return total;
        };
        // Counts first (both sides size the blocks), both directions in one
        // collective that also agrees on the largest block of any rank
        // (after readStatus's synchronisation: the blocks' call then makes
        // no collective of its own), then the blocks.
        const int lower = grid.neighbour(rank, d, -1);
        const int upper = grid.neighbour(rank, d, +1);
        std::array<ValueExchange, 2> counts{{{down, lower, upper, 0}, {up, upper, lower, 0}}};
        const std::size_t sendDownBytes = blockBytes(down), sendUpBytes = blockBytes(up);
        const auto agreedBlockBytes = static_cast<std::size_t>(
            exchangeValuesAgreeing(world, counts, static_cast<std::int64_t>(std::max(sendDownBytes, sendUpBytes))));
        const int fromUpper = static_cast<int>(counts[0].received);
        const int fromLower = static_cast<int>(counts[1].received);
        clock.mark("counts");

        const int next = stay + fromUpper + fromLower;
        particles.reserveNext(next);
        FieldCopyBatch stayers;
        for (int k = 0; k < particles.numFields(); ++k) {
            stayers.add(particles.field(k), particles.nextField(k), particles.elementBytes(k));
        }
        // One block per direction, a section per field; arrivals go after
        // the particles that stayed. Both blocks travel in one
        // exchangeAgreedBlocksInPlace call (no synchronisation or reduction
        // of the transport's own: the counts' collective agreed the sizes),
        // each half of sendBlock_/recvBlock_.
        const std::size_t recvUpperBytes = blockBytes(fromUpper), recvLowerBytes = blockBytes(fromLower);
        // Growing frees a buffer that a queued put may still read: the
        // reservation covers both halves before anything is queued.
        sendBlock_.reserve(std::max(sendDownBytes + sendUpBytes, std::size_t{16}));
        recvBlock_.reserve(std::max(recvUpperBytes + recvLowerBytes, std::size_t{16}));
        const transport::BlockExchange blocks[2] = {{sendBlock_.data(), sendDownBytes, lower, recvBlock_.data(),
                                                     recvUpperBytes, upper},
                                                    {sendBlock_.data() + sendDownBytes, sendUpBytes, upper,
                                                     recvBlock_.data() + recvUpperBytes, recvLowerBytes, lower}};
        // The stayers and both blocks' fields in one kernel.
        const auto packed = [&](int count, std::byte* block) {
            FieldCopyBatch batch;
            std::size_t offset = 0;
            for (int k = 0; k < particles.numFields(); ++k) {
                const std::size_t bytes = particles.elementBytes(k);
                batch.add(particles.field(k), block + offset, bytes);
                offset += alignedSection(static_cast<std::size_t>(count) * bytes);
            }
            return batch;
        };
        const FieldCopyBatch packDown = packed(down, sendBlock_.data());
        const FieldCopyBatch packUp = packed(up, sendBlock_.data() + sendDownBytes);
        const FieldCopyBatch::Segment moves[] = {{&stayers, stayList, stay},
                                                 {&packDown, downList, down},
                                                 {&packUp, upList, up}};
        FieldCopyBatch::gatherAll(moves, stream);
        const void* landed[2] = {nullptr, nullptr};
        transport.exchangeAgreedBlocksInPlace(blocks, landed, agreedBlockBytes, stream);
        // ... and both unpacked by one kernel, from where they landed.
        const auto unpacked = [&](const void* block, int arriving, int at) {
            FieldCopyBatch batch;
            std::size_t offset = 0;
            for (int k = 0; k < particles.numFields(); ++k) {
                const std::size_t bytes = particles.elementBytes(k);
                batch.add(static_cast<const std::byte*>(block) + offset,
                          static_cast<std::byte*>(particles.nextField(k)) + static_cast<std::size_t>(at) * bytes,
                          bytes);
                offset += alignedSection(static_cast<std::size_t>(arriving) * bytes);
            }
            return batch;
        };
        const FieldCopyBatch fromAbove = unpacked(landed[0], fromUpper, stay);
        const FieldCopyBatch fromBelow = unpacked(landed[1], fromLower, stay + fromUpper);
        const FieldCopyBatch::Segment arrivals[] = {{&fromAbove, nullptr, fromUpper}, {&fromBelow, nullptr, fromLower}};
        FieldCopyBatch::gatherAll(arrivals, stream);
        HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
        particles.swapNext(next, stream);
        clock.mark("blocks");
        stats.sent += down + up;
        stats.received += fromUpper + fromLower;
        n = next;
    }
    stats.particles = n;
    if (idField_ >= 0) {  // into the status' id sums, which the last cut's reset zeroed
        accumulateIdSums(particles.fieldAs<std::int64_t>(idField_), n,
                         reinterpret_cast<unsigned long long*>(status_.data() + kIdSumsAt), stream);
    }
    // The status with the id sums, in one copy (the wrap was checked already).
    HALOEX_CUDA_CHECK(cudaMemcpyAsync(statusHost_.data(), status_.data(), kMigrationReadback * sizeof(int),
                                      cudaMemcpyDeviceToHost, stream));
    copied_.record(stream);
    clock.mark("fingerprint");
    pending_ = true;
    return stats;
}

}  // namespace haloex::particles
