// The CPU-orchestrated variants over haloex::GridHalo (halo_variant.hpp).
//
// Per iteration: the boundary kernel (the four boundary lines) on the halo
// stream and the interior kernel on the compute stream at the same time; the
// boundary kernel also stores each sent face cell into the halo's send
// staging (GridHalo's pack hook, bindPackedSends), so GridHalo::gatherPacked
// of the new field on the halo stream runs no pack kernel: the transport's
// exchangeBlocks(InPlace) of every face at once (the Jacobi plan is
// faces-only, so no pulse waits for another; ipc through a pattern bound on
// the first call), then one unpack kernel. The two streams are joined by
// events at the end of the iteration. The gather reads the staging and
// writes halo cells only, which the interior kernel never touches.
#include "halo_variant.hpp"

#include <fmt/format.h>

#include <vector>

#include "haloex/core/error.hpp"
#include "haloex/cuda/check.hpp"
#include "haloex/cuda/device_buffer.hpp"
#include "haloex/halo/collective_buffer.hpp"
#include "haloex/halo/grid_halo.hpp"
#include "../core/jacobi_faces.hpp"
#include "jacobi_kernels.hpp"

namespace haloex::jacobi::gpu {
namespace {

transport::TransportOptions deviceOptions(bool allowSharedGpus) {
    transport::TransportOptions o;
    o.memorySpace = transport::MemorySpace::Device;
    o.allowSharedGpus = allowSharedGpus;
    return o;
}

// What the backend's exchangeBlocks does per iteration, for the run summary.
std::string mechanism(Backend backend) {
    switch (backend) {
        case Backend::Staged:
            return "host-staged: D2H copy of the staging, stream sync, MPI_Irecv/Isend of every face and one wait "
                   "(one round trip), H2D copy (one sync per iteration)";
        case Backend::Ipc:
            return "CUDA IPC: peer cudaMemcpyAsync of every face from the staging into the receivers' landing "
                   "buffers (offered once, when the pattern was bound; two halves by parity), one stream sync, one "
                   "MPI round of notifications; the unpack kernel reads the landing buffer in place";
        case Backend::Nccl:
            return "NCCL: one ncclGroupStart/End of ncclSend/ncclRecv per iteration, stream-ordered (no host sync)";
        default: return std::string(toString(backend));
    }
}

class HaloVariant final : public Variant {
public:
    HaloVariant(Backend backend, const plan::GridHaloPlan& plan, const stencil::LocalStencil& s, runtime::World& world,
                bool allowSharedGpus)
        : backend_(backend), s_(s), transport_(makeTransport(backend, world, deviceOptions(allowSharedGpus))),
          halo_(*transport_, plan), haloStream_(cuda::Stream::highestPriority()) {
        HALOEX_ASSERT(plan.numLocal() == s.numLocal(), "the stencil and the plan describe the same block");
        for (int parity = 0; parity < 2; ++parity) {
            fields_.push_back(allocateCollective<double>(world, *transport_, static_cast<std::size_t>(s.numLocal()),
                                                         fmt::format("Jacobi field {}", parity)));
        }
        HALOEX_ASSERT(s.sends.size() + s.unsentLines.size() <= static_cast<std::size_t>(kMaxBoundaryLines),
                      "a 2D stencil has at most four boundary lines");
        packed_ = halo_.bindPackedSends<double>();
        auto addLine = [&](const stencil::Line& line, std::int64_t packOffset, int normBegin, int normEnd) {
            const int l = work_.numLines++;
            work_.lines[l] = line;
            work_.packOffset[l] = packOffset;
            work_.normBegin[l] = normBegin;
            work_.normEnd[l] = normEnd;
        };
        for (const auto& m : s.sends) addLine(m.send, stagingOffsetOf(plan, m), m.normBegin, m.normEnd);
        for (const auto& u : s.unsentLines) addLine(u.cells, -1, u.normBegin, u.normEnd);
        planBlocks(work_.lines, work_.numLines, work_.firstBlock);
    }

    double* field(int parity) override { return fields_[static_cast<std::size_t>(parity & 1)].data(); }
    cudaStream_t stream() override { return compute_; }

    void iterate(int parity, double* norm) override {
        const double* cur = field(parity);
        double* next = field(1 - parity);
        // The boundary kernel overwrites cells the previous interior read.
        interiorDone_.waitOn(haloStream_);
        if (!stagingFilled_) {
            // The sends that are not face cells (fixed boundary values beside
            // a fixed edge) never change: packed once from the first field.
            halo_.packSends(cur, haloStream_.get());
            stagingFilled_ = true;
        }
        // Writes the staging after the previous gather's reads: both on the halo stream.
        computeBoundary(work_, cur, next, s_.ax, packed_.staging, norm, haloStream_);
        computeInterior(cur, next, s_.ax, s_.nx, s_.ny, norm, compute_);
        interiorDone_.record(compute_);
        halo_.gatherPacked(next, haloStream_.get());
        haloDone_.record(haloStream_);
        haloDone_.waitOn(compute_);
    }

    void finish() override {
        HALOEX_CUDA_CHECK(cudaStreamSynchronize(haloStream_));
        HALOEX_CUDA_CHECK(cudaStreamSynchronize(compute_));
        transport_->checkForFailure();
    }

    void connect() override {
        halo_.gather(field(0), haloStream_.get());
        finish();
    }

    std::vector<std::string> notes() const override {
        return {fmt::format("haloex::GridHalo::gatherPacked of the faces-only plan over the {} backend on a "
                            "high-priority halo stream (the boundary kernel writes the sent faces into the halo's "
                            "send staging: no pack kernel), the interior computed meanwhile",
                            toString(backend_)),
                mechanism(backend_)};
    }

private:
    // Where face message m's cells go in the staging: its pulse's slots
    // (packedPulses) from the line's place among the pulse's sends.
    std::int64_t stagingOffsetOf(const plan::GridHaloPlan& plan, const stencil::FaceMessage& m) const {
        for (const PackedSendPulse& p : packed_.pulses) {
            if (p.pulse != static_cast<std::size_t>(m.pulse)) continue;
            return static_cast<std::int64_t>(p.offset) + sendSlotOf(plan.pulses[p.pulse], m.send);
        }
        throwError(ErrorKind::Internal,
                   fmt::format("pulse {} is not among the packed gather's pulses; the Jacobi plan is faces-only, so "
                               "every pulse should be",
                               m.pulse));
    }

    Backend backend_;
    stencil::LocalStencil s_;
    std::unique_ptr<transport::BlockTransport> transport_;
    GridHalo halo_;
    PackedSends<double> packed_;
    bool stagingFilled_ = false;
    std::vector<CollectiveBuffer<double>> fields_;
    BoundaryWork work_;
    cuda::Stream compute_;
    cuda::Stream haloStream_;
    cuda::Event interiorDone_, haloDone_;
};

}  // namespace

std::unique_ptr<Variant> makeHaloVariant(Backend backend, const plan::GridHaloPlan& plan,
                                         const stencil::LocalStencil& stencil, runtime::World& world,
                                         bool allowSharedGpus) {
    return std::make_unique<HaloVariant>(backend, plan, stencil, world, allowSharedGpus);
}

}  // namespace haloex::jacobi::gpu
