// Host side of the fused NVSHMEM Jacobi iteration: symmetric fields and
// slots, the path towards every peer, the kernel's work split, and the
// watchdog (watchdog.hpp) that turns a timed-out device-side wait into a
// message and a job abort.
#include <nvshmem.h>
#include <nvshmemx.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fmt/format.h>
#include <span>

#include "haloex/cuda/blocking_ops.hpp"
#include "haloex/core/error.hpp"
#include "haloex/core/test_hooks.hpp"
#include "haloex/cuda/check.hpp"
#include "haloex/cuda/device_buffer.hpp"
#include "haloex/stencil/jacobi_nvshmem.hpp"
#include "session.hpp"
#include "stencil_kernels.hpp"
#include "symmetric_buffer.hpp"
#include "watchdog.hpp"

namespace haloex::stencil {
namespace {

using namespace nvshmem_detail;

constexpr const char* kDimName = "xy";

// Where a line sent to us must land, as the sender sees it (checked at set-up).
struct PathRecord {
    std::int64_t start = 0, stride = 0;
    std::int32_t count = 0;
    std::int32_t direct = 0;
};

class NvshmemJacobiImpl final : public NvshmemJacobi {
public:
    NvshmemJacobiImpl(runtime::World& world, const LocalStencil& s, const NvshmemJacobiOptions& options)
        : world_(world), stencil_(s),
          timeoutNs_(static_cast<std::uint64_t>(waitTimeoutSeconds(options.waitTimeoutSeconds) * 1e9)) {
        if (options.path != "auto" && options.path != "direct" && options.path != "put") {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("--nvshmem-path '{}': the Jacobi kernel supports auto, direct and put",
                                   options.path));
        }
        if (s.numPulses > kJacobiMaxPulses || static_cast<int>(s.sends.size()) > kJacobiMaxPulses ||
            static_cast<int>(s.receives.size()) > kJacobiMaxPulses ||
            static_cast<int>(s.unsentLines.size()) > kJacobiMaxUnsent) {
            throwError(ErrorKind::Plan, fmt::format("rank {}: the fused Jacobi kernel handles a 2D stencil (at most {} "
                                                    "pulses); this one has {} pulses",
                                                    world.rank(), kJacobiMaxPulses, s.numPulses));
        }
        if (const char* withhold = testHook("HALOEX_TEST_WITHHOLD_SIGNAL")) {
            // Test hook "rank:pulse" (test builds only): that rank never signals that pulse.
            int rank = -1, pulse = -1;
            if (std::sscanf(withhold, "%d:%d", &rank, &pulse) == 2 && rank == world.rank()) withholdPulse_ = pulse;
        }
        allocate();
        choosePaths(options.path);
        planWork(options.maxBlocks, options.tileCells);
        HALOEX_CUDA_CHECK(cudaDeviceSynchronize());
        nvshmem_barrier_all();  // every rank's arrays and counters are ready before any kernel signals
    }

    ~NvshmemJacobiImpl() override {
        if (std::uncaught_exceptions() == 0) {
            cudaDeviceSynchronize();
            watcher_.reset();
            nvshmem_barrier_all();  // no peer still writes into the arrays freed below
        }
    }

    double* field(int parity) override { return fields_[parity & 1].as<double>(); }

    void iterate(int parity, double* normSquared, void* stream) override {
        if (const std::string message = watcher_->pendingTimeout(); !message.empty()) {
            throwError(ErrorKind::Timeout, message);
        }
        args_.parity = parity & 1;
        args_.seq = ++sequence_;
        args_.normSquared = normSquared;
        launchJacobiFused(args_, blocks_, static_cast<cudaStream_t>(stream));
    }

    void checkForFailure() const override {
        if (const std::string message = watcher_->pendingTimeout(); !message.empty()) {
            throwError(ErrorKind::Timeout, message);
        }
    }

    std::vector<std::string> describe() const override { return notes_; }
    std::string pathSummary() const override { return pathSummary_; }
    int blocks() const override { return blocks_; }

private:
    void allocate() {
        std::int64_t maxLine = 1;
        for (const auto& m : stencil_.sends) maxLine = std::max<std::int64_t>(maxLine, m.send.count);
        for (const auto& r : stencil_.receives) maxLine = std::max<std::int64_t>(maxLine, r.recv.count);
        std::vector<std::int64_t> need{stencil_.numLocal(), maxLine};
        world_.allReduce(std::span<std::int64_t>(need.data(), need.size()), runtime::ReduceOp::Max);
        const auto cells = static_cast<std::size_t>(need[0]);
        slotStride_ = (need[1] + 31) / 32 * 32;  // slots start 256-byte aligned
        const std::size_t slotBytes =
            2 * std::size_t{kJacobiMaxPulses} * static_cast<std::size_t>(slotStride_) * sizeof(double);
        const std::size_t total = 2 * cells * sizeof(double) + 2 * slotBytes + kJacobiMaxPulses * sizeof(std::uint64_t);
        ensureNvshmem(world_, total);
        if (heapSizeSetByUser() && total > symmetricHeapBytes()) {
            throwError(ErrorKind::Nvshmem,
                       fmt::format("NVSHMEM_SYMMETRIC_SIZE={} bytes is too small: the Jacobi fields of {} cells need "
                                   "{} bytes of symmetric heap; set it to at least {}M",
                                   symmetricHeapBytes(), cells, total, 2 * total / (1024 * 1024) + 1));
        }
        fields_[0].allocate(cells * sizeof(double), "the Jacobi field 0");
        fields_[1].allocate(cells * sizeof(double), "the Jacobi field 1");
        staging_.allocate(slotBytes, "the Jacobi send staging");
        slots_.allocate(slotBytes, "the Jacobi receive slots");
        signals_.allocate(kJacobiMaxPulses * sizeof(std::uint64_t), "the Jacobi signals");

        counters_.resize(3);
        cuda::fillBytesNow(counters_.data(), 0, counters_.bytes());
        diagnostics_.allocate(1, cudaHostAllocMapped);
        *diagnostics_.data() = WaitDiagnostics{};
        HALOEX_CUDA_CHECK(
            cudaHostGetDevicePointer(reinterpret_cast<void**>(&diagnosticsDevice_), diagnostics_.data(), 0));
        abortFlag_.resize(1);
        cuda::fillBytesNow(abortFlag_.data(), 0, sizeof(int));
        watcher_ = std::make_unique<Watchdog>(world_, diagnostics_.data(),
                                              [this](const WaitDiagnostics& d) { return describeTimeout(d); });

        args_.field[0] = fields_[0].as<double>();
        args_.field[1] = fields_[1].as<double>();
        args_.ax = stencil_.ax;
        args_.nx = stencil_.nx;
        args_.ny = stencil_.ny;
        args_.staging = staging_.as<double>();
        args_.slots = slots_.as<double>();
        args_.slotStride = slotStride_;
        args_.signals = signals_.as<std::uint64_t>();
        args_.boundaryCounter = counters_.data();
        args_.kernelCounter = counters_.data() + 1;
        args_.itemCounter = counters_.data() + 2;
        args_.diagnostics = diagnosticsDevice_;
        args_.abortFlag = abortFlag_.data();
        args_.timeoutNs = timeoutNs_;
        args_.myPe = world_.rank();
        args_.withholdPulse = withholdPulse_;
    }

    std::string pulseName(int pulse, int direction, int dim) const {
        return fmt::format("{} ({}, {})", pulse, kDimName[dim], direction < 0 ? "downwards" : "upwards");
    }

    // Path per message; the receivers learn the senders' choices (and check
    // that the line they expect is the line the sender will deliver).
    void choosePaths(const std::string& path) {
        int direct = 0, put = 0;
        std::vector<PathRecord> outgoing(static_cast<std::size_t>(stencil_.numPulses));
        args_.numMsgs = static_cast<int>(stencil_.sends.size());
        for (std::size_t i = 0; i < stencil_.sends.size(); ++i) {
            const FaceMessage& m = stencil_.sends[i];
            JacobiMessage& k = args_.msgs[i];
            k.send = m.send;
            k.remote = m.remote;
            k.pulse = m.pulse;
            k.peer = m.peer;
            k.normBegin = m.normBegin;
            k.normEnd = m.normEnd;
            void* peerField0 = nvshmem_ptr(fields_[0].as<void>(), m.peer);
            const bool reachable = peerField0 != nullptr;
            if (path == "direct" && !reachable) {
                throwError(ErrorKind::InvalidInput,
                           fmt::format("--nvshmem-path direct needs load/store access from rank {} to rank {}, but "
                                       "nvshmem_ptr() is null (no NVLink/P2P between them); use put or auto",
                                       world_.rank(), m.peer));
            }
            k.direct = path != "put" && reachable;
            if (k.direct) {
                k.peerField[0] = static_cast<double*>(peerField0);
                k.peerField[1] = static_cast<double*>(nvshmem_ptr(fields_[1].as<void>(), m.peer));
                k.peerSignal = static_cast<std::uint64_t*>(nvshmem_ptr(signals_.as<std::uint64_t>() + m.pulse, m.peer));
                ++direct;
            } else {
                k.putIntoField = m.remote.stride == 1;
                ++put;
            }
            outgoing[static_cast<std::size_t>(m.pulse)] = {m.remote.start, m.remote.stride, m.remote.count, k.direct};
            const char* why = k.direct ? "direct stores (nvshmem_ptr reaches the peer)"
                              : path == "put" && reachable
                                  ? "put-with-signal, forced (NVSHMEM's peer-to-peer transport, not InfiniBand)"
                                  : "put-with-signal (no load/store access to the peer)";
            notes_.push_back(fmt::format("pulse {} -> rank {}: {} cells, {}{}", pulseName(m.pulse, m.direction, m.dim),
                                         m.peer, m.send.count, why,
                                         !k.direct && !k.putIntoField ? ", into a receive slot" : ""));
        }
        pathSummary_ = direct && put ? "mixed" : direct ? "direct" : put ? "put" : "-";

        args_.numRecvs = static_cast<int>(stencil_.receives.size());
        for (int p = 0; p < stencil_.numPulses; ++p) {
            const FaceMessage* send = nullptr;
            for (const auto& m : stencil_.sends) {
                if (m.pulse == p) send = &m;
            }
            int recvIndex = -1;
            for (std::size_t r = 0; r < stencil_.receives.size(); ++r) {
                if (stencil_.receives[r].pulse == p) recvIndex = static_cast<int>(r);
            }
            PathRecord incoming;
            world_.sendRecvBytes(send ? std::as_bytes(std::span(&outgoing[static_cast<std::size_t>(p)], 1))
                                      : std::span<const std::byte>{},
                                 send ? send->peer : -1,
                                 recvIndex >= 0 ? std::as_writable_bytes(std::span(&incoming, 1))
                                                : std::span<std::byte>{},
                                 recvIndex >= 0 ? stencil_.receives[static_cast<std::size_t>(recvIndex)].peer : -1,
                                 200 + p);
            if (recvIndex < 0) continue;
            const FaceReceive& r = stencil_.receives[static_cast<std::size_t>(recvIndex)];
            if (incoming.start != r.recv.start || incoming.stride != r.recv.stride || incoming.count != r.recv.count) {
                throwError(ErrorKind::Internal,
                           fmt::format("rank {}: pulse {} from rank {} would deliver {} cells at {} (stride {}) but "
                                       "this rank expects {} at {} (stride {}); the ranks' stencils come from "
                                       "different plans",
                                       world_.rank(), p, r.peer, incoming.count, incoming.start, incoming.stride,
                                       r.recv.count, r.recv.start, r.recv.stride));
            }
            JacobiReceive& k = args_.recvs[recvIndex];
            k.recv = r.recv;
            k.pulse = r.pulse;
            k.peer = r.peer;
            k.fromSlot = !incoming.direct && r.recv.stride != 1;
        }
    }

    void planWork(int maxBlocksOption, int tileCellsOption) {
        const int chunk = kJacobiThreads;
        args_.chunkCells = chunk;
        int items = 0;
        for (int i = 0; i < args_.numMsgs; ++i) {
            JacobiMessage& m = args_.msgs[i];
            m.firstChunk = items;
            m.numChunks = (m.send.count + chunk - 1) / chunk;
            items += m.numChunks;
        }
        args_.numUnsent = static_cast<int>(stencil_.unsentLines.size());
        for (int i = 0; i < args_.numUnsent; ++i) {
            const UnsentLine& u = stencil_.unsentLines[static_cast<std::size_t>(i)];
            JacobiUnsent& k = args_.unsent[i];
            k.cells = u.cells;
            k.normBegin = u.normBegin;
            k.normEnd = u.normEnd;
            k.firstChunk = items;
            k.numChunks = (u.cells.count + chunk - 1) / chunk;
            items += k.numChunks;
        }
        args_.boundaryChunks = items;

        const int resident = maxResidentJacobiBlocks();
        int blocks = maxBlocksOption > 0 ? std::min(maxBlocksOption, resident) : resident;
        const auto interior = static_cast<std::int64_t>(stencil_.interiorCols()) * stencil_.interiorRows();
        // Tiles of whole blocks' worth of cells, handed out in order: at any
        // moment the blocks work on one band of rows (L2 keeps the rows they
        // share), as the blocks of a plain kernel do. The next tile is fetched
        // while the current one is computed, so small tiles cost no stall.
        const std::int64_t wanted = tileCellsOption > 0 ? tileCellsOption : kJacobiDefaultTileCells;
        const std::int64_t tileCells = std::max<std::int64_t>(chunk, (wanted + chunk - 1) / chunk * chunk);
        args_.tileCells = static_cast<int>(tileCells);
        args_.interiorTiles = static_cast<int>((interior + tileCells - 1) / tileCells);
        args_.interiorCells = static_cast<unsigned>(interior);
        args_.interiorCols = static_cast<unsigned>(std::max(1, stencil_.interiorCols()));
        blocks_ =
            static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(blocks, items + args_.interiorTiles)));
        notes_.push_back(fmt::format("fused kernel: {} blocks of {} threads (at most {} resident), {} boundary chunks "
                                     "of {} cells, {} interior tiles of {} cells",
                                     blocks_, kJacobiThreads, resident, args_.boundaryChunks, chunk,
                                     args_.interiorTiles, args_.tileCells));
    }

    std::string describeTimeout(const WaitDiagnostics& d) const {
        int dim = 0, direction = -1;
        for (const auto& r : stencil_.receives) {
            if (r.pulse == d.pulse) {
                dim = r.dim;
                direction = r.direction;
            }
        }
        return fmt::format("rank {}: the fused Jacobi kernel waited {:.3f} s for the halo line of pulse {} from rank "
                           "{}: signal expected >= {}, seen {}. The peer is slower than the wait limit (raise "
                           "--wait-timeout / HALOEX_WAIT_TIMEOUT), or it stopped (look for its error above)",
                           d.rank, d.waitedNs * 1e-9, pulseName(d.pulse, direction, dim), d.peer, d.expected, d.seen);
    }

    runtime::World& world_;
    LocalStencil stencil_;
    std::uint64_t timeoutNs_;
    int withholdPulse_ = -1;
    SymmetricBuffer fields_[2], staging_, slots_, signals_;
    std::int64_t slotStride_ = 0;
    cuda::DeviceBuffer<unsigned> counters_;
    cuda::PinnedBuffer<WaitDiagnostics> diagnostics_;
    WaitDiagnostics* diagnosticsDevice_ = nullptr;
    cuda::DeviceBuffer<int> abortFlag_;
    std::unique_ptr<Watchdog> watcher_;
    JacobiArgs args_;
    int blocks_ = 1;
    std::uint64_t sequence_ = 0;
    std::vector<std::string> notes_;
    std::string pathSummary_ = "-";
};

}  // namespace

std::unique_ptr<NvshmemJacobi> makeNvshmemJacobi(runtime::World& world, const LocalStencil& stencil,
                                                 const NvshmemJacobiOptions& options) {
    return std::make_unique<NvshmemJacobiImpl>(world, stencil, options);
}

}  // namespace haloex::stencil
