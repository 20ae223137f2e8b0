// Dynamic ("rolling") pruning on the GPU (NonbondedOptions::rlistInner):
//  - the build's full prune equals the CPU reference (pruneReference) exactly,
//    entry by entry, for the local and the non-local list;
//  - rolling: compute j re-prunes part j % parts with the positions of step j,
//    so after any number of computes every part holds exactly the reference
//    prune with the positions of the step that last pruned it -- also when the
//    step is a replayed CUDA graph (the part counter lives on the device);
//  - forces and energies with pruning equal those without over several steps
//    of moving atoms, and no pair within rc is ever missing from the inner
//    list the next step evaluates.
// Atoms move ballistically by at most kMaxStep nm per step and dimension, so
// the inner radius below provably holds for `parts` steps.
#include <gtest/gtest.h>

#include <cmath>
#include <fmt/format.h>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "haloex/core/error.hpp"
#include "haloex/detail/cuda/blocking_ops.hpp"
#include "gpu_test_support.hpp"
#include "haloex/cuda/device_buffer.hpp"
#include "haloex/md/gpu/cluster_reference.hpp"
#include "haloex/md/gpu/nonbonded.hpp"
#include "md_test_support.hpp"

using namespace haloex;
using namespace haloex::md::gpu;
using haloex::testing::FloatSystem;
using haloex::testing::RankSystem;
using haloex::testing::upload;

namespace {

constexpr double kRlist = 1.0;
constexpr int kParts = 4;
constexpr float kMaxStep = 0.002f;  // nm per step and dimension
// Two atoms approach by at most 2 sqrt(3) kMaxStep per step: 0.028 nm in
// kParts steps, so pairs beyond 0.93 nm at a prune stay beyond rc = 0.9 nm
// for the inner list's life; and 0.055 nm in 8 steps < rlist - rc.
constexpr double kRlistInner = 0.93;
constexpr int kSteps = 8;

// One rank's atoms and their positions at steps 0, 1, ...: x(j) = x(0) + j v,
// v per global atom (halo copies move with their atom).
struct Moving {
    std::string name;
    std::vector<Vec3f> x0;
    std::vector<Vec3f> velocity;  // nm per step
    std::vector<float> q;
    std::vector<plan::ZoneMask> zone;  // empty: all home
    std::vector<bool> padding;
    int numHome = 0;
    plan::Box box;
    std::array<bool, 3> periodic{true, true, true};

    std::vector<Vec3f> at(int step) const {
        std::vector<Vec3f> x = x0;
        for (std::size_t i = 0; i < x.size(); ++i) x[i] += velocity[i] * static_cast<float>(step);
        return x;
    }
    SearchSettings settings(int maxJ) const { return {box, periodic, kRlist, maxJ}; }
};

std::vector<Vec3f> velocities(const std::vector<int>& globalIds, std::uint64_t seed) {
    std::vector<Vec3f> v(globalIds.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
        if (globalIds[i] < 0) continue;
        std::mt19937_64 rng(seed * 1000003 + static_cast<std::uint64_t>(globalIds[i]));
        std::uniform_real_distribution<float> u(-kMaxStep, kMaxStep);
        v[i] = {u(rng), u(rng), u(rng)};
    }
    return v;
}

Moving movingOf(const FloatSystem& s) {
    Moving m{s.name, s.x, {}, s.q, {}, std::vector<bool>(s.x.size(), false), static_cast<int>(s.x.size()), s.box};
    std::vector<int> ids(s.x.size());
    for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int>(i);
    m.velocity = velocities(ids, 5);
    return m;
}

Moving movingOf(const RankSystem& r, const std::string& name) {
    Moving m{fmt::format("{} rank {}", name, r.rank), r.x, {}, r.q, r.zone, {}, r.numHome, r.box, r.periodic};
    for (int i = 0; i < r.numLocal; ++i) m.padding.push_back((r.zone[i] & plan::kPaddingMask) != 0);
    m.velocity = velocities(r.globalId, 5);
    return m;
}

struct Device {
    cuda::DeviceBuffer<Vec3f> x;
    cuda::DeviceBuffer<float> q;
    cuda::DeviceBuffer<std::uint8_t> zone;
    cuda::DeviceBuffer<Vec3f> f;
    bool haveZone;
    explicit Device(const Moving& m)
        : x(upload(m.x0)), q(upload(m.q)), zone(upload(m.zone)), f(std::max<std::size_t>(m.x0.size(), 1)),
          haveZone(!m.zone.empty()) {}
    void setPositions(const std::vector<Vec3f>& host, cudaStream_t stream) {
        HALOEX_CUDA_CHECK(
            cudaMemcpyAsync(x.data(), host.data(), host.size() * sizeof(Vec3f), cudaMemcpyHostToDevice, stream));
        HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
    }
};

void build(Nonbonded& nb, const Moving& m, Device& d, cudaStream_t stream) {
    d.setPositions(m.x0, stream);
    nb.build(d.x.data(), d.q.data(), d.haveZone ? d.zone.data() : nullptr, m.numHome, static_cast<int>(m.x0.size()),
             m.box, m.periodic, stream);
}

NonbondedOptions pruning(double rlistInner = kRlistInner, int parts = kParts, int maxJ = 0) {
    NonbondedOptions o;
    o.rlistInner = rlistInner;
    o.pruneParts = parts;
    o.maxJClustersPerEntry = maxJ;
    return o;
}

// Entry lengths the prune tests run: the automatic one (short items at these
// sizes), and entries of several chunks of 32 records (128, and 45: a last
// chunk that is not full), whose kept pairs the kernels write in one run.
constexpr int kEntryLengths[] = {0, 128, 45};

std::string firstDifference(const PairListHost& gpu, const PairListHost& ref) {
    if (gpu.entries.size() != ref.entries.size()) {
        return fmt::format("GPU has {} entries, CPU {}", gpu.entries.size(), ref.entries.size());
    }
    for (std::size_t e = 0; e < ref.entries.size(); ++e) {
        const ClusterEntry& a = gpu.entries[e];
        const ClusterEntry& b = ref.entries[e];
        if (a.ci != b.ci || a.jEnd - a.jBegin != b.jEnd - b.jBegin) {
            return fmt::format("entry {}: GPU ci {} keeps {} pairs, CPU ci {} keeps {}", e, a.ci, a.jEnd - a.jBegin,
                               b.ci, b.jEnd - b.jBegin);
        }
        for (int k = 0; k < b.jEnd - b.jBegin; ++k) {
            const ClusterPair& p = gpu.pairs[a.jBegin + k];
            const ClusterPair& r = ref.pairs[b.jBegin + k];
            if (p.cj != r.cj || p.shift != r.shift || p.maskLo != r.maskLo || p.maskHi != r.maskHi) {
                return fmt::format("entry {} (ci {}) kept pair {}: GPU cj {} shift {}, CPU cj {} shift {}", e, b.ci, k,
                                   p.cj, p.shift, r.cj, r.shift);
            }
        }
    }
    return {};
}

// The expected inner list after rolling: entry e of part k as pruned with
// the positions of step prunedAt[k] (-1: the build's, step 0, all parts).
PairListHost expectedRolling(const ClusterLayoutHost& layout, const PairListHost& outer, const Moving& m,
                             const SearchSettings& settings, const std::vector<int>& prunedAt) {
    const int numEntries = static_cast<int>(outer.entries.size());
    PairListHost out;
    for (int k = 0; k < kParts; ++k) {
        const std::vector<Vec3f> x = m.at(std::max(prunedAt[k], 0));
        const int begin = prunePartBegin(numEntries, kParts, k), end = prunePartBegin(numEntries, kParts, k + 1);
        const PairListHost part = pruneReference(layout, outer, x, settings, kRlistInner, begin, end);
        for (int e = begin; e < end; ++e) {
            const ClusterEntry& src = part.entries[e];
            const int first = static_cast<int>(out.pairs.size());
            out.pairs.insert(out.pairs.end(), part.pairs.begin() + src.jBegin, part.pairs.begin() + src.jEnd);
            out.entries.push_back({src.ci, first, static_cast<int>(out.pairs.size()), 0});
        }
    }
    return out;
}

// Runs `steps` computes of both lists (step j with positions x(j)), each
// through `compute`, and after every step checks each list's inner list
// against the reference for the steps its parts were last pruned at.
template <class Compute>
void checkRolling(const Moving& m, Nonbonded& nb, Device& d, cudaStream_t stream, int steps, Compute compute) {
    const ClusterLayoutHost layout = buildLayoutReference(m.x0, m.zone, m.numHome);
    const SearchSettings settings = m.settings(nb.maxJClustersPerEntry());
    PairListHost outers[2];
    for (bool nonlocal : {false, true}) {
        const ListKind kind = nonlocal ? ListKind::Nonlocal : ListKind::Local;
        outers[nonlocal] = searchReference(layout, m.x0, m.zone, nonlocal, settings);
        ASSERT_TRUE(firstDifference(nb.copyListToHost(kind), outers[nonlocal]).empty())
            << m.name << ": outer list differs";
    }
    std::vector<int> prunedAt(kParts, -1);
    const auto expectInner = [&](const std::string& when) {
        for (bool nonlocal : {false, true}) {
            const ListKind kind = nonlocal ? ListKind::Nonlocal : ListKind::Local;
            const PairListHost& outer = outers[nonlocal];
            if (outer.entries.empty()) continue;
            const PairListHost expected = expectedRolling(layout, outer, m, settings, prunedAt);
            const std::string diff = firstDifference(nb.copyListToHost(kind, ListView::Evaluated), expected);
            EXPECT_TRUE(diff.empty()) << m.name << " " << (nonlocal ? "non-local" : "local") << " inner list " << when
                                      << ": " << diff;
        }
    };
    expectInner("after the build (full prune)");
    for (int j = 0; j < steps; ++j) {
        d.setPositions(m.at(j), stream);
        compute(j);
        HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
        prunedAt[j % kParts] = j;
        expectInner(fmt::format("after compute {} (parts pruned at steps {})", j, fmt::join(prunedAt, ", ")));
    }
}

void computeBoth(Nonbonded& nb, Device& d, bool energies, cudaStream_t stream) {
    HALOEX_CUDA_CHECK(cudaMemsetAsync(d.f.data(), 0, d.f.bytes(), stream));
    if (energies) nb.clearEnergies(stream);
    nb.computeLocal(d.x.data(), d.f.data(), energies, stream);
    nb.computeNonlocal(d.x.data(), d.f.data(), energies, stream);
}

std::vector<Moving> cases() {
    const md::ForceField ff;
    std::vector<Moving> out;
    out.push_back(movingOf(haloex::testing::loadRef3000(ff)));
    out.push_back(movingOf(haloex::testing::latticeSystem(30000, 9, 0.02, ff)));
    const auto ranks =
        haloex::testing::decompose(haloex::testing::latticeSystem(16000, 5, 0.02, ff), {2, 2, 1}, ff.rc, kRlist, 4);
    out.push_back(movingOf(ranks[0], "g2x2x1"));
    return out;
}

}  // namespace

// The build's full prune against the reference, at rc and at a buffered radius.
TEST(PruneGpu, FullPruneAtBuildMatchesReference) {
    HALOEX_REQUIRE_GPU();
    const md::ForceField ff;
    cuda::Stream stream;
    for (const Moving& m : cases()) {
        for (const auto& [rlistInner, maxJ] : {std::pair{ff.rc, 0}, std::pair{kRlistInner, 0},
                                               std::pair{kRlistInner, 128}, std::pair{kRlistInner, 45}}) {
            SCOPED_TRACE(fmt::format("maxJClustersPerEntry {}", maxJ));
            Nonbonded nb(ff, kRlist, pruning(rlistInner, kParts, maxJ));
            Device d(m);
            build(nb, m, d, stream);
            EXPECT_TRUE(nb.pruning());
            const ClusterLayoutHost layout = buildLayoutReference(m.x0, m.zone, m.numHome);
            const SearchSettings settings = m.settings(nb.maxJClustersPerEntry());
            for (bool nonlocal : {false, true}) {
                const ListKind kind = nonlocal ? ListKind::Nonlocal : ListKind::Local;
                const PairListHost outer = searchReference(layout, m.x0, m.zone, nonlocal, settings);
                const PairListHost ref = pruneReference(layout, outer, m.x0, settings, rlistInner);
                const PairListHost gpu = nb.copyListToHost(kind, ListView::Evaluated);
                const std::string diff = firstDifference(gpu, ref);
                EXPECT_TRUE(diff.empty()) << m.name << " " << (nonlocal ? "non-local" : "local") << " at rlistInner "
                                          << rlistInner << ": " << diff;
                // The outer list is unchanged and still the stats' list.
                EXPECT_TRUE(firstDifference(nb.copyListToHost(kind), outer).empty()) << m.name;
                EXPECT_EQ(nb.stats(kind).clusterPairs, static_cast<std::int64_t>(outer.pairs.size())) << m.name;
                if (!outer.pairs.empty()) {
                    fmt::print("{} {}: rlistInner {} keeps {} of {} cluster pairs ({:.1f}%)\n", m.name,
                               nonlocal ? "non-local" : "local", rlistInner, gpu.pairs.size(), outer.pairs.size(),
                               100.0 * gpu.pairs.size() / outer.pairs.size());
                }
            }
        }
    }
}

// Rolling parts, enqueued step by step and replayed from a captured graph.
TEST(PruneGpu, RollingPartsMatchReferenceAtThePositionsTheyWerePrunedWith) {
    HALOEX_REQUIRE_GPU();
    const md::ForceField ff;
    cuda::Stream stream;
    for (const Moving& m : cases()) {
        for (int maxJ : kEntryLengths) {
            SCOPED_TRACE(fmt::format("{}, maxJClustersPerEntry {}", m.name, maxJ));
            Nonbonded nb(ff, kRlist, pruning(kRlistInner, kParts, maxJ));
            Device d(m);
            build(nb, m, d, stream);
            checkRolling(m, nb, d, stream, kSteps, [&](int) { computeBoth(nb, d, false, stream); });

            // A rebuild restarts at part 0; then one captured step, replayed.
            build(nb, m, d, stream);
            cudaGraph_t graph = nullptr;
            HALOEX_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
            computeBoth(nb, d, true, stream);
            HALOEX_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
            cudaGraphExec_t exec = nullptr;
            HALOEX_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
            checkRolling(m, nb, d, stream, kSteps + 1, [&](int) { HALOEX_CUDA_CHECK(cudaGraphLaunch(exec, stream)); });
            HALOEX_CUDA_CHECK(cudaGraphExecDestroy(exec));
            HALOEX_CUDA_CHECK(cudaGraphDestroy(graph));
        }
    }
}

// Same forces and energies with and without pruning while atoms move, and
// every pair within rc of the next step's positions is in the inner list.
TEST(PruneGpu, ForcesWithPruningEqualForcesWithout) {
    HALOEX_REQUIRE_GPU();
    const md::ForceField ff;
    cuda::Stream stream;
    for (const Moving& m : cases()) {
        SCOPED_TRACE(m.name);
        Nonbonded on(ff, kRlist, pruning()), off(ff, kRlist);
        Device dOn(m), dOff(m);
        build(on, m, dOn, stream);
        build(off, m, dOff, stream);
        EXPECT_FALSE(off.pruning());
        std::unique_ptr<bool[]> skip(new bool[m.x0.size()]);
        for (std::size_t i = 0; i < m.x0.size(); ++i) skip[i] = m.padding[i];
        for (int j = 0; j < kSteps; ++j) {
            const std::vector<Vec3f> x = m.at(j);
            dOn.setPositions(x, stream);
            dOff.setPositions(x, stream);
            computeBoth(on, dOn, true, stream);
            computeBoth(off, dOff, true, stream);
            HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
            std::vector<Vec3f> fOn(x.size()), fOff(x.size());
            HALOEX_CUDA_CHECK(cudaMemcpy(fOn.data(), dOn.f.data(), x.size() * sizeof(Vec3f), cudaMemcpyDeviceToHost));
            HALOEX_CUDA_CHECK(cudaMemcpy(fOff.data(), dOff.f.data(), x.size() * sizeof(Vec3f), cudaMemcpyDeviceToHost));
            std::vector<Vec3d> expected(fOff.size());
            for (std::size_t i = 0; i < fOff.size(); ++i) expected[i] = Vec3d(fOff[i]);
            const auto diff =
                haloex::testing::compareForces(fOn, expected, -1, std::span<const bool>(skip.get(), x.size()));
            EXPECT_LE(diff.relativeNorm, 1e-5) << "step " << j << ": forces with pruning vs without: " << diff.report;
            double eOn[kNumEnergies], eOff[kNumEnergies];
            HALOEX_CUDA_CHECK(cudaMemcpy(eOn, on.deviceEnergies(), sizeof(eOn), cudaMemcpyDeviceToHost));
            HALOEX_CUDA_CHECK(cudaMemcpy(eOff, off.deviceEnergies(), sizeof(eOff), cudaMemcpyDeviceToHost));
            // Same pairs, summed in another order: float rounding of the
            // per-warp sums only (the totals are differences of sums ~1e4).
            for (int k = 0; k < kNumEnergies; ++k) {
                EXPECT_NEAR(eOn[k], eOff[k], 1e-5 * std::abs(eOff[k]) + 2e-3) << "step " << j << " energy " << k;
            }
            // The list the next step evaluates holds every pair within rc
            // at the next step's positions.
            const std::vector<Vec3f> next = m.at(j + 1);
            dOn.setPositions(next, stream);
            for (ListKind kind : {ListKind::Local, ListKind::Nonlocal}) {
                const std::int64_t inner = on.countPairsWithinCutoff(kind, dOn.x.data(), stream);
                const std::int64_t outer = on.countPairsWithinCutoff(kind, dOn.x.data(), stream, ListView::Outer);
                EXPECT_EQ(inner, outer) << "step " << j << (kind == ListKind::Local ? " local" : " non-local")
                                        << ": pairs within rc missing from the inner list";
            }
            if (j == 0) {
                const std::int64_t evaluated =
                    static_cast<std::int64_t>(on.copyListToHost(ListKind::Local, ListView::Evaluated).pairs.size());
                fmt::print("{}: {:.2e} relative force difference; local list {} of {} cluster pairs evaluated\n",
                           m.name, diff.relativeNorm, evaluated, on.stats(ListKind::Local).clusterPairs);
                EXPECT_LT(evaluated, on.stats(ListKind::Local).clusterPairs) << "pruning dropped nothing";
                // The census counts what the copies hold: the inner list's
                // cluster pairs, and the outer list's as stats() does.
                const ListCensus inner = on.census(ListKind::Local, dOn.x.data(), stream);
                const ListCensus outer = on.census(ListKind::Local, dOn.x.data(), stream, ListView::Outer);
                EXPECT_EQ(inner.clusterPairs, evaluated);
                EXPECT_EQ(outer.clusterPairs, on.stats(ListKind::Local).clusterPairs);
                EXPECT_EQ(outer.atomPairs, on.stats(ListKind::Local).atomPairs);
                EXPECT_LT(inner.atomPairs, outer.atomPairs);
                EXPECT_EQ(inner.pairsWithinCutoff, outer.pairsWithinCutoff);
                EXPECT_LE(inner.pairsWithinCutoff, inner.atomPairs);
                // Both views walk the same entries; only the inner list's can be empty.
                EXPECT_EQ(inner.entries, on.stats(ListKind::Local).entries);
                EXPECT_EQ(outer.entries, inner.entries);
                EXPECT_EQ(outer.emptyEntries, 0);
                EXPECT_LE(inner.emptyEntries, inner.entries);
                const auto hostInner = on.copyListToHost(ListKind::Local, ListView::Evaluated);
                std::int64_t empty = 0;
                for (const auto& entry : hostInner.entries) empty += entry.jEnd == entry.jBegin ? 1 : 0;
                EXPECT_EQ(inner.emptyEntries, empty);
            }
        }
    }
}
