// The fused, GPU-initiated particle transport over load/store peer memory
// (peer_fused_transport.hpp): the nvshmem design's kernels
// (fused/fused_exchange.cuh) instantiated with LoadStorePeers, their arrays
// and signals in PeerMemory windows; the search-step blocks copied into the
// peers' staging windows by a kernel and signalled there; static data through
// the host.
#include "peer_fused_transport.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <optional>
#include <span>
#include <vector>

#include "haloex/core/error.hpp"
#include "haloex/detail/cuda/blocking_ops.hpp"
#include "haloex/cuda/check.hpp"
#include "haloex/cuda/device_buffer.hpp"
#include "haloex/transport/peer_memory.hpp"
#include "forwarding_exchange.hpp"
#include "haloex/transport/coordinate_force_exchange.hpp"
#include "fused_setup.hpp"
#include "halo_kernels.hpp"
#include "home_stores.hpp"
#include "halo_records.hpp"
#include "loadstore_kernels.hpp"
#include "search_blocks.hpp"
#include "slotted_blocks.hpp"
#include "watchdog.hpp"

namespace haloex::transport {
namespace {

using namespace nvshmem_detail;

// The signals window: coordinates' (kMaxPulses), forces' (kMaxPulses), then
// the search-step blocks' (kMaxBlocksPerCall), then the coordinate words per block.
constexpr std::size_t kBlockSignalsAt = 2 * kMaxPulses;
// After those, each pulse's words of coordinate signals per block (kMaxSignalBlocks).
constexpr std::size_t kCoordBlockWordsAt = kBlockSignalsAt + kMaxBlocksPerCall;

class PeerFusedTransport final : public BlockTransport,
                                 public HomeStoreCalls<PeerFusedTransport>,
                                 public HaloRecordCalls {
public:
    PeerFusedTransport(runtime::World& world, const TransportOptions& options, ArrayMemory windows,
                       PeerAllocator allocate, std::string name)
        : world_(world), windows_(windows), allocate_(std::move(allocate)), name_(std::move(name)),
          timeoutNs_(static_cast<std::uint64_t>(waitTimeoutSeconds(options.waitTimeoutSeconds) * 1e9)) {
        if (options.memorySpace.value_or(MemorySpace::Device) != MemorySpace::Device) {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("the {} transport keeps coordinates and forces in device memory", name_));
        }
        if (options.nvshmemPath != "auto" && options.nvshmemPath != "direct") {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("--nvshmem-path {} is an nvshmem setting; the {} transport stores directly into "
                                   "its peers' windows (leave the path at auto)",
                                   options.nvshmemPath, name_));
        }
        // The signals live as long as the transport: only the arrays grow.
        // Coordinates' and forces' per pulse, then the search-step blocks'.
        signals_ =
            allocate_(world_, (kCoordBlockWordsAt + std::size_t{kMaxPulses} * kMaxSignalBlocks) * sizeof(std::uint64_t),
                      name_ + " transport's signals");
        coordState_.allocate();
        forceState_.allocate();
        diagnostics_.allocate(1, cudaHostAllocMapped);
        *diagnostics_.data() = WaitDiagnostics{};
        HALOEX_CUDA_CHECK(
            cudaHostGetDevicePointer(reinterpret_cast<void**>(&diagnosticsDevice_), diagnostics_.data(), 0));
        abortFlag_.resize(1);
        cuda::fillBytesNow(abortFlag_.data(), 0, sizeof(int));
        watchdog_ = std::make_unique<Watchdog>(
            world_, diagnostics_.data(),
            [this](const WaitDiagnostics& d) { return describeTimeout(d, describePulse(d.pulse).c_str()); }, name_);
    }

    ~PeerFusedTransport() override {
        watchdog_.reset();
        // No kernel may still store into a peer's window when the windows go
        // (their release is collective, in the same order on every rank).
        if (std::uncaught_exceptions() == 0) cudaDeviceSynchronize();
    }

    std::string name() const override { return name_; }
    MemorySpace memorySpace() const override { return MemorySpace::Device; }
    // Peers store into the caller's coordinates and read its forces.
    ArrayMemory arrayMemory() const override { return windows_; }
    std::unique_ptr<CoordinateForceExchange> makeCoordinateForceExchange() override;
    const TransportCounters& counters() const { return counters_; }
    std::vector<std::string> describe() const override { return notes_; }

    // The coordinate/force exchange (PeerFusedCoordinateForceExchange below):
    // the fused kernels on the caller's windows.
    void bindArrays(const plan::ParticleHaloPlan& plan, const SharedArray& coordinates, const SharedArray& forces) {
        dropHaloRecords();  // they were for the last plan's elements, also if this bind fails
        const int numPulses = static_cast<int>(plan.pulses.size());
        if (numPulses > kMaxPulses) {
            throwError(ErrorKind::Plan, fmt::format("the plan has {} pulses; the {} transport supports at most {}",
                                                    numPulses, name_, kMaxPulses));
        }
        if (plan.alignment % 4 != 0 && numPulses > 0) {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("the {} transport needs receive slots aligned to 4 atoms; the plan has alignment {}",
                                   name_, plan.alignment));
        }
        for (const SharedArray* a : {&coordinates, &forces}) {
            if (!a->peer) {
                throwError(ErrorKind::InvalidInput,
                           fmt::format("the {} transport's peers store into the caller's coordinates and read its "
                                       "forces: allocate both in its windows (allocateCollective for this transport)",
                                       name_));
            }
        }
        plan_ = plan;
        const bool reallocated = coordinates.allocation != xAllocation_ || forces.allocation != fAllocation_;
        coordinates_ = coordinates;
        forces_ = forces;
        xAllocation_ = coordinates.allocation;
        fAllocation_ = forces.allocation;
        maps_.upload(plan_);
        uploadPulses();
        HALOEX_CUDA_CHECK(cudaDeviceSynchronize());
        // New windows: every rank's are in place before any kernel stores
        // into a peer's. With the same windows nothing is needed (as for
        // nvshmem: the peers' first stores go to halo slots nothing here
        // reads until this rank's own forward waits for them).
        // (Every rank decides alike: the collective allocator reallocates the
        // caller's windows on every rank together.)
        if (reallocated) world_.barrier();
    }

    void forwardCoordinates(const plan::Box& box, StreamHandle stream) { forward(box, stream, false, 0u); }

    void forward(const plan::Box& box, StreamHandle stream, bool homeStored, unsigned callerSignalled) {
        throwIfTimedOut();
        ++counters_.forwardCalls;
        if (plan_.pulses.empty()) return;
        FusedArgs args = baseArgs(coordState_);
        args.homeStored = homeStored;
        args.callerSignalled = callerSignalled;
        addCoordinateRecords(args);
        setForwardShifts(args, plan_, box);
        launchLoadStoreForward(args, blocksPerPulse_, static_cast<cudaStream_t>(stream));
    }

    void reverseForces(StreamHandle stream) {
        throwIfTimedOut();
        ++counters_.reverseCalls;
        if (plan_.pulses.empty()) return;
        FusedArgs args = baseArgs(forceState_);
        addForceRecords(args);
        launchLoadStoreReverse(args, blocksPerPulse_, static_cast<cudaStream_t>(stream));
    }

    // Device timestamps inside the fused kernels (CoordinateForceExchange::recordTimestamps).
    bool recordTimestamps(bool on) { return recordFusedTimestamps(coordState_, forceState_, on); }
    std::optional<ExchangeTimestamps> lastTimestamps() const {
        return readFusedTimestamps(coordState_, forceState_, static_cast<int>(plan_.pulses.size()));
    }

    // The caller zeroed the home forces: nothing is left (see clearForces).
    void clearHaloForces(StreamHandle) {}

    void clearForces(StreamHandle stream) {
        clearHomeForces(static_cast<Vec3f*>(forces_.data), plan_, static_cast<cudaStream_t>(stream));
    }

    // Search-step blocks, as nvshmem's (fused/slotted_blocks.hpp) but with
    // loads and stores: block b of a call is copied by a kernel into slot b
    // of the receiver's staging window, then one one-thread kernel raises the
    // receivers' signals b (release, system scope) and waits (timed,
    // diagnosed) for this rank's own blocks, which the caller reads there (in
    // place) or gets copied out.
    void exchangeBlocks(std::span<const BlockExchange> blocks, StreamHandle stream) override {
        throwIfTimedOut();
        blocks_.exchangeBlocks(blocks, stream);
    }
    void exchangeBlocksInPlace(std::span<const BlockExchange> blocks, std::span<const void*> landed,
                               StreamHandle stream) override {
        throwIfTimedOut();
        blocks_.exchangeBlocksInPlace(blocks, landed, stream);
    }
    void exchangeAgreedBlocksInPlace(std::span<const BlockExchange> blocks, std::span<const void*> landed,
                                     std::size_t agreedMaxSendBytes, StreamHandle stream) override {
        throwIfTimedOut();
        blocks_.exchangeAgreedBlocksInPlace(blocks, landed, agreedMaxSendBytes, stream);
    }

    void checkForFailure() const override { throwIfTimedOut(); }

private:
    // The search-step blocks' policy for SlottedBlockExchange: copies into
    // the peers' staging windows, one kernel that raises their signals and
    // waits for this rank's.
    struct BlockOps {
        PeerFusedTransport& t;
        void synchronize(StreamHandle stream) {
            HALOEX_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
        }
        void growStaging(std::size_t bytes) {
            // No kernel may still use the old windows, and every new one is
            // in place before any store.
            HALOEX_CUDA_CHECK(cudaDeviceSynchronize());
            t.blockStaging_.reset();
            t.blockStaging_ = t.allocate_(t.world_, bytes, t.name_ + " transport's search-step staging");
            t.world_.barrier();
        }
        std::byte* staging() { return static_cast<std::byte*>(t.blockStaging_->localBase()); }
        void deliver(std::span<const SlotSend> sends, const SlotWait& wait, std::uint64_t sequence,
                     StreamHandle streamHandle) {
            const auto stream = static_cast<cudaStream_t>(streamHandle);
            BlockCopies copies;
            BlockWaitArgs args;
            args.signals = static_cast<const std::uint64_t*>(t.signals_->localBase()) + kBlockSignalsAt;
            args.expected = sequence;
            args.diagnostics = t.diagnosticsDevice_;
            args.abortFlag = t.abortFlag_.data();
            args.timeoutNs = t.timeoutNs_;
            args.myRank = t.world_.rank();
            for (const SlotSend& s : sends) {
                if (s.bytes > 0) {
                    copies.from[copies.count] = s.send;
                    copies.to[copies.count] =
                        t.peerPointer<std::byte>(*t.blockStaging_, s.dest, s.slotOffset, "search-step staging");
                    copies.bytes[copies.count] = s.bytes;
                    ++copies.count;
                }
                args.raise[args.raiseCount++] = t.peerPointer<std::uint64_t>(
                    *t.signals_, s.dest, (kBlockSignalsAt + s.slot) * sizeof(std::uint64_t), "search-step signals");
            }
            for (int k = 0; k < wait.count; ++k) {
                args.block[k] = wait.slot[k];
                args.peer[k] = wait.peer[k];
            }
            args.count = wait.count;
            launchBlockCopies(copies, stream);
            if (args.raiseCount > 0 || args.count > 0) launchBlockSignalAndWait(args, stream);
        }
        void copyOut(void* to, const void* from, std::size_t bytes, StreamHandle stream) {
            HALOEX_CUDA_CHECK(
                cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, static_cast<cudaStream_t>(stream)));
        }
    };

    // Rank `peer`'s window as this rank's kernels address it; refused where
    // no load/store path exists.
    template <class T>
    T* peerPointer(PeerMemory& memory, int peer, std::size_t offsetBytes, const char* what) {
        return peerPointer<T>(memory.peerBase(peer), peer, offsetBytes, what);
    }
    template <class T>
    T* peerPointer(const SharedArray& array, int peer, const char* what) {
        return peerPointer<T>(array.peer(peer), peer, 0, what);
    }
    template <class T>
    T* peerPointer(void* peerBase, int peer, std::size_t offsetBytes, const char* what) {
        auto* base = static_cast<std::byte*>(peerBase);
        if (base == nullptr) {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("the {} transport cannot reach rank {}'s {} from rank {}: no load/store path "
                                   "between their GPUs (another node, or no NVLink/P2P); use the nvshmem or nccl "
                                   "backend",
                                   name_, peer, what, world_.rank()));
        }
        return reinterpret_cast<T*>(base + offsetBytes);
    }

    void uploadPulses() {
        const int numPulses = static_cast<int>(plan_.pulses.size());
        // Collective (one reduction), before the records: the blocks per
        // pulse and whether the coordinates signal per block.
        const FusedAgreement agreed = agreeOnFusedSetup(world_, plan_, 0, exchangeSignalsAsked(), name_);
        blocksPerPulse_ = fusedBlocksPerPulse(agreed, world_, maxResidentLoadStoreBlocks(), name_);
        blockSignals_ = blockSignalsGiven(agreed, blocksPerPulse_);
        std::vector<PulseRecord> records(numPulses);
        for (int p = 0; p < numPulses; ++p) {
            const plan::Pulse& pulse = plan_.pulses[p];
            PulseRecord& r = records[p];
            r = pulseRecordOf(pulse, maps_.pulse(p));
            r.sendPath = r.recvPath = PathKind::Direct;
            r.peerX = peerPointer<Vec3f>(coordinates_, pulse.sendRank, "coordinates");
            r.peerF = peerPointer<const Vec3f>(forces_, pulse.sendRank, "forces");
            r.peerCoordSignal =
                peerPointer<std::uint64_t>(*signals_, pulse.sendRank,
                                           static_cast<std::size_t>(p) * sizeof(std::uint64_t), "coordinate signals");
            r.peerForceSignal =
                peerPointer<std::uint64_t>(*signals_, pulse.recvRank,
                                           static_cast<std::size_t>(kMaxPulses + p) * sizeof(std::uint64_t),
                                           "force signals");
            if (blockSignals_) {
                r.peerCoordBlockWords = peerPointer<std::uint64_t>(
                    *signals_, pulse.sendRank,
                    (kCoordBlockWordsAt + static_cast<std::size_t>(p) * kMaxSignalBlocks) * sizeof(std::uint64_t),
                    "coordinate signals per block");
            }
        }
        blockSignals_ = blockSignals_ && movesCoordinatesDirectly(records);
        markDonePublishers(records);
        pulseRecords_.resize(std::max(1, numPulses));
        if (numPulses > 0) {
            cuda::copyToDeviceNow(pulseRecords_.data(), records.data(), numPulses * sizeof(PulseRecord));
        }
        // The table, where the storing kernel may signal too, and a fresh
        // counter value for this plan's first forward (HomeStores::rebuild).
        homeStores_.rebuild(records, plan_.numHome, coordState_.sequence.data(), !blockSignals_, -1);
        notes_ = {fmt::format("{}: {} pulse(s), {} block(s) of {} threads per pulse, one fused kernel per exchange, "
                              "direct stores into the peers' windows ({}), {}, wait limit {:.0f} s; search-step "
                              "blocks copied into the peers' staging windows by a kernel and signalled (one host "
                              "sync per call)",
                              name_, numPulses, blocksPerPulse_, kFusedThreads, signals_->describe(),
                              signalsNote(blockSignals_), timeoutNs_ * 1e-9)};
    }

    void throwIfTimedOut() const {
        const std::string message = watchdog_->pendingTimeout();
        if (!message.empty()) throwError(ErrorKind::Timeout, fmt::format("{} wait timed out: {}", name_, message));
    }

    std::string describePulse(int p) const { return describeFusedPulse(plan_, p); }

    FusedArgs baseArgs(FusedKernelState& state) {
        FusedArgs a;
        a.pulses = pulseRecords_.data();
        a.numPulses = static_cast<int>(plan_.pulses.size());
        a.x = static_cast<Vec3f*>(coordinates_.data);
        a.f = static_cast<Vec3f*>(forces_.data);
        auto* signals = static_cast<std::uint64_t*>(signals_->localBase());
        a.coordSignal = signals;
        a.forceSignal = signals + kMaxPulses;
        a.coordBlockWords = blockSignals_ ? signals + kCoordBlockWordsAt : nullptr;
        a.sequence = state.sequence.data();
        a.doneWords = state.doneWords.data();
        a.pulseBlockCounters = state.pulseCounters.data();
        a.kernelBlockCounter = state.kernelCounter.data();
        a.diagnostics = diagnosticsDevice_;
        a.abortFlag = abortFlag_.data();
        a.timeoutNs = timeoutNs_;
        a.myPe = world_.rank();
        a.trace = state.tracePointer();
        return a;
    }

    runtime::World& world_;
    ArrayMemory windows_;
    PeerAllocator allocate_;
    std::string name_;
    plan::ParticleHaloPlan plan_;
    TransportCounters counters_;
    std::vector<std::string> notes_;
    std::unique_ptr<PeerMemory> signals_;
    // The caller's windows (bindArrays) and their allocations.
    SharedArray coordinates_, forces_;
    std::uint64_t xAllocation_ = 0, fAllocation_ = 0;
    std::unique_ptr<PeerMemory> blockStaging_;  // the search-step blocks' slots, grown collectively
    cuda::DevicePulseMaps maps_;
    FusedKernelState coordState_, forceState_;
    cuda::DeviceBuffer<PulseRecord> pulseRecords_;
    cuda::PinnedBuffer<WaitDiagnostics> diagnostics_;
    WaitDiagnostics* diagnosticsDevice_ = nullptr;
    cuda::DeviceBuffer<int> abortFlag_;
    std::uint64_t timeoutNs_;
    int blocksPerPulse_ = 1;
    bool blockSignals_ = false;  // coordinates signal per sending block (blockSignalsGiven)
    std::unique_ptr<Watchdog> watchdog_;
    BlockOps blockOps_{*this};
    SlottedBlockExchange<BlockOps> blocks_{world_, blockOps_};
};

std::unique_ptr<CoordinateForceExchange> PeerFusedTransport::makeCoordinateForceExchange() {
    static_assert(OffersHomeStores<PeerFusedTransport>);
    static_assert(OffersHaloRecords<PeerFusedTransport>);
    return std::make_unique<ForwardingCoordinateForceExchange<PeerFusedTransport, true>>(*this);
}

}  // namespace

std::unique_ptr<BlockTransport> makePeerFusedTransport(runtime::World& world, const TransportOptions& options,
                                                       ArrayMemory windows, PeerAllocator allocate,
                                                       const std::string& name) {
    return std::make_unique<PeerFusedTransport>(world, options, windows, std::move(allocate), name);
}

}  // namespace haloex::transport
