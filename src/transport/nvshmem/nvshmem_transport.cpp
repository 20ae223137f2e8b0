// The nvshmem particle transport: symmetric arrays, per-pulse records, path
// choice per peer, and the launches of the fused kernels.
#include <nvshmem.h>
#include <nvshmemx.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <optional>
#include <span>
#include <vector>

#include "fused_kernels.hpp"
#include "fused_setup.hpp"
#include "home_stores.hpp"
#include "halo_records.hpp"
#include "index_map_upload.hpp"
#include "haloex/detail/cuda/blocking_ops.hpp"
#include "haloex/core/error.hpp"
#include "haloex/detail/core/test_hooks.hpp"
#include "haloex/cuda/check.hpp"
#include "haloex/cuda/device_buffer.hpp"
#include "forwarding_exchange.hpp"
#include "haloex/transport/coordinate_force_exchange.hpp"
#include "nvshmem_transport.hpp"
#include "search_blocks.hpp"
#include "slotted_blocks.hpp"
#include "session.hpp"
#include "symmetric_buffer.hpp"
#include "watchdog.hpp"

namespace haloex::transport {
namespace {

using namespace nvshmem_detail;

std::optional<PathKind> parsePath(const std::string& text) {
    if (text == "auto") return std::nullopt;
    if (text == "direct") return PathKind::Direct;
    if (text == "tma") return PathKind::Tma;
    if (text == "put") return PathKind::Put;
    throwError(ErrorKind::InvalidInput, fmt::format("--nvshmem-path '{}': use auto, direct, tma or put", text));
}

// How an exchange is launched: all pulses in one kernel, or one launch each.
enum class LaunchMode { Fused, PerPulse };

LaunchMode parseLaunch(const std::string& text) {
    if (text == "fused") return LaunchMode::Fused;
    if (text == "per-pulse") return LaunchMode::PerPulse;
    throwError(ErrorKind::InvalidInput,
               fmt::format("--nvshmem-launch '{}': use fused (one kernel per exchange) or per-pulse (one launch "
                           "per pulse, the ablation)",
                           text));
}

const char* launchName(LaunchMode m) { return m == LaunchMode::Fused ? "fused" : "per-pulse"; }

const char* pathName(PathKind p) {
    switch (p) {
        case PathKind::Direct: return "direct";
        case PathKind::Tma: return "tma";
        case PathKind::Put: return "put";
    }
    return "?";
}

class NvshmemTransport final : public BlockTransport, public HomeStoreCalls<NvshmemTransport>, public HaloRecordCalls {
public:
    NvshmemTransport(runtime::World& world, const TransportOptions& options)
        : world_(world), forcedPath_(parsePath(options.nvshmemPath)), launch_(parseLaunch(options.nvshmemLaunch)),
          timeoutNs_(static_cast<std::uint64_t>(waitTimeoutSeconds(options.waitTimeoutSeconds) * 1e9)) {
        if (options.memorySpace.value_or(MemorySpace::Device) != MemorySpace::Device) {
            throwError(ErrorKind::InvalidInput, "the nvshmem transport keeps coordinates and forces in device memory");
        }
        if (const char* withhold = testHook("HALOEX_TEST_WITHHOLD_SIGNAL")) {
            // Test hook "rank:pulse" (test builds only): that rank never signals that pulse.
            int rank = -1, pulse = -1;
            if (std::sscanf(withhold, "%d:%d", &rank, &pulse) == 2 && rank == world.rank()) withholdPulse_ = pulse;
        }
    }

    ~NvshmemTransport() override {
        watchdog_.reset();
        if (std::uncaught_exceptions() == 0 && initialised_) cudaDeviceSynchronize();
    }

    std::string name() const override { return "nvshmem"; }
    MemorySpace memorySpace() const override { return MemorySpace::Device; }
    // Peers store into the caller's coordinates and read its forces.
    ArrayMemory arrayMemory() const override { return ArrayMemory::NvshmemSymmetric; }
    std::unique_ptr<CoordinateForceExchange> makeCoordinateForceExchange() override;
    const TransportCounters& counters() const { return counters_; }
    std::vector<std::string> describe() const override { return notes_; }

    // The coordinate/force exchange (NvshmemCoordinateForceExchange below):
    // the fused kernels on the caller's symmetric arrays.
    void bindArrays(const plan::ParticleHaloPlan& plan, const SharedArray& coordinates, const SharedArray& forces) {
        dropHaloRecords();  // they were for the last plan's elements, also if this bind fails
        const int numPulses = static_cast<int>(plan.pulses.size());
        if (numPulses > kMaxPulses) {
            throwError(ErrorKind::Plan, fmt::format("the plan has {} pulses; the nvshmem transport supports at most {}",
                                                    numPulses, kMaxPulses));
        }
        if (plan.alignment % 4 != 0 && numPulses > 0) {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("the nvshmem transport needs receive slots aligned to 4 atoms (16-byte bulk "
                                   "copies); the plan has alignment {}",
                                   plan.alignment));
        }
        for (const SharedArray* a : {&coordinates, &forces}) {
            if (!a->peer) {
                throwError(ErrorKind::InvalidInput,
                           "the nvshmem transport's peers store into the caller's coordinates and read its forces: "
                           "allocate both in NVSHMEM symmetric memory (allocateCollective for this transport)");
            }
        }
        plan_ = plan;
        // Everything the ranks must decide alike for this plan, in one reduction.
        agreed_ =
            agreeOnFusedSetup(world_, plan_, (std::max(plan_.maxSendCount(), plan_.maxRecvCapacity()) + 3) / 4 * 4,
                              exchangeSignalsAsked(), "nvshmem");
        bool reallocated = ensureCapacity();
        if (coordinates.allocation != xAllocation_ || forces.allocation != fAllocation_) reallocated = true;
        x_ = static_cast<Vec3f*>(coordinates.data);
        f_ = static_cast<Vec3f*>(forces.data);
        xAllocation_ = coordinates.allocation;
        fAllocation_ = forces.allocation;
        uploadPulses();
        notes_ = pathNotes();
        HALOEX_CUDA_CHECK(cudaDeviceSynchronize());
        // New arrays: every rank's are in place before any kernel stores into
        // a peer's. With the same arrays nothing is needed: the peers' first
        // stores go to halo slots that nothing here reads until this rank's
        // own forward waits for them, and the host collectives of the search
        // (uploadPulses' reductions, the plan exchange) already order this
        // set-up after the peers' previous step. Every rank decides alike:
        // the staging grows by a maximum over the ranks, and the collective
        // allocator reallocates the caller's arrays on every rank together.
        if (reallocated) nvshmem_barrier_all();
    }

    // Search-step blocks (fused/slotted_blocks.hpp): block b of a call goes
    // by put-with-signal into slot b of the receiver's symmetric staging,
    // with slot b's signal (NVLink or InfiniBand alike); the receiver waits
    // for all of its blocks in one kernel (timed, diagnosed) and reads them
    // there (in place) or copies them out. One call for several blocks is
    // one synchronisation and one reduction, not one per block.
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
        if (launch_ == LaunchMode::Fused) {
            launchFusedPackCommX(args, blocksPerPulse_, static_cast<cudaStream_t>(stream), forwardLaunched_);
        } else {
            launchPackCommXPerPulse(args, blocksPerPulse_, static_cast<cudaStream_t>(stream));
        }
    }

    void reverseForces(StreamHandle stream) {
        throwIfTimedOut();
        ++counters_.reverseCalls;
        if (plan_.pulses.empty()) return;
        FusedArgs args = baseArgs(forceState_);
        addForceRecords(args);
        if (launch_ == LaunchMode::Fused) {
            launchFusedCommUnpackF(args, blocksPerPulse_, static_cast<cudaStream_t>(stream));
        } else {
            launchCommUnpackFPerPulse(args, blocksPerPulse_, static_cast<cudaStream_t>(stream));
        }
    }

    // The fused forward's launch-completion event (CoordinateForceExchange::signalForwardLaunched);
    // one launch per pulse (the ablation) has no single kernel to signal.
    bool signalForwardLaunched(void* event) {
        if (launch_ != LaunchMode::Fused) return false;
        forwardLaunched_ = static_cast<cudaEvent_t>(event);
        return true;
    }
    // The event signalForwardLaunched registered last (null: none), so that
    // an exchange going away unregisters only its own.
    void* forwardLaunchedEvent() const { return forwardLaunched_; }

    // Device timestamps inside the fused kernels (CoordinateForceExchange::recordTimestamps).
    bool recordTimestamps(bool on) { return recordFusedTimestamps(coordState_, forceState_, on); }
    std::optional<ExchangeTimestamps> lastTimestamps() const {
        return readFusedTimestamps(coordState_, forceState_, static_cast<int>(plan_.pulses.size()));
    }

    void clearForces(StreamHandle stream) { clearHomeForces(f_, plan_, static_cast<cudaStream_t>(stream)); }
    // The caller zeroed the home forces: nothing is left (see clearForces).
    void clearHaloForces(StreamHandle) {}

private:
    // The symmetric arrays of the fused exchange beside the caller's: the
    // staging of coordinates and forces per pulse, the signals.
    static std::size_t bytesFor(std::size_t stagingAtoms) {
        return 2 * kMaxPulses * stagingAtoms * sizeof(Vec3f) + kSignalWords * sizeof(std::uint64_t);
    }
    // The signals: each pulse's coordinate and force signal, then each
    // pulse's words of signals per block (kMaxSignalBlocks).
    static constexpr std::size_t kBlockWordsAt = 2 * kMaxPulses;
    static constexpr std::size_t kSignalWords = kBlockWordsAt + std::size_t{kMaxPulses} * kMaxSignalBlocks;

    // NVSHMEM itself (collective, once; usually the caller's symmetric
    // arrays have initialised it already): the symmetric heap is sized for
    // `bytesHint` more bytes than the staging of the plan's pulses.
    void initialise(std::size_t bytesHint) {
        if (initialised_) return;
        const std::int64_t atoms = world_.allReduceValue<std::int64_t>(plan_.numLocal, runtime::ReduceOp::Max);
        // Before the first plan the staging is estimated (a pulse sends at
        // most a quarter of the local atoms in the systems haloex runs).
        const auto a = static_cast<std::size_t>(atoms * 1.25) + 64;
        ensureNvshmem(world_, bytesFor(a / 4 + 64) + 2 * bytesHint);
        signals_.allocate(kSignalWords * sizeof(std::uint64_t), "signals");
        blockSignal_.allocate(kMaxBlocksPerCall * sizeof(std::uint64_t), "search-step signals");
        coordState_.allocate();
        forceState_.allocate();
        diagnostics_.allocate(1, cudaHostAllocMapped);
        *diagnostics_.data() = WaitDiagnostics{};
        HALOEX_CUDA_CHECK(
            cudaHostGetDevicePointer(reinterpret_cast<void**>(&diagnosticsDevice_), diagnostics_.data(), 0));
        abortFlag_.resize(1);
        cuda::fillBytesNow(abortFlag_.data(), 0, sizeof(int));
        watchdog_ = std::make_unique<Watchdog>(world_, diagnostics_.data(), [this](const WaitDiagnostics& d) {
            return describeTimeout(d, describePulse(d.pulse).c_str());
        });
        initialised_ = true;
    }

    // Sizes the symmetric staging by the maximum over ranks (all ranks must
    // allocate identically); grows collectively with headroom. Returns
    // whether it was (re)allocated.
    bool ensureCapacity() {
        const std::int64_t need = agreed_.stagingAtoms;
        initialise(0);
        if (heapSizeSetByUser() && stagingStride_ == 0 && bytesFor(need) > symmetricHeapBytes()) {
            throwError(ErrorKind::Nvshmem,
                       fmt::format("NVSHMEM_SYMMETRIC_SIZE={} bytes is too small: the halo exchange of {} atoms per "
                                   "pulse needs {} bytes of symmetric heap beside the arrays; set "
                                   "NVSHMEM_SYMMETRIC_SIZE to at least {}M",
                                   symmetricHeapBytes(), need, bytesFor(need), 2 * bytesFor(need) / (1024 * 1024) + 1));
        }
        if (need <= stagingStride_) return false;
        // Collective on every rank (the maxima are the same everywhere).
        HALOEX_CUDA_CHECK(cudaDeviceSynchronize());
        stagingStride_ = static_cast<int>((std::max<std::int64_t>(need, stagingStride_ * 5 / 4) + 64 + 3) / 4 * 4);
        staging_.release();
        forceStaging_.release();
        staging_.allocate(std::size_t(kMaxPulses) * stagingStride_ * sizeof(Vec3f), "coordinate staging");
        forceStaging_.allocate(std::size_t(kMaxPulses) * stagingStride_ * sizeof(Vec3f), "force staging");
        return true;
    }

    PathKind choosePath(int peer, void* peerPointer, std::string& why) const {
        const bool reachable = peerPointer != nullptr;
        if (!forcedPath_) {
            why = reachable ? "auto: nvshmem_ptr reaches the peer (NVLink/P2P), direct stores"
                            : "auto: no load/store access to the peer (nvshmem_ptr is null), put-with-signal";
            return reachable ? PathKind::Direct : PathKind::Put;
        }
        if (*forcedPath_ != PathKind::Put && !reachable) {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("--nvshmem-path {} needs load/store access to rank {}, but nvshmem_ptr() is null "
                                   "(no NVLink/P2P between them); use put or auto",
                                   pathName(*forcedPath_), peer));
        }
        why = *forcedPath_ == PathKind::Put && reachable
                  ? "forced: put-with-signal through NVSHMEM's peer-to-peer transport (not InfiniBand)"
                  : "forced by --nvshmem-path";
        return *forcedPath_;
    }

    void uploadPulses() {
        const int numPulses = static_cast<int>(plan_.pulses.size());
        indexMaps_.resize(std::max<std::size_t>(1, cuda::totalIndexEntries(plan_)));
        cuda::uploadIndexMaps(plan_, indexMaps_.data());
        std::vector<PulseRecord> records(numPulses);
        whyPath_.assign(numPulses, {});
        std::size_t offset = 0;
        auto* coordSignals = signals_.as<std::uint64_t>();
        auto* forceSignals = coordSignals + kMaxPulses;
        auto* blockWords = coordSignals + kBlockWordsAt;
        // Before the records: whether the coordinates signal per block.
        blocksPerPulse_ = fusedBlocksPerPulse(agreed_, world_, maxResidentFusedBlocks(), "nvshmem");
        blockSignals_ = blockSignalsGiven(agreed_, blocksPerPulse_);
        for (int p = 0; p < numPulses; ++p) {
            const plan::Pulse& pulse = plan_.pulses[p];
            PulseRecord& r = records[p];
            r = pulseRecordOf(pulse, indexMaps_.data() + offset);
            offset += static_cast<std::size_t>(pulse.sendCount());
            void* peerX = nvshmem_ptr(x_, pulse.sendRank);
            std::string whySend, whyRecv;
            r.sendPath = choosePath(pulse.sendRank, peerX, whySend);
            r.recvPath = choosePath(pulse.recvRank, nvshmem_ptr(f_, pulse.recvRank), whyRecv);
            whyPath_[p] = {pathName(r.sendPath), whySend};
            if (r.sendPath != PathKind::Put) {
                r.peerX = static_cast<Vec3f*>(peerX);
                r.peerF = static_cast<const Vec3f*>(nvshmem_ptr(f_, pulse.sendRank));
                r.peerCoordSignal = static_cast<std::uint64_t*>(nvshmem_ptr(coordSignals + p, pulse.sendRank));
                if (blockSignals_) {
                    r.peerCoordBlockWords = static_cast<std::uint64_t*>(
                        nvshmem_ptr(blockWords + static_cast<std::ptrdiff_t>(p) * kMaxSignalBlocks, pulse.sendRank));
                }
            }
            if (r.recvPath != PathKind::Put) {
                r.peerForceSignal = static_cast<std::uint64_t*>(nvshmem_ptr(forceSignals + p, pulse.recvRank));
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
        homeStores_.rebuild(records, plan_.numHome, coordState_.sequence.data(), !blockSignals_, withholdPulse_);
    }

    // A device-side wait that timed out has left its diagnostic in mapped
    // memory: stop here with it instead of exchanging garbage.
    void checkForFailure() const override { throwIfTimedOut(); }

    void throwIfTimedOut() const {
        if (!watchdog_) return;
        const std::string message = watchdog_->pendingTimeout();
        if (!message.empty()) throwError(ErrorKind::Timeout, "nvshmem wait timed out: " + message);
    }

    std::string describePulse(int p) const { return describeFusedPulse(plan_, p); }

    std::vector<std::string> pathNotes() const {
        std::vector<std::string> notes;
        // The per-pulse launches keep the fused grid's blocks per pulse, so
        // the ablation changes only how the pulses are launched.
        const std::string launches = fmt::format(
            "launch {} ({})", launchName(launch_),
            launch_ == LaunchMode::Fused
                ? std::string("one kernel per exchange")
                : fmt::format("{} kernels per exchange, stream-ordered: the ablation", plan_.pulses.size()));
        notes.push_back(fmt::format("nvshmem: {} pulse(s), {} block(s) of {} threads per pulse, {}, {}, wait limit "
                                    "{:.0f} s",
                                    plan_.pulses.size(), blocksPerPulse_, kFusedThreads, launches,
                                    signalsNote(blockSignals_), timeoutNs_ * 1e-9));
        for (std::size_t p = 0; p < plan_.pulses.size(); ++p) {
            // haloex-md adds the ranks a line applies to (md/rank_notes.hpp).
            notes.push_back(fmt::format("nvshmem pulse {} -> rank {}: {} ({})", describePulse(static_cast<int>(p)),
                                        plan_.pulses[p].sendRank, whyPath_[p].first, whyPath_[p].second));
        }
        return notes;
    }

    FusedArgs baseArgs(FusedKernelState& state) const {
        FusedArgs a;
        a.pulses = pulseRecords_.data();
        a.numPulses = static_cast<int>(plan_.pulses.size());
        a.x = x_;
        a.f = f_;
        a.staging = staging_.as<Vec3f>();
        a.forceStaging = forceStaging_.as<Vec3f>();
        a.stagingStride = stagingStride_;
        a.coordSignal = signals_.as<std::uint64_t>();
        a.forceSignal = signals_.as<std::uint64_t>() + kMaxPulses;
        a.coordBlockWords = blockSignals_ ? signals_.as<std::uint64_t>() + kBlockWordsAt : nullptr;
        a.sequence = state.sequence.data();
        a.doneWords = state.doneWords.data();
        a.pulseBlockCounters = state.pulseCounters.data();
        a.kernelBlockCounter = state.kernelCounter.data();
        a.diagnostics = diagnosticsDevice_;
        a.abortFlag = const_cast<int*>(abortFlag_.data());
        a.timeoutNs = timeoutNs_;
        a.myPe = world_.rank();
        a.withholdPulse = withholdPulse_;
        a.trace = state.tracePointer();
        return a;
    }

    runtime::World& world_;
    std::optional<PathKind> forcedPath_;
    LaunchMode launch_;
    std::uint64_t timeoutNs_;
    int withholdPulse_ = -1;
    bool initialised_ = false;
    plan::ParticleHaloPlan plan_;
    TransportCounters counters_;
    std::vector<std::string> notes_;
    std::vector<std::pair<std::string, std::string>> whyPath_;

    // The caller's symmetric arrays (bindArrays) and their allocations.
    Vec3f* x_ = nullptr;
    Vec3f* f_ = nullptr;
    std::uint64_t xAllocation_ = 0, fAllocation_ = 0;
    SymmetricBuffer staging_, forceStaging_, signals_;
    // The search-step blocks' policy for SlottedBlockExchange: puts with
    // signals into the symmetric staging, a waiting kernel.
    struct BlockOps {
        NvshmemTransport& t;
        void synchronize(StreamHandle stream) {
            HALOEX_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
        }
        void growStaging(std::size_t bytes) {
            t.initialise(bytes);
            HALOEX_CUDA_CHECK(cudaDeviceSynchronize());  // no put of an earlier call may still target the old one
            t.blockStaging_.allocate(bytes, "search-step staging");  // collective, with a barrier at its end
        }
        std::byte* staging() { return t.blockStaging_.as<std::byte>(); }
        void deliver(std::span<const SlotSend> sends, const SlotWait& wait, std::uint64_t sequence,
                     StreamHandle streamHandle) {
            const auto stream = static_cast<cudaStream_t>(streamHandle);
            auto* signals = t.blockSignal_.as<std::uint64_t>();
            for (const SlotSend& s : sends) {
                nvshmemx_putmem_signal_on_stream(staging() + s.slotOffset, s.send, s.bytes, signals + s.slot, sequence,
                                                 NVSHMEM_SIGNAL_SET, s.dest, stream);
            }
            if (wait.count == 0) return;
            BlockWaitArgs args = t.blockWaitArgs(signals, sequence);
            for (int k = 0; k < wait.count; ++k) {
                args.block[k] = wait.slot[k];
                args.peer[k] = wait.peer[k];
            }
            args.count = wait.count;
            launchBlockSignalAndWait(args, stream);
        }
        void copyOut(void* to, const void* from, std::size_t bytes, StreamHandle stream) {
            HALOEX_CUDA_CHECK(
                cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, static_cast<cudaStream_t>(stream)));
        }
    };

    BlockWaitArgs blockWaitArgs(const std::uint64_t* signals, std::uint64_t sequence) const {
        BlockWaitArgs wait;
        wait.signals = signals;
        wait.expected = sequence;
        wait.diagnostics = diagnosticsDevice_;
        wait.abortFlag = const_cast<int*>(abortFlag_.data());
        wait.timeoutNs = timeoutNs_;
        wait.myRank = world_.rank();
        return wait;
    }

    // exchangeBlocks' receive staging (bytes, the same on every rank; a slot
    // per block of a call) and signals (one per slot).
    SymmetricBuffer blockStaging_, blockSignal_;
    BlockOps blockOps_{*this};
    SlottedBlockExchange<BlockOps> blocks_{world_, blockOps_};
    int stagingStride_ = 0;
    FusedKernelState coordState_, forceState_;
    cuda::DeviceBuffer<int> indexMaps_;
    cuda::DeviceBuffer<PulseRecord> pulseRecords_;
    cuda::PinnedBuffer<WaitDiagnostics> diagnostics_;
    WaitDiagnostics* diagnosticsDevice_ = nullptr;
    cuda::DeviceBuffer<int> abortFlag_;
    int blocksPerPulse_ = 1;
    cudaEvent_t forwardLaunched_ = nullptr;  // signalForwardLaunched
    FusedAgreement agreed_;                  // what the ranks agreed on for plan_ (agreeOnFusedSetup)
    bool blockSignals_ = false;              // coordinates signal per sending block (blockSignalsGiven)
    std::unique_ptr<Watchdog> watchdog_;
};

std::unique_ptr<CoordinateForceExchange> NvshmemTransport::makeCoordinateForceExchange() {
    static_assert(OffersHomeStores<NvshmemTransport>);
    static_assert(OffersHaloRecords<NvshmemTransport>);
    return std::make_unique<ForwardingCoordinateForceExchange<NvshmemTransport, true>>(*this);
}

}  // namespace

std::unique_ptr<BlockTransport> makeNvshmemTransport(runtime::World& world, const TransportOptions& options) {
    return std::make_unique<NvshmemTransport>(world, options);
}

}  // namespace haloex::transport
