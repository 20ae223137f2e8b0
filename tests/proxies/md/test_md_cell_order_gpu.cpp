// gpu::CellOrder (cell_order.hpp, docs/md-engine.md "Atoms in cell order"):
// home atoms put in its order before a build come out of the build's sort in
// place -- the home slots hold atoms 0, 1, 2, ... in turn -- on whole systems
// and on decomposed ranks (halo atoms after the home ones), with the sort by
// columns and with the global radix sort; the order is a permutation; a
// non-finite position leaves it the identity; no atom and one atom are fine.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fmt/format.h>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "gpu_test_support.hpp"
#include "haloex/cuda/device_buffer.hpp"
#include "haloex/md/gpu/cell_order.hpp"
#include "haloex/md/gpu/nonbonded.hpp"
#include "md_test_support.hpp"

using namespace haloex;
using namespace haloex::md::gpu;
using haloex::testing::download;
using haloex::testing::upload;

namespace {

constexpr double kRlist = 1.0;

std::vector<int> cellOrderOf(const std::vector<Vec3f>& home) {
    const auto n = static_cast<int>(home.size());
    const cuda::DeviceBuffer<Vec3f> dX = upload(home);
    cuda::Stream stream;
    CellOrder order;
    const int* dOrder = order.compute(dX.data(), n, stream);
    std::vector<int> out(home.size());
    if (n > 0) {
        HALOEX_CUDA_CHECK(
            cudaMemcpyAsync(out.data(), dOrder, out.size() * sizeof(int), cudaMemcpyDeviceToHost, stream));
    }
    HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
    return out;
}

// The first home slot whose atom breaks the run 0, 1, 2, ... (empty slots
// skipped), or "" when the home slots hold exactly the home atoms in order.
std::string firstOutOfPlace(const ClusterLayoutHost& layout, int numHome) {
    int expected = 0;
    const long long homeSlots = static_cast<long long>(layout.numHomeClusters) * kClusterSize;
    for (long long s = 0; s < homeSlots; ++s) {
        const int atom = layout.atomOfSlot[static_cast<std::size_t>(s)];
        if (atom < 0) continue;
        if (atom != expected) return fmt::format("home slot {} holds atom {}, expected {}", s, atom, expected);
        ++expected;
    }
    if (expected != numHome) return fmt::format("the home slots hold {} atoms, expected {}", expected, numHome);
    return {};
}

// Reorders the home part of one rank's atoms by CellOrder, builds the lists
// and checks that the build left the home atoms in place.
void expectBuildKeepsCellOrder(std::vector<Vec3f> x, std::vector<float> q, std::vector<plan::ZoneMask> zone,
                               int numHome, const plan::Box& box, std::array<bool, 3> periodic,
                               const std::string& name) {
    SCOPED_TRACE(name);
    const std::vector<Vec3f> home(x.begin(), x.begin() + numHome);
    const std::vector<int> order = cellOrderOf(home);
    std::vector<int> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int> identity(order.size());
    std::iota(identity.begin(), identity.end(), 0);
    ASSERT_EQ(sorted, identity) << "the order is not a permutation of the home atoms";
    const std::vector<Vec3f> xBefore = x;
    const std::vector<float> qBefore = q;
    for (int i = 0; i < numHome; ++i) {
        x[i] = xBefore[static_cast<std::size_t>(order[i])];
        q[i] = qBefore[static_cast<std::size_t>(order[i])];
    }
    const md::ForceField ff;
    for (const char* columnSort : {"1", "0"}) {
        SCOPED_TRACE(fmt::format("HALOEX_COLUMN_SORT={}", columnSort));
        ::setenv("HALOEX_COLUMN_SORT", columnSort, 1);
        const cuda::DeviceBuffer<Vec3f> dX = upload(x);
        const cuda::DeviceBuffer<float> dQ = upload(q);
        const cuda::DeviceBuffer<std::uint8_t> dZone = upload(zone);
        cuda::Stream stream;
        Nonbonded nb(ff, kRlist);
        nb.build(dX.data(), dQ.data(), zone.empty() ? nullptr : dZone.data(), numHome, static_cast<int>(x.size()), box,
                 periodic, stream);
        const ClusterLayoutHost layout = nb.copyLayoutToHost();
        EXPECT_EQ(firstOutOfPlace(layout, numHome), "");
        // Without the order the build does move them (else the check proves nothing).
        const cuda::DeviceBuffer<Vec3f> dUnsorted = upload(xBefore);
        const cuda::DeviceBuffer<float> dQUnsorted = upload(qBefore);
        Nonbonded unsorted(ff, kRlist);
        unsorted.build(dUnsorted.data(), dQUnsorted.data(), zone.empty() ? nullptr : dZone.data(), numHome,
                       static_cast<int>(x.size()), box, periodic, stream);
        EXPECT_NE(firstOutOfPlace(unsorted.copyLayoutToHost(), numHome), "");
    }
    ::unsetenv("HALOEX_COLUMN_SORT");
}

TEST(CellOrderGpu, TheBuildLeavesWholeSystemsInPlace) {
    HALOEX_REQUIRE_GPU();
    const md::ForceField ff;
    std::vector<haloex::testing::FloatSystem> systems;
    for (int n : {777, 5000})
        systems.push_back(haloex::testing::uniformSystem(n, std::cbrt(n / 100.0) + 0.4, 3 + n, ff));
    systems.push_back(haloex::testing::latticeSystem(30000, 5, 0.02, ff));
    // Tall columns of many clusters.
    systems.push_back(haloex::testing::uniformSystemInBox(4000, {2.0, 2.0, 10.0}, 9, ff));
    for (const auto& s : systems) {
        expectBuildKeepsCellOrder(s.x, s.q, {}, static_cast<int>(s.x.size()), s.box, {true, true, true},
                                  fmt::format("{} ({} atoms)", s.name, s.x.size()));
    }
}

TEST(CellOrderGpu, TheBuildLeavesTheHomeAtomsOfDecomposedRanksInPlace) {
    HALOEX_REQUIRE_GPU();
    const md::ForceField ff;
    const auto system = haloex::testing::latticeSystem(12000, 21, 0.02, ff);
    for (const plan::Int3 grid : {plan::Int3{2, 1, 1}, plan::Int3{2, 2, 1}, plan::Int3{2, 2, 2}}) {
        for (const auto& r : haloex::testing::decompose(system, grid, ff.rc, kRlist, 4)) {
            expectBuildKeepsCellOrder(r.x, r.q, r.zone, r.numHome, r.box, r.periodic,
                                      fmt::format("grid {}x{}x{} rank {}", grid[0], grid[1], grid[2], r.rank));
        }
    }
}

TEST(CellOrderGpu, ANonFinitePositionLeavesTheIdentity) {
    HALOEX_REQUIRE_GPU();
    const md::ForceField ff;
    auto s = haloex::testing::uniformSystem(1000, 2.5, 17, ff);
    s.x[500].y = std::numeric_limits<float>::quiet_NaN();
    std::vector<int> identity(s.x.size());
    std::iota(identity.begin(), identity.end(), 0);
    EXPECT_EQ(cellOrderOf(s.x), identity);
    s.x[500].y = 1.0f;
    s.x[20].z = std::numeric_limits<float>::infinity();
    EXPECT_EQ(cellOrderOf(s.x), identity);
}

TEST(CellOrderGpu, NoAtomAndOneAtomAreFine) {
    HALOEX_REQUIRE_GPU();
    EXPECT_TRUE(cellOrderOf({}).empty());
    EXPECT_EQ(cellOrderOf({Vec3f{1.0f, 2.0f, 3.0f}}), std::vector<int>{0});
    // Calls of growing and shrinking sizes on one object.
    const md::ForceField ff;
    CellOrder order;
    cuda::Stream stream;
    for (int n : {10, 3000, 50, 3000}) {
        const auto s = haloex::testing::uniformSystem(n, std::cbrt(n / 100.0) + 0.4, n, ff);
        const cuda::DeviceBuffer<Vec3f> dX = upload(s.x);
        const int* dOrder = order.compute(dX.data(), n, stream);
        std::vector<int> got(static_cast<std::size_t>(n));
        HALOEX_CUDA_CHECK(
            cudaMemcpyAsync(got.data(), dOrder, got.size() * sizeof(int), cudaMemcpyDeviceToHost, stream));
        HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
        EXPECT_EQ(got, cellOrderOf(s.x)) << n << " atoms";
    }
}

}  // namespace
