#pragma once
// Kernel-side description of the fused exchange: one record per pulse (in
// device memory, rebuilt at setPlan) and the per-launch arguments, for an
// element type T (Vec3f: coordinates forward, forces back). Free of NVSHMEM:
// the kernels (fused_exchange.cuh) take the peer access as a policy.
#include <cstdint>

#include "haloex/core/vec3.hpp"
#include "haloex/transport/coordinate_force_exchange.hpp"
#include "wait_diagnostics.hpp"

namespace haloex::nvshmem_detail {

inline constexpr int kMaxPulses = 32;
// Block counters per pulse: a reverse that adds the caller's force records
// counts its blocks twice (fusedReverse).
inline constexpr int kPulseCounterPhases = 2;
inline constexpr int kFusedThreads = 256;  // threads per block of the fused kernels
// Signals per block (HALOEX_EXCHANGE_SIGNALS=block, docs/nvshmem.md): each
// sending block of a coordinate pulse stores its own word on the receiver,
// which has kMaxSignalBlocks words per pulse; more blocks per pulse than
// that keep one signal per pulse.
inline constexpr int kMaxSignalBlocks = 64;
static_assert(kMaxSignalBlocks <= kFusedThreads, "one receiving thread per word");

// How data reaches a peer (chosen per peer at setPlan).
enum class PathKind : int {
    Direct = 0,  // NVLink/P2P: plain stores into (loads from) the peer's arrays
    Tma = 1,     // NVLink/P2P: warp-level bulk copies (cp.async.bulk)
    Put = 2,     // symmetric staging + nvshmem put-with-signal (what InfiniBand needs)
};

// Device timestamps (CoordinateForceExchange::recordTimestamps): per pulse,
// kTracePoints values in the order of transport::PulseTimestamps, then one
// row for the kernel (kTraceKernelEnd). Each is written by one chosen thread
// with a plain store, so every launch overwrites the last without a reset.
enum TracePoint : int {
    kTraceStart = 0,
    kTraceDependencies = 1,
    kTraceSent = 2,
    kTraceSignalled = 3,
    kTraceReceived = 4,
    kTraceFinished = 5,
    kTracePoints = 6,
};
inline constexpr int kTraceKernelEnd = kMaxPulses * kTracePoints;  // the kernel's last block ended
inline constexpr int kTraceWords = kTraceKernelEnd + 1;

template <class T>
struct PulseRecordOf {
    const int* indexMap = nullptr;  // this rank's send entries (device)
    int sendCount = 0;
    int numIndependent = 0;
    int recvCount = 0;
    int recvOffset = 0;
    int recvCapacity = 0;
    int remoteRecvOffset = 0;  // where sendPe places what this rank sends
    int dim = 0;
    int shiftSign = 0;
    int sendPe = -1;                       // coordinates go to sendPe; forces come back from it
    int recvPe = -1;                       // coordinates come from recvPe; forces go back to it
    PathKind sendPath = PathKind::Direct;  // towards sendPe
    PathKind recvPath = PathKind::Direct;  // towards recvPe
    // NVLink views of the peers' symmetric arrays (null on the put path).
    T* peerX = nullptr;                        // sendPe's coordinates
    const T* peerF = nullptr;                  // sendPe's forces (pulled)
    std::uint64_t* peerCoordSignal = nullptr;  // sendPe's coordinate signal of this pulse
    std::uint64_t* peerForceSignal = nullptr;  // recvPe's force signal of this pulse
    // Signals per block: sendPe's kMaxSignalBlocks words of this pulse (direct
    // and bulk paths; null otherwise).
    std::uint64_t* peerCoordBlockWords = nullptr;
    std::uint64_t waitsForward = 0;  // bit q: pulse q's receive before the dependent entries
    std::uint64_t waitsReverse = 0;  // bit q: pulse q's accumulation before sending forces back
    // Some pulse's waitsReverse holds this one: the reverse publishes this
    // pulse's done word (markDonePublishers; no waiter, no block count).
    bool publishesDone = false;
};

// The periodic shift a pulse adds along its dimension: shiftSign times the
// box length there, rounded once to float. The fused forward's
// (FusedArgsOf::shift) and the home stores' (HomeCoordinateStores::Pulse::
// shift) both come from here, so both store the same bits.
inline float pulseShift(int shiftSign, double boxLength) { return static_cast<float>(shiftSign * boxLength); }

template <class T>
struct FusedArgsOf {
    const PulseRecordOf<T>* pulses = nullptr;
    int numPulses = 0;
    // The pulses this launch moves: [firstPulse, firstPulse + gridDim.y), one
    // per blockIdx.y. The fused launch moves them all; the per-pulse ablation
    // (NvshmemLaunch::PerPulse) launches one pulse at a time.
    int firstPulse = 0;
    // Whether this launch completes the exchange: then its last block
    // advances `sequence`, once per exchange whatever the number of launches.
    bool completesExchange = true;
    // Forward only: the caller's kernel before this launch stored every
    // pulse's independent entries (home atoms) into the receivers already
    // (transport::HomeCoordinateStores); the forwarded entries are left.
    bool homeStored = false;
    // Forward only: bit p set -- the caller's kernel also signalled pulse p's
    // receiver (haloex::device::signalHomeStores), so this launch does not.
    unsigned callerSignalled = 0;
    // Forward: each received element e also goes to the caller's records
    // (CoordinateForceExchange::copyReceivedCoordinates); reverse: each halo
    // element's record is added into its force first, then zeroed
    // (addHaloForcesFromRecords). Null records: none.
    transport::HaloRecords copyRecords;
    transport::HaloRecords forceRecords;
    T* x = nullptr;                        // symmetric
    T* f = nullptr;                        // symmetric
    T* staging = nullptr;                  // symmetric, coordinate send slots (put path)
    T* forceStaging = nullptr;             // symmetric, force receive slots (put path)
    int stagingStride = 0;                 // atoms per slot (same on every rank)
    std::uint64_t* coordSignal = nullptr;  // symmetric [kMaxPulses]
    // Signals per block: this rank's words [kMaxPulses][kMaxSignalBlocks],
    // word b of pulse p stored by the sender's block b; null: one signal per
    // pulse (coordSignal), stored by the sender's last block.
    std::uint64_t* coordBlockWords = nullptr;
    std::uint64_t* forceSignal = nullptr;    // symmetric [kMaxPulses]
    std::uint64_t* sequence = nullptr;       // device: the exchange counter of this kernel kind
    std::uint64_t* doneWords = nullptr;      // device [kMaxPulses]: pulse's forces accumulated (= sequence)
    unsigned* pulseBlockCounters = nullptr;  // device [kPulseCounterPhases * kMaxPulses]
    unsigned* kernelBlockCounter = nullptr;  // device [1]
    float shift[kMaxPulses] = {};            // per pulse, shiftSign * L[dim] rounded once to float
    WaitDiagnostics* diagnostics = nullptr;
    int* abortFlag = nullptr;
    std::uint64_t timeoutNs = 0;
    int myPe = 0;
    int withholdPulse = -1;          // test hook: never signal this pulse (provokes a timeout)
    std::uint64_t* trace = nullptr;  // device [kTraceWords] of this kernel kind, or null: no timestamps
};

using PulseRecord = PulseRecordOf<Vec3f>;
using FusedArgs = FusedArgsOf<Vec3f>;

}  // namespace haloex::nvshmem_detail
