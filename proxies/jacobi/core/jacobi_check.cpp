#include "jacobi_check.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <span>

#include "haloex/core/error.hpp"
#include "jacobi_cpu.hpp"

namespace haloex::jacobi {
namespace {
constexpr int kTagBlock = 3000;
}

void checkAgainstReference(RunResult& r, const ProblemSpec& spec, const stencil::LocalStencil& stencil,
                           runtime::World& world, const std::vector<double>& myInterior, double myNormSquared,
                           const Reference& reference) {
    HALOEX_ASSERT(myInterior.size() == static_cast<std::size_t>(stencil.nx) * stencil.ny,
                  "a rank's interior has nx * ny cells");
    const double normSquared = world.allReduceValue(myNormSquared, runtime::ReduceOp::Sum);
    r.norm = std::sqrt(normSquared);

    // Rank 0 compares block by block; the others send theirs.
    struct Verdict {
        double maxAbsError = 0.0;
        std::int64_t mismatches = 0;
        double referenceNorm = 0.0;
        std::int64_t firstBadRank = -1;
        std::int64_t firstBadCell = -1;
    } verdict;
    struct Origin {
        std::int32_t x, y, nx, ny;
    };
    const Origin mine{stencil.originX, stencil.originY, stencil.nx, stencil.ny};
    const std::vector<Origin> origins = world.allGather(mine);
    if (world.rank() == 0) {
        HALOEX_ASSERT(reference.interior.size() ==
                          static_cast<std::size_t>(spec.nx) * static_cast<std::size_t>(spec.ny),
                      "the reference holds the whole grid on rank 0");
        verdict.referenceNorm = std::sqrt(reference.normSquared);
        for (int rank = 0; rank < world.size(); ++rank) {
            const Origin& o = origins[static_cast<std::size_t>(rank)];
            std::vector<double> block(static_cast<std::size_t>(o.nx) * o.ny);
            if (rank == 0) {
                block = myInterior;
            } else {
                world.sendRecvBytes({}, -1, std::as_writable_bytes(std::span<double>(block.data(), block.size())), rank,
                                    kTagBlock);
            }
            const std::vector<double> expected = globalBlock(reference.interior, spec.nx, o.x, o.y, o.nx, o.ny);
            const FieldComparison c = compareFields(block.data(), expected.data(), block.size());
            if (c.mismatches > 0 && verdict.mismatches == 0) {
                verdict.firstBadRank = rank;
                verdict.firstBadCell = c.firstMismatch;
            }
            verdict.mismatches += c.mismatches;
            verdict.maxAbsError = std::max(verdict.maxAbsError, c.maxAbsError);
        }
    } else {
        world.sendRecvBytes(std::as_bytes(std::span<const double>(myInterior.data(), myInterior.size())), 0, {}, -1,
                            kTagBlock);
    }
    world.broadcastBytes(std::as_writable_bytes(std::span(&verdict, 1)), 0);

    r.maxAbsError = verdict.maxAbsError;
    r.mismatches = verdict.mismatches;
    r.referenceNorm = verdict.referenceNorm;
    r.normRelativeError = relativeError(r.norm, r.referenceNorm);
    r.status = RunStatus::Passed;
    if (verdict.mismatches > 0) {
        const Origin& o = origins[static_cast<std::size_t>(verdict.firstBadRank)];
        const auto cell = verdict.firstBadCell;
        r.status = RunStatus::Failed;
        r.reason = fmt::format("{} of {} cells differ from the {} reference (max |error| {:.3e}); first at global "
                               "cell ({}, {}) on rank {}",
                               verdict.mismatches, static_cast<long long>(spec.nx) * spec.ny, reference.kind,
                               verdict.maxAbsError, o.x + cell % o.nx, o.y + cell / o.nx, verdict.firstBadRank);
    } else if (!(r.normRelativeError <= kNormTolerance)) {
        r.status = RunStatus::Failed;
        r.reason = fmt::format("residual norm {:.17g} differs from the reference's {:.17g} by {:.3e} (relative; "
                               "allowed {:.0e})",
                               r.norm, r.referenceNorm, r.normRelativeError, kNormTolerance);
    }
}

}  // namespace haloex::jacobi
