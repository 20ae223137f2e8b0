#pragma once
/// @file
/// The staged-forwarding halo plan built on the GPU from device-resident
/// positions: index maps per pulse with forwarding, dependency split, receive
/// offsets and zone masks, exactly as plan::ParticlePlanBuilder builds them on
/// the host (which stays the oracle: same send set per pulse, same order,
/// counts and offsets). Library code: any particle code's search step needs it.
///
/// Pulse by pulse (in the decomposition's order): a kernel selects the
/// candidates within rlist of this rank's lower face (home atoms and, for
/// stage 0, what earlier pulses delivered; for later stages only what the
/// previous pulse of the dimension delivered), with the planner's corner and
/// edge pruning (plan::sendsAtom, the same inline test), CUB compacts them into the
/// index map, the count goes to the receiver over the World, and the selected
/// atoms (position, periodic image, zone mask and the caller's carried fields)
/// travel through the transport's exchangeBlocksInPlace into the receiver's
/// local arrays (unpacked from where they landed). Selection compares in double precision the float position plus the
/// periodic shifts it has collected, which is what the host builder compares
/// for the same float positions.
///
/// The plan it returns keeps its index maps and zone masks in device memory
/// owned by this builder (plan::Pulse::deviceSendIndices,
/// plan::ParticleHaloPlan::deviceZoneMask), valid until the next build().
/// Transports copy what they need in setPlan.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "haloex/core/part_times.hpp"
#include "haloex/cuda/device_buffer.hpp"
#include "haloex/plan/decomposition.hpp"
#include "haloex/plan/particle_plan.hpp"
#include "haloex/runtime/world.hpp"
#include "haloex/transport/block_transport.hpp"

namespace haloex::particles {

/// A per-atom device array of `elementBytes` bytes per atom.
struct DeviceField {
    const void* data = nullptr;    ///< the array (device memory)
    std::size_t elementBytes = 0;  ///< bytes per atom
};

/// Builds a rank's particle halo plan from device-resident positions, equal
/// to the host planner's element by element (see the file's description).
class DevicePlanBuilder {
public:
    /// Collective over `world` (the transport's World). homePositions: this
    /// rank's numHome atoms, wrapped into its cell (particles::Migrator leaves
    /// them so). carried: per-home-atom fields the halo copies need too (e.g.
    /// charges); localField(k) holds them for every local atom afterwards.
    /// alignment: receive slots start at multiples of this many atoms.
    /// Enqueues on `stream`; synchronises it where the decomposition has
    /// pulses (their counts are read on the host). Without one (one rank
    /// along every dimension) the local arrays are only filled in `stream`
    /// order: the host never waits, and a caller that synchronises soon after
    /// anyway (a search step does) saves a round trip.
    const plan::ParticleHaloPlan& build(const plan::Decomposition& decomposition, const Vec3f* homePositions,
                                        int numHome, std::span<const DeviceField> carried, int alignment,
                                        runtime::World& world, transport::BlockTransport& transport,
                                        cudaStream_t stream);

    const plan::ParticleHaloPlan& plan() const { return plan_; }  ///< the last plan built
    /// Device arrays of plan().numLocal entries (padding: NaN positions,
    /// kPaddingMask, zero fields):
    const Vec3f* localPositions() const;           ///< unshifted (as on the owner)
    const std::uint8_t* localImages() const;       ///< bit d: shifted by +L_d on the way here
    const plan::ZoneMask* localZoneMasks() const;  ///< the plan's zone masks
    const void* localField(int k) const;           ///< carried field `k` of every local atom

    /// Host wall time of the last build by part: "home" (the home atoms
    /// written), then per pulse "select" (the selection and the host's read
    /// of its counts), "counts" (the collective that exchanges them: it waits
    /// for the neighbours) and "blocks" (pack, exchange, unpack queued), and
    /// "synchronise" (the wait for the last pulse's atoms).
    const PartTimes& partsMs() const { return parts_; }

private:
    /// Room for `atoms` local atoms in every local array, keeping the first
    /// `keep` atoms' contents.
    void reserveLocal(int atoms, int keep, cudaStream_t stream);
    void reserveIndices(std::size_t entries, std::size_t keep, cudaStream_t stream);

    plan::ParticleHaloPlan plan_;
    PartTimes parts_;
    std::vector<std::size_t> fieldBytes_;
    int capacity_ = 0;
    cuda::DeviceBuffer<Vec3f> positions_;
    cuda::DeviceBuffer<std::uint8_t> images_, masks_;
    std::vector<cuda::DeviceBuffer<std::byte>> fields_;
    cuda::DeviceBuffer<int> indices_;   ///< every pulse's index map, one after the other
    cuda::DeviceBuffer<int> counters_;  ///< selected, independent, per source pulse
    cuda::DeviceBuffer<std::byte> sendBlock_, recvBlock_, cubTemp_;
    cuda::PinnedBuffer<int> countersHost_;
};

}  // namespace haloex::particles
