#pragma once
// Host-side set-up shared by the transports that launch the fused kernels
// (nvshmem, nccl-device): the per-kernel-kind counters, a pulse's record from
// the plan, the launch's blocks per pulse, and a pulse's name in diagnostics.
// What differs between them (paths, peer pointers, memory) stays theirs.
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fused_agreement.hpp"
#include "fused_args.hpp"
#include "haloex/core/error.hpp"
#include "haloex/detail/cuda/blocking_ops.hpp"
#include "haloex/cuda/check.hpp"
#include "haloex/cuda/device_buffer.hpp"
#include "haloex/plan/particle_plan.hpp"
#include "haloex/runtime/world.hpp"
#include "haloex/transport/coordinate_force_exchange.hpp"

namespace haloex::nvshmem_detail {

// Counters and sequence of one kernel kind (coordinates or forces).
struct FusedKernelState {
    cuda::DeviceBuffer<std::uint64_t> sequence;   // [1], starts at 1
    cuda::DeviceBuffer<std::uint64_t> doneWords;  // [kMaxPulses]
    cuda::DeviceBuffer<unsigned> pulseCounters;   // [kPulseCounterPhases * kMaxPulses]
    cuda::DeviceBuffer<unsigned> kernelCounter;   // [1]
    cuda::DeviceBuffer<std::uint64_t> trace;      // [kTraceWords] while timestamps are recorded, else empty
    std::uint64_t* tracePointer() const {
        return trace.size() > 0 ? const_cast<std::uint64_t*>(trace.data()) : nullptr;
    }
    void allocate() {
        sequence.resize(1);
        doneWords.resizeZeroed(kMaxPulses);
        pulseCounters.resizeZeroed(kPulseCounterPhases * kMaxPulses);
        kernelCounter.resizeZeroed(1);
        const std::uint64_t one = 1;
        cuda::copyToDeviceNow(sequence.data(), &one, sizeof one);
    }
};

// Device timestamps of both kernel kinds on (zeroed buffers; the launches'
// arguments point at them from now on) or off. Always possible: true.
inline bool recordFusedTimestamps(FusedKernelState& coordinates, FusedKernelState& forces, bool on) {
    for (FusedKernelState* state : {&coordinates, &forces}) {
        if (on && state->trace.size() == 0) {
            state->trace.resizeZeroed(kTraceWords);
        } else if (!on) {
            state->trace = cuda::DeviceBuffer<std::uint64_t>();
        }
    }
    return true;
}

// The last launches' timestamps for a plan of numPulses pulses (synchronises
// the device), or none when not recording.
inline std::optional<transport::ExchangeTimestamps> readFusedTimestamps(const FusedKernelState& coordinates,
                                                                        const FusedKernelState& forces, int numPulses) {
    if (coordinates.trace.size() == 0 || forces.trace.size() == 0) return std::nullopt;
    std::uint64_t words[2][kTraceWords];
    HALOEX_CUDA_CHECK(cudaDeviceSynchronize());
    HALOEX_CUDA_CHECK(cudaMemcpy(words[0], coordinates.trace.data(), sizeof words[0], cudaMemcpyDeviceToHost));
    HALOEX_CUDA_CHECK(cudaMemcpy(words[1], forces.trace.data(), sizeof words[1], cudaMemcpyDeviceToHost));
    transport::ExchangeTimestamps out;
    for (int kind = 0; kind < 2; ++kind) {
        auto& pulses = kind == 0 ? out.forward : out.reverse;
        for (int p = 0; p < std::min(numPulses, kMaxPulses); ++p) {
            const std::uint64_t* w = words[kind] + static_cast<std::ptrdiff_t>(p) * kTracePoints;
            pulses.push_back({w[kTraceStart], w[kTraceDependencies], w[kTraceSent], w[kTraceSignalled],
                              w[kTraceReceived], w[kTraceFinished]});
        }
        (kind == 0 ? out.forwardEnd : out.reverseEnd) = words[kind][kTraceKernelEnd];
    }
    return out;
}

// Pulse p's record as the plan gives it: counts, offsets, peers, shift and
// the dependency masks; the transport adds the paths and peer pointers.
inline PulseRecord pulseRecordOf(const plan::Pulse& pulse, const int* indexMap) {
    PulseRecord r;
    r.indexMap = indexMap;
    r.sendCount = pulse.sendCount();
    r.numIndependent = pulse.numIndependent;
    r.recvCount = pulse.recvCount;
    r.recvOffset = pulse.recvOffset;
    r.recvCapacity = pulse.recvCapacity;
    r.remoteRecvOffset = pulse.remoteRecvOffset;
    r.dim = pulse.dim;
    r.shiftSign = pulse.shiftSign;
    r.sendPe = pulse.sendRank;
    r.recvPe = pulse.recvRank;
    for (int q : pulse.waitsForward) r.waitsForward |= std::uint64_t{1} << q;
    for (int q : pulse.waitsReverse) r.waitsReverse |= std::uint64_t{1} << q;
    return r;
}

// Marks the pulses whose done word some other pulse's reverse waits for
// (PulseRecord::publishesDone): q of every record's waitsReverse. Both plan
// builders derive waitsReverse from waitsForward, so these are the pulses
// that forwarded others' atoms; read from the plan, the kernel does not rely
// on that.
inline void markDonePublishers(std::vector<PulseRecord>& records) {
    for (const PulseRecord& r : records) {
        for (std::uint64_t mask = r.waitsReverse; mask != 0; mask &= mask - 1) {
            records[static_cast<std::size_t>(__builtin_ctzll(mask))].publishesDone = true;
        }
    }
}

// Blocks per pulse of the fused launches, from what the ranks agreed
// (FusedAgreement: the same on every rank). Every block spins while
// it waits, so all must be resident at once: the grid is bounded by
// occupancy (`maxResidentBlocks` of the kernels on this device), shared by
// the ranks on this GPU, and kept small enough to leave the SMs to compute.
// Within that, one element per thread: each is a dependent pair of loads
// (index, value) or a load over NVLink (~1-2 us), and a thread that has
// several does them one after the other: at 11k atoms per GPU on 2 x H200,
// 4 atoms per thread cost 1.3 us of the coordinate exchange and 3.7 us of
// the force exchange. `transport` names it in the error.
inline int fusedBlocksPerPulse(const FusedAgreement& agreed, const runtime::World& world, int maxResidentBlocks,
                               const std::string& transport) {
    const int work = agreed.largestPulseWork;
    const int ranksPerGpu = std::max(1, world.localSize() / std::max(1, cuda::deviceCount()));
    const int maxPulses = agreed.maxPulses;
    const int resident = maxResidentBlocks / ranksPerGpu;
    int device = 0, sms = 0;
    HALOEX_CUDA_CHECK(cudaGetDevice(&device));
    HALOEX_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    const int bySms = std::max(1, sms / (4 * ranksPerGpu) / std::max(1, maxPulses));
    const int byWork = (work + kFusedThreads - 1) / kFusedThreads;
    const int blocks = std::max(1, std::min({byWork, bySms, resident / std::max(1, maxPulses)}));
    if (blocks * std::max(1, maxPulses) > resident) {
        throwError(ErrorKind::Internal,
                   fmt::format("the {} transport's fused kernels cannot have all their blocks resident on this GPU",
                               transport));
    }
    return blocks;
}

// Whether the coordinate pulses signal per sending block
// (FusedArgs::coordBlockWords; docs/nvshmem.md, "Signals per block"): asked
// for on every rank (FusedAgreement), and given where the blocks per pulse
// fit the receivers' words.
inline bool blockSignalsGiven(const FusedAgreement& agreed, int blocksPerPulse) {
    return agreed.blockSignalsAsked && blocksPerPulse <= kMaxSignalBlocks;
}

// Whether a pulse of this rank sends or receives coordinates by the direct
// or bulk path: only those signal per block (the put path keeps one signal
// per pulse), so a rank with none (all put, or no pulse) has no word to
// store or wait for.
inline bool movesCoordinatesDirectly(const std::vector<PulseRecord>& records) {
    return std::any_of(records.begin(), records.end(),
                       [](const PulseRecord& r) { return r.sendPath != PathKind::Put || r.recvPath != PathKind::Put; });
}

// How a transport's describe() names the coordinates' signalling.
inline std::string signalsNote(bool blockSignals) {
    return blockSignals ? "coordinates signalled per sending block (HALOEX_EXCHANGE_SIGNALS=block)"
                        : "coordinates signalled once per pulse";
}

// Each pulse's periodic shift for `box` into a forward's arguments
// (pulseShift: the bits the home stores use too).
inline void setForwardShifts(FusedArgs& args, const plan::ParticleHaloPlan& plan, const plan::Box& box) {
    for (std::size_t p = 0; p < plan.pulses.size(); ++p) {
        const plan::Pulse& pulse = plan.pulses[p];
        args.shift[p] = pulseShift(pulse.shiftSign, box.length[pulse.dim]);
    }
}

// The fused transports' clearForces: the home forces (and the padding before
// the first slot) zeroed; the halo slots are cleared by the next forward,
// after the peers pulled them.
inline void clearHomeForces(Vec3f* f, const plan::ParticleHaloPlan& plan, cudaStream_t stream) {
    const int upTo = plan.pulses.empty() ? plan.numLocal : plan.pulses.front().recvOffset;
    if (upTo > 0) HALOEX_CUDA_CHECK(cudaMemsetAsync(f, 0, upTo * sizeof(Vec3f), stream));
}

// "p (dimension x, stage s)" for the wait diagnostics; p alone outside the plan.
inline std::string describeFusedPulse(const plan::ParticleHaloPlan& plan, int p) {
    if (p < 0 || p >= static_cast<int>(plan.pulses.size())) return fmt::format("{}", p);
    const plan::Pulse& pulse = plan.pulses[static_cast<std::size_t>(p)];
    return fmt::format("{} (dimension {}, stage {})", p, "xyz"[pulse.dim], pulse.stage);
}

}  // namespace haloex::nvshmem_detail
