#pragma once
/// @file
/// Particle migration on the device (Cabana's Distributor idiom): after the
/// particles of a rank have moved for a while, every one is wrapped into the
/// periodic box and sent to the rank whose cell now holds it, with all its
/// fields. Library code: any domain-decomposed particle program needs it.
///
/// Dimension by dimension (x, y, z; undecomposed dimensions only wrap), a
/// particle that left this rank's cell along d goes to the lower or upper
/// neighbour along d; later dimensions forward what earlier ones delivered,
/// so diagonal moves arrive without diagonal messages. A particle may cross
/// at most one cell per dimension between two migrations (the step between
/// searches keeps moves far below a cell); more throws InvalidInput naming
/// it. Ownership is decided exactly as plan::Decomposition::ownerRank decides
/// it for the same (float) position, so host and device partitions agree.
///
/// Data stays on the device: the selection runs in kernels (CUB), the
/// particles travel through the transport's exchangeBlocksInPlace (both
/// directions of a dimension in one call, unpacked from where they landed);
/// only counts reach the host (one small copy and one World message per
/// direction). Particles
/// that stay keep their order; arrivals follow in the order received.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "haloex/core/part_times.hpp"
#include "haloex/cuda/device_buffer.hpp"
#include "haloex/particles/particle_store.hpp"
#include "haloex/detail/particles/wrap_summary.hpp"
#include "haloex/plan/decomposition.hpp"
#include "haloex/runtime/world.hpp"
#include "haloex/transport/block_transport.hpp"

namespace haloex::particles {

/// What a migration did on this rank.
struct MigrationStats {
    int particles = 0;  ///< on this rank after the migration
    int sent = 0;       ///< particles this rank sent (summed over directions)
    int received = 0;   ///< particles this rank received (summed over directions)
    /// With an id field: the sum and the sum of squares of this rank's ids
    /// afterwards (modulo 2^64), a fingerprint that the caller's reduction
    /// over the ranks compares with the whole id set's (lost or duplicated
    /// particles change it even where the count stays the same).
    std::uint64_t idSum = 0;
    std::uint64_t idSquareSum = 0;  ///< see idSum
};

/// Moves particles to the ranks whose cells hold them, on the device (see
/// the file's description).
class Migrator {
public:
    /// `idField`: a field of std::int64_t global ids, named in error messages
    /// (-1: none; messages give the local index instead).
    explicit Migrator(int idField = -1) : idField_(idField) {}

    /// Collective over `world` (the transport's World). Enqueues on `stream`
    /// and synchronises it (counts are read on the host): beginMigration,
    /// then completeMigration.
    MigrationStats migrate(ParticleStore& particles, const plan::Decomposition& decomposition, runtime::World& world,
                           transport::BlockTransport& transport, cudaStream_t stream);

    /// The same in two halves, for callers that synchronise the stream anyway
    /// soon after (a search step does, several times): beginMigration moves the
    /// particles (it synchronises only where a decomposed dimension needs the
    /// counts on the host) and leaves the last checks and the id fingerprint
    /// in flight; completeMigration waits for them -- at once if the stream
    /// was synchronised since -- throws InvalidInput for a non-finite
    /// position, and fills `stats`' idSum and idSquareSum. With no decomposed
    /// dimension (one rank along each) the particles are only wrapped and
    /// nothing waits in between, which saves a search step two host round
    /// trips. Call completeMigration before the next beginMigration.
    MigrationStats beginMigration(ParticleStore& particles, const plan::Decomposition& decomposition,
                                  runtime::World& world, transport::BlockTransport& transport, cudaStream_t stream);
    /// The second half of a migration begun by beginMigration (see there).
    void completeMigration(MigrationStats& stats, const ParticleStore& particles, int rank);

    /// Host wall time of the last beginMigration by part: "wrap" (no
    /// decomposed dimension), else per decomposed dimension "classify" (the
    /// classification and the host's read of its counts), "counts" (the
    /// collective that exchanges them: it waits for the neighbours) and
    /// "blocks" (pack, exchange, unpack and the wait for them), then
    /// "fingerprint" (the id sums and the last checks queued).
    const PartTimes& partsMs() const { return parts_; }

private:
    /// Global id (or local index) of particle i, for messages (reads the device).
    std::string nameOf(const ParticleStore& particles, int i) const;
    [[noreturn]] void throwNonFinite(const ParticleStore& particles, int i, int rank) const;

    void beginWrapOnly(ParticleStore& particles, const double lengths[3], cudaStream_t stream);

    int idField_;
    PartTimes parts_;
    bool pending_ = false;                        ///< a beginMigration awaits its completeMigration
    cuda::DeviceBuffer<std::uint8_t> direction_;  ///< per particle: stay, down, up, invalid
    cuda::DeviceBuffer<int> selected_;            ///< stayers, then leavers down, then up
    cuda::DeviceBuffer<int> status_;              ///< device counters, the first bad particle, the id sums
    cuda::DeviceBuffer<std::byte> sendBlock_, recvBlock_, cubTemp_;
    /// The status as the host reads it: at each cut, and last (copied
    /// asynchronously, with the id sums; `copied_` marks their arrival) for
    /// completeMigration, whose kFirstNonFinite is still the wrap's where no
    /// dimension was cut.
    cuda::PinnedBuffer<int> statusHost_;
    cuda::Event copied_;
    /// No decomposed dimension: the wrap's summary, alternating between two
    /// device slots (detail::WrapSummary, 24 bytes each).
    bool wrapOnly_ = false;
    int wrapParity_ = 0;
    cuda::DeviceBuffer<detail::WrapSummary> wrapSlots_;
    cuda::PinnedBuffer<detail::WrapSummary> wrapSummaryHost_;
};

}  // namespace haloex::particles
