#pragma once
// Launchers of the particle kernels (migration and the device plan builder),
// callable from plain C++. Each enqueues on `stream` and returns at once;
// launch errors throw. Internal to haloex_particles.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "haloex/core/vec3.hpp"
#include "haloex/cuda/device_buffer.hpp"
#include "haloex/detail/particles/wrap_summary.hpp"
#include "haloex/plan/send_rule.hpp"

namespace haloex::particles::detail {

// A packed block holds one section per field, each starting 16-byte aligned.
inline std::size_t alignedSection(std::size_t bytes) { return (bytes + 15) / 16 * 16; }

// Several fields moved by one kernel: field f's element src goes to its
// element dst of out[f]. Up to kFieldCopies fields per launch.
inline constexpr int kFieldCopies = 8;
struct FieldCopies {
    int count = 0;
    const void* in[kFieldCopies] = {};
    void* out[kFieldCopies] = {};
    int bytes[kFieldCopies] = {};  // element size
};
// Collects (in, out, bytes) triples and launches copyFields for every
// kFieldCopies of them (one launch for the usual few fields).
class FieldCopyBatch {
public:
    void add(const void* in, void* out, std::size_t elementBytes);
    // out[j] = in[index[j]] (index null: in[j]) for j < count, every field.
    void gather(const int* index, int count, cudaStream_t stream) const;

    // Several gathers, each its own batch, index and count: one launch for
    // up to kGatherSegments of them whose batches each fit one launch (a
    // migration's stayers and both leaving lists; both arriving blocks), else
    // one gather after the other.
    struct Segment {
        const FieldCopyBatch* batch;
        const int* index;
        int count;
    };
    static void gatherAll(std::span<const Segment> segments, cudaStream_t stream);

private:
    std::vector<FieldCopies> batches_;
};
inline constexpr int kGatherSegments = 3;

// --- migration ----------------------------------------------------------------
enum Direction : std::uint8_t { kStay = 0, kDown = 1, kUp = 2, kTooFar = 3 };

// status slots: the first particle with a non-finite position, the first
// that moved more than one cell, and the lengths of the three lists; then,
// 8-byte aligned, the id sums (two unsigned 64-bit words), so that the
// migration's last read brings both in one copy.
enum MigrationStatus : int {
    kFirstNonFinite = 0,
    kFirstTooFar = 1,
    kCountStay = 2,
    kCountDown = 3,
    kCountUp = 4,
    kMigrationStatus = 5,
    kIdSumsAt = 6,
    kMigrationReadback = kIdSumsAt + 4
};

// Resets the status (the "first" slots to INT_MAX, the counts and the id
// sums after them to 0).
void resetMigrationStatus(int* status, cudaStream_t stream);

// The identity every slot starts from.
WrapSummary emptyWrapSummary();
// The wrap (into [0, L) as plan::wrapIntoBox does: double precision, then
// rounded to float, a value rounding up to L becomes 0; non-finite positions
// left as they are and reported) and accumulateIdSums (ids may be null) in one kernel, into
// slots[parity], which must hold the identity; the same kernel resets
// slots[1 - parity] for the next call. The caller alternates the parity and
// has read slots[1 - parity] before (stream order, or a wait on the host).
void wrapAndSummarise(Vec3f* x, int n, const double boxLength[3], const std::int64_t* ids, WrapSummary* slots,
                      int parity, cudaStream_t stream);

struct DimensionCut {
    int dim;
    int cells;  // ranks along dim
    int mine;   // this rank's coordinate along dim
    double length;
};
// direction[i] for the cut (ownership as plan::Decomposition::ownerRank,
// in double precision), then the stable lists of particles staying, going
// down and going up at lists, lists + n, lists + 2n, with their lengths in
// status[kCountStay..kCountUp]. temp grows as CUB needs.
void classifyAndSelect(const Vec3f* x, int n, const DimensionCut& cut, std::uint8_t* direction, int* lists, int* status,
                       cuda::DeviceBuffer<std::byte>& temp, cudaStream_t stream);
// The wrap (as wrapAndSummarise's) and classifyAndSelect with one kernel for both (a
// migration's first cut: two launches fewer); a non-finite particle is
// reported in status[kFirstNonFinite] alone, its direction kTooFar without a
// report of its own (the host refuses the non-finite position first).
void wrapClassifyAndSelect(Vec3f* x, int n, const double boxLength[3], const DimensionCut& cut, std::uint8_t* direction,
                           int* lists, int* status, cuda::DeviceBuffer<std::byte>& temp, cudaStream_t stream);

// sums[0] += sum of ids, sums[1] += sum of squared ids (both modulo 2^64)
// over n int64 ids: a fingerprint of the id set (conservation checks).
void accumulateIdSums(const std::int64_t* ids, int n, unsigned long long* sums, cudaStream_t stream);

// --- device plan builder ---------------------------------------------------------
inline constexpr int kMaxSourcePulses = 64;
// counters: selected entries, of them home atoms, then one per earlier pulse.
enum PlanCounter : int { kSelected = 0, kIndependent = 1, kFirstSource = 2, kPlanCounters = 2 + kMaxSourcePulses };

struct HaloSelection {
    const Vec3f* x;
    const std::uint8_t* image;  // bit d: shifted by +L_d on the way here
    const std::uint8_t* mask;   // zone masks (padding skipped)
    double length[3];           // box lengths (the shifts the images stand for)
    plan::PulseSendRule rule;   // the host planner's test (plan/send_rule.hpp)
};
struct SourceSlots {
    int count;  // earlier pulses
    int offset[kMaxSourcePulses];
    int size[kMaxSourcePulses];
};
// The candidates [first, first + count) within the halo (ascending, stable)
// into map, their number in counters[kSelected]; the selected entries are
// counted by where they come from: home (index < numHome) in
// counters[kIndependent], the slot of earlier pulse q in
// counters[kFirstSource + q] (q < slots.count; all written, nothing to zero
// first). An entry in neither is counted nowhere: the caller's sum of the
// counts then falls short of counters[kSelected].
void selectHaloCandidates(const HaloSelection& selection, int first, int count, int numHome, const SourceSlots& slots,
                          int* map, int* counters, cuda::DeviceBuffer<std::byte>& temp, cudaStream_t stream);
// The selected atoms as they travel: positions (unshifted), images and zone
// masks with this pulse's bits added.
void packHaloRecords(const int* map, int count, const Vec3f* x, const std::uint8_t* image, const std::uint8_t* mask,
                     std::uint8_t imageBit, std::uint8_t maskBit, Vec3f* outX, std::uint8_t* outImage,
                     std::uint8_t* outMask, cudaStream_t stream);
// The local arrays' home prefix in one kernel: for i < numHome the home
// positions, no image, zone 0 and each carried field's values; for
// numHome <= i < end padding (as fillPadding, fields zeroed). Fields beyond
// kFieldCopies take more calls, with copyPositions false for them.
void writeHomePrefix(const Vec3f* homePositions, int numHome, int end, bool copyPositions, Vec3f* x,
                     std::uint8_t* image, std::uint8_t* mask, const FieldCopies& fields, cudaStream_t stream);
// Padding entries [begin, end): NaN positions, no image, kPaddingMask, and
// element i of each fields.out[f] zeroed (fields.in unused; up to
// kFieldCopies fields, the rest zeroed by the caller).
void fillPadding(int begin, int end, Vec3f* x, std::uint8_t* image, std::uint8_t* mask, const FieldCopies& fields,
                 cudaStream_t stream);

}  // namespace haloex::particles::detail
