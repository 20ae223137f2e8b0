#pragma once
/// @file
/// The pulse: one message of a staged (dimension-by-dimension) halo exchange.
/// Particle plans (MD) and structured-grid plans (stencils) share this
/// description, so every transport moves both with the same machinery.
#include <cstdint>
#include <vector>

namespace haloex::plan {

/// Down: send to the lower neighbour (c_d - 1), receive from the upper one
/// (c_d + 1): this fills the region above the upper faces (MD's eighth shell).
/// Up: the mirror image (grids need both).
enum class Direction : std::int8_t { Down = -1, Up = +1 };

/// One step of a halo exchange: this rank sends some of its elements to one
/// neighbour along one dimension and receives from the opposite one.
struct Pulse {
    int id = 0;                             ///< position in the global pulse order, identical on every rank
    int dim = 0;                            ///< 0 = x, 1 = y, 2 = z
    int stage = 0;                          ///< k-th pulse of this dimension and direction (forwarding depth)
    Direction direction = Direction::Down;  ///< which neighbour gets the sends
    int sendRank = -1;                      ///< where this rank's packed data goes; -1 at a non-periodic edge
    int recvRank = -1;                      ///< who fills this rank's receive slot; -1 at a non-periodic edge
    /// Particles: packed coordinates get shiftSign * L[dim] added along dim
    /// (a periodic wrap); applied at pack time so box changes are honoured.
    int shiftSign = 0;

    /// Local indices of the elements to send ("index map"). Entries
    /// [0, numIndependent) need nothing received earlier (their values are
    /// below the home count); the rest wait for the pulses in waitsForward.
    std::vector<int> sendIndices;
    int numIndependent = 0;  ///< sendIndices[0, numIndependent) need nothing received earlier
    /// Plans built on the GPU (particles/device_plan_builder.hpp) keep the
    /// index map in device memory instead: deviceSendIndices points at its
    /// deviceSendCount entries and sendIndices stays empty. -1: host map.
    const int* deviceSendIndices = nullptr;
    int deviceSendCount = -1;  ///< entries of deviceSendIndices; -1: the map is sendIndices

    int recvCount = 0;  ///< elements this rank receives
    /// Contiguous placement (particles): received elements go to
    /// [recvOffset, recvOffset + recvCount). -1 when placement is scattered.
    int recvOffset = -1;
    /// Capacity reserved at recvOffset (recvCount rounded up to the plan's alignment).
    int recvCapacity = 0;
    /// Scattered placement (grids): local index of each received element.
    std::vector<int> recvIndices;

    /// Where the receiving peer (sendRank) places what this rank sends:
    /// its recvOffset for this pulse (particles) or its recvIndices (grids).
    int remoteRecvOffset = -1;
    std::vector<int> remoteRecvIndices;  ///< the peer's recvIndices for this pulse (grids)

    /// Ids of earlier pulses whose received data appear among the dependent
    /// entries: their arrival must be awaited before packing those entries.
    std::vector<int> waitsForward;
    /// Ids of later pulses that forwarded data received in this pulse: their
    /// reverse accumulation must finish before this pulse sends back.
    std::vector<int> waitsReverse;

    bool indexMapOnDevice() const { return deviceSendCount >= 0; }  ///< the send map is in device memory
    /// Elements this rank sends.
    int sendCount() const { return indexMapOnDevice() ? deviceSendCount : static_cast<int>(sendIndices.size()); }
    int numDependent() const { return sendCount() - numIndependent; }  ///< sends that wait for earlier pulses
    bool sends() const { return sendRank >= 0; }                       ///< this rank sends in it
    bool receives() const { return recvRank >= 0; }                    ///< this rank receives in it
};

/// Fills numIndependent, waitsForward and waitsReverse of every pulse.
/// receivedInPulse[i] is the id of the pulse that filled local element i, or
/// -1 for the rank's own data. Each pulse's sendIndices must list its own-data
/// entries first (throws Internal otherwise). Both plan kinds use this, so the
/// dependency split is computed one way.
void computeDependencies(std::vector<Pulse>& pulses, const std::vector<int>& receivedInPulse);

}  // namespace haloex::plan
