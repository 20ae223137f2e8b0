// Host side of the fused, GPU-initiated Jacobi iteration
// (haloex/stencil/jacobi_fused.hpp): the two fields in the backend's peer
// memory, a device halo view for the signals and their timed waits, the
// kernel's work split. Only the library's public API: the backend
// (nvshmem, nccl-device, ipc) decides where the memory comes from, not which
// code runs.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <fmt/format.h>
#include <span>

#include "fused_jacobi_kernels.hpp"
#include "haloex/core/error.hpp"
#include "haloex/detail/core/test_hooks.hpp"
#include "haloex/detail/cuda/blocking_ops.hpp"
#include "haloex/cuda/check.hpp"
#include "haloex/cuda/device_buffer.hpp"
#include "haloex/halo/device_halo.hpp"
#include "haloex/transport/peer_memory.hpp"
#include "haloex/stencil/jacobi_fused.hpp"

namespace haloex::stencil {
namespace {

using namespace jacobi::fused;

constexpr const char* kDimName = "xy";

// Where a line sent to us will land, as the sender sees it (checked at set-up).
struct LineRecord {
    std::int64_t start = 0, stride = 0;
    std::int64_t count = 0;
};

class FusedJacobiImpl final : public FusedJacobi {
public:
    FusedJacobiImpl(runtime::World& world, const LocalStencil& s, const FusedJacobiOptions& options)
        : world_(world), stencil_(s), backend_(options.backend) {
        if (options.path != "auto" && options.path != "direct") {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("--nvshmem-path '{}': the fused Jacobi kernel stores straight into the peers' "
                                   "fields (direct; auto means the same); a put-with-signal path for peers without "
                                   "load/store access is not offered: across nodes use --transport nccl or staged",
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
        // Before any collective that a peer's first kernel could overtake.
        loadJacobiKernel();
        allocate();
        connect(options.waitTimeoutSeconds);
        planWork(options.maxBlocks, options.tileCells);
        HALOEX_CUDA_CHECK(cudaDeviceSynchronize());
        world_.barrier();  // every rank's fields and counters are ready before any kernel stores or signals
    }

    double* field(int parity) override { return fieldOf(parity & 1); }

    void iterate(int parity, double* normSquared, void* stream) override {
        halo_->throwIfTimedOut();
        args_.parity = parity & 1;
        args_.seq = ++sequence_;
        args_.normSquared = normSquared;
        launchJacobiFused(args_, blocks_, static_cast<cudaStream_t>(stream));
    }

    void checkForFailure() const override { halo_->throwIfTimedOut(); }

    std::vector<std::string> describe() const override { return notes_; }
    std::string pathSummary() const override { return stencil_.sends.empty() ? "-" : "direct"; }
    int blocks() const override { return blocks_; }

private:
    double* fieldOf(int parity) const { return static_cast<double*>(fields_[parity]->localBase()); }

    void allocate() {
        cells_ =
            static_cast<std::size_t>(world_.allReduceValue<std::int64_t>(stencil_.numLocal(), runtime::ReduceOp::Max));
        // One allocation per field, each aligned as the backend aligns it: in
        // one allocation the second field started 32 bytes into a 128-byte
        // line at 4096^2 cells, and the kernel ran 14 % slower there.
        for (int parity = 0; parity < 2; ++parity) {
            fields_[parity] = allocatePeerMemory(backend_, world_, cells_ * sizeof(double),
                                                 fmt::format("the Jacobi field {}", parity));
        }
        counters_.resize(3);
        cuda::fillBytesNow(counters_.data(), 0, counters_.bytes());
        args_.field[0] = fieldOf(0);
        args_.field[1] = fieldOf(1);
        args_.ax = stencil_.ax;
        args_.nx = stencil_.nx;
        args_.ny = stencil_.ny;
        args_.boundaryCounter = counters_.data();
        args_.kernelCounter = counters_.data() + 1;
        args_.itemCounter = counters_.data() + 2;
        args_.withholdPulse = withholdPulse_;
    }

    std::string pulseName(int pulse, int direction, int dim) const {
        return fmt::format("{} ({}, {})", pulse, kDimName[dim], direction < 0 ? "downwards" : "upwards");
    }

    // The peers' fields, and one signal-only link of the device halo view
    // per pulse (tag = the pulse's id, the same on both sides); the
    // receivers check that the line a sender will store is the one they
    // expect.
    void connect(double waitTimeoutSeconds) {
        std::vector<DeviceHaloReceive> receives;
        std::vector<DeviceHaloSend> sends;
        args_.numRecvs = static_cast<int>(stencil_.receives.size());
        for (std::size_t r = 0; r < stencil_.receives.size(); ++r) {
            const FaceReceive& fr = stencil_.receives[r];
            // The cells go into the field itself: the window is never read.
            receives.push_back({fr.peer, fr.pulse, sizeof(std::uint64_t), 1});
            args_.recvs[r] = {fr.pulse, static_cast<int>(r)};
        }
        args_.numMsgs = static_cast<int>(stencil_.sends.size());
        for (std::size_t i = 0; i < stencil_.sends.size(); ++i) {
            const FaceMessage& m = stencil_.sends[i];
            sends.push_back({m.peer, m.pulse});
            JacobiMessage& k = args_.msgs[i];
            k.send = m.send;
            k.remote = m.remote;
            k.pulse = m.pulse;
            k.peer = m.peer;
            k.link = static_cast<int>(i);
            k.normBegin = m.normBegin;
            k.normEnd = m.normEnd;
        }
        DeviceHaloOptions o;
        o.waitTimeoutSeconds = waitTimeoutSeconds;
        o.what = "the fused Jacobi kernel";
        // Collective; refuses (on every rank) a send without a load/store path.
        halo_ = std::make_unique<DeviceHalo>(world_, backend_, receives, sends, o);
        args_.view = halo_->view();

        // Mapping may fail on one rank only: every rank learns the first
        // rank's reason (runtime::agreeOnReason), so none goes on alone.
        std::exception_ptr failure;
        std::string why;
        try {
            for (std::size_t i = 0; i < stencil_.sends.size(); ++i) {
                JacobiMessage& k = args_.msgs[i];
                auto* field0 = static_cast<double*>(fields_[0]->peerBase(k.peer));
                auto* field1 = static_cast<double*>(fields_[1]->peerBase(k.peer));
                if (!field0 || !field1) {
                    throwError(ErrorKind::InvalidInput,
                               fmt::format("rank {} cannot store into rank {}'s Jacobi fields with the {} backend (no "
                                           "NVLink/P2P load/store path); the fused kernel needs one to every "
                                           "neighbour: use --transport nccl or staged",
                                           world_.rank(), k.peer, toString(backend_)));
                }
                k.peerField[0] = field0;
                k.peerField[1] = field1;
                notes_.push_back(fmt::format("pulse {} -> rank {}: {} cells, direct stores into its field",
                                             pulseName(k.pulse, stencil_.sends[i].direction, stencil_.sends[i].dim),
                                             k.peer, k.send.count));
            }
        } catch (const std::exception& e) {
            failure = std::current_exception();
            why = e.what();
        }
        if (const std::string agreed = runtime::agreeOnReason(world_, why); !agreed.empty()) {
            if (failure) std::rethrow_exception(failure);
            throwError(ErrorKind::InvalidInput, agreed);
        }
        checkLines();
        notes_.push_back(fields_[0]->describe());
    }

    void checkLines() {
        for (int p = 0; p < stencil_.numPulses; ++p) {
            const FaceMessage* send = nullptr;
            for (const auto& m : stencil_.sends) {
                if (m.pulse == p) send = &m;
            }
            const FaceReceive* recv = nullptr;
            for (const auto& r : stencil_.receives) {
                if (r.pulse == p) recv = &r;
            }
            const LineRecord outgoing =
                send ? LineRecord{send->remote.start, send->remote.stride, send->remote.count} : LineRecord{};
            LineRecord incoming;
            world_.sendRecvBytes(send ? std::as_bytes(std::span(&outgoing, 1)) : std::span<const std::byte>{},
                                 send ? send->peer : -1,
                                 recv ? std::as_writable_bytes(std::span(&incoming, 1)) : std::span<std::byte>{},
                                 recv ? recv->peer : -1, 200 + p);
            if (!recv) continue;
            if (incoming.start != recv->recv.start || incoming.stride != recv->recv.stride ||
                incoming.count != recv->recv.count) {
                throwError(ErrorKind::Internal,
                           fmt::format("rank {}: pulse {} from rank {} would deliver {} cells at {} (stride {}) but "
                                       "this rank expects {} at {} (stride {}); the ranks' stencils come from "
                                       "different plans",
                                       world_.rank(), p, recv->peer, incoming.count, incoming.start, incoming.stride,
                                       recv->recv.count, recv->recv.start, recv->recv.stride));
            }
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

        // Every block may spin (the last one waits), so all must be resident
        // at once; ranks sharing the GPU share its SMs.
        const int resident = maxResidentJacobiBlocks();
        int blocks = maxBlocksOption > 0 ? std::min(maxBlocksOption, resident) : defaultJacobiBlocks();
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

    runtime::World& world_;
    LocalStencil stencil_;
    Backend backend_;
    int withholdPulse_ = -1;
    std::size_t cells_ = 0;  // per field, the same on every rank
    std::unique_ptr<transport::PeerMemory> fields_[2];
    // Declared after the fields, so destroyed before them: its destructor
    // synchronises the device and passes a barrier, after which no peer
    // still stores into the fields freed next.
    std::unique_ptr<DeviceHalo> halo_;
    cuda::DeviceBuffer<unsigned> counters_;
    JacobiArgs args_;
    int blocks_ = 1;
    std::uint64_t sequence_ = 0;
    std::vector<std::string> notes_;
};

}  // namespace

std::unique_ptr<FusedJacobi> makeFusedJacobi(runtime::World& world, const LocalStencil& stencil,
                                             const FusedJacobiOptions& options) {
    return std::make_unique<FusedJacobiImpl>(world, stencil, options);
}

}  // namespace haloex::stencil
