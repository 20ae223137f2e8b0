#pragma once
/// @file
/// The staged-forwarding halo plan of one rank for particles (docs/planner.md).
///
/// Local atom layout: [0, numHome) home atoms, then one receive slot per pulse
/// in global pulse order at Pulse::recvOffset (each slot's start aligned to
/// `alignment` atoms; padding atoms carry kPaddingMask and must be skipped by
/// the pair search).
///
/// Building a plan needs the atoms that neighbours forward, so it is a
/// step-wise process: for each pulse in order, selectSend() then receive()
/// with what the upper neighbour sent. buildParticlePlansInProcess() drives
/// all ranks of one process; runtime/plan_exchange.hpp drives one rank over a
/// World (MPI or threads).
#include <cstdint>
#include <span>
#include <vector>

#include "haloex/core/vec3.hpp"
#include "haloex/plan/decomposition.hpp"
#include "haloex/plan/pulse.hpp"

namespace haloex::plan {

/// Zone mask: bit d is set when the atom arrived through a pulse of dimension d.
/// Rank r computes pair (i, j) iff (mask_i & mask_j) == 0.
using ZoneMask = std::uint8_t;
inline constexpr ZoneMask kPaddingMask = 0x80;  ///< alignment padding: not an atom
/// Whether this rank computes the pair of atoms with masks `a` and `b` (no
/// padding, no common dimension).
inline constexpr bool zonePairComputed(ZoneMask a, ZoneMask b) { return ((a | b) & kPaddingMask) == 0 && (a & b) == 0; }

/// One rank's particle halo: the pulses that fill its receive slots after its home atoms.
struct ParticleHaloPlan {
    int rank = 0;                    ///< the rank
    Int3 coord{0, 0, 0};             ///< its place in the rank grid
    int numHome = 0;                 ///< its own atoms: local indices [0, numHome)
    int numLocal = 0;                ///< home + all receive slots (with padding)
    int alignment = 1;               ///< receive slots start at multiples of this many atoms
    std::vector<Pulse> pulses;       ///< in order; contiguous receives at each pulse's recvOffset
    std::vector<ZoneMask> zoneMask;  ///< one per local atom
    /// Pulse that filled each local atom (-1 for home atoms and padding).
    std::vector<int> receivedInPulse;
    /// Plans built on the GPU (particles/device_plan_builder.hpp): the zone
    /// masks (numLocal) and every pulse's index map live in device memory,
    /// owned by the builder until its next build; zoneMask and
    /// receivedInPulse are then empty.
    const ZoneMask* deviceZoneMask = nullptr;
    bool onDevice() const { return deviceZoneMask != nullptr; }  ///< built on the GPU

    int numHalo() const;          ///< received atoms, padding excluded
    int maxSendCount() const;     ///< the most atoms one pulse sends
    int maxRecvCapacity() const;  ///< the most receive slots one pulse has
};

/// What one rank sends in one pulse, in index-map order: positions already
/// shifted into the receiver's frame, and masks already carrying the pulse's dim.
struct OutgoingAtoms {
    std::vector<Vec3d> positions;  ///< shifted into the receiver's frame
    std::vector<ZoneMask> masks;   ///< with the pulse's dimension set
};

/// Builds one rank's plan pulse by pulse (see the file's description).
class ParticlePlanBuilder {
public:
    /// homePositions must lie in this rank's cell (see Decomposition::ownerRank).
    ParticlePlanBuilder(const Decomposition& decomposition, int rank, std::span<const Vec3d> homePositions,
                        int alignment = 1);

    int numPulses() const;  ///< the decomposition's pulses
    /// Chooses the atoms to send in pulse p (pulses must be taken in order).
    OutgoingAtoms selectSend(int p);
    /// Appends what the upper neighbour sent in pulse p.
    void receive(int p, std::span<const Vec3d> positions, std::span<const ZoneMask> masks);
    /// The receiver's recvOffset for this rank's pulse p (learned from the peer).
    void setRemoteRecvOffset(int p, int offset);
    /// This rank's receive offset of pulse p (valid after receive(p)).
    int recvOffset(int p) const;
    /// Local positions so far (home + received), e.g. for checks.
    const std::vector<Vec3d>& localPositions() const { return positions_; }
    /// Completes dependencies and returns the plan. Call after all receives.
    ParticleHaloPlan finish();

private:
    const Decomposition& decomposition_;
    ParticleHaloPlan plan_;
    std::vector<Vec3d> positions_;
    int nextSend_ = 0;
    int nextReceive_ = 0;
};

/// Plans (and the resulting local positions) of every rank, computed in one
/// process. homePositions[r] are rank r's home atoms.
struct InProcessPlans {
    std::vector<ParticleHaloPlan> plans;             ///< by rank
    std::vector<std::vector<Vec3d>> localPositions;  ///< by rank: home, then received
};
/// Every rank's plan, built in this process (see InProcessPlans).
InProcessPlans buildParticlePlansInProcess(const Decomposition& decomposition,
                                           const std::vector<std::vector<Vec3d>>& homePositions, int alignment = 1);

/// Splits atoms among ranks by cell. Returns, for each rank, the indices of its
/// atoms in ascending order. Positions must be wrapped into the box
/// (wrapPositions); one outside it throws InvalidInput naming the atom.
std::vector<std::vector<int>> partitionAtoms(const Decomposition& decomposition, std::span<const Vec3d> positions);

}  // namespace haloex::plan
