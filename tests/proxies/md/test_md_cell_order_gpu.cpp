// gpu::CellOrder (cell_order.hpp, docs/md-engine.md "Atoms in cell order")
// on the device: its order is exactly cellOrderReference's (whose property
// -- the layout leaves atoms in that order in place -- test_md_cluster_reference
// checks on the CPU), and the device build leaves home atoms put in it in
// place, on whole systems and decomposed ranks (halo atoms after the home
// ones), with the sort by columns and with the global radix sort (both the
// cell order's and the build's, HALOEX_COLUMN_SORT); a column too long for
// one block's shared memory still sorts; a non-finite position leaves the
// identity; no atom, one atom and calls of changing sizes on one object are
// fine; one graph launch (the default) and twelve launches agree.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fmt/format.h>
#include <limits>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "gpu_test_support.hpp"
#include "haloex/cuda/device_buffer.hpp"
#include "haloex/md/gpu/cell_order.hpp"
#include "haloex/md/gpu/cluster_reference.hpp"
#include "haloex/md/gpu/nonbonded.hpp"
#include "md_test_support.hpp"

using namespace haloex;
using namespace haloex::md::gpu;
using haloex::testing::firstHomeSlotOutOfOrder;
using haloex::testing::upload;

namespace {

constexpr double kRlist = 1.0;

// The device's order of `home`, computed by `order` on a stream of its own.
std::vector<int> deviceCellOrder(CellOrder& order, const std::vector<Vec3f>& home) {
    const auto n = static_cast<int>(home.size());
    const cuda::DeviceBuffer<Vec3f> dX = upload(home);
    cuda::Stream stream;
    const int* dOrder = order.compute(dX.data(), n, stream);
    std::vector<int> out(home.size());
    if (n > 0) {
        HALOEX_CUDA_CHECK(
            cudaMemcpyAsync(out.data(), dOrder, out.size() * sizeof(int), cudaMemcpyDeviceToHost, stream));
    }
    HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
    return out;
}

std::vector<int> deviceCellOrder(const std::vector<Vec3f>& home) {
    CellOrder order;
    return deviceCellOrder(order, home);
}

// One rank's atoms: the device order equals the reference's; put in it, the
// device build (both sort paths) leaves the home atoms in place.
void expectDeviceOrderAndBuild(std::vector<Vec3f> x, std::vector<float> q, std::vector<plan::ZoneMask> zone,
                               int numHome, const plan::Box& box, std::array<bool, 3> periodic,
                               const std::string& name) {
    SCOPED_TRACE(name);
    const std::vector<Vec3f> home(x.begin(), x.begin() + numHome);
    const std::vector<int> order = cellOrderReference(home);
    for (const char* columnSort : {"1", "0"}) {
        ::setenv("HALOEX_COLUMN_SORT", columnSort, 1);
        ASSERT_EQ(deviceCellOrder(home), order)
            << "the device's order differs from the reference's, HALOEX_COLUMN_SORT=" << columnSort;
    }
    haloex::testing::reorderHome(order, numHome, x, q, zone);
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
        EXPECT_EQ(firstHomeSlotOutOfOrder(nb.copyLayoutToHost(), numHome), "");
    }
    ::unsetenv("HALOEX_COLUMN_SORT");
}

TEST(CellOrderGpu, MatchesTheReferenceAndTheBuildLeavesWholeSystemsInPlace) {
    HALOEX_REQUIRE_GPU();
    const md::ForceField ff;
    std::vector<haloex::testing::FloatSystem> systems;
    for (int n : {777, 5000}) {
        systems.push_back(haloex::testing::uniformSystem(n, std::cbrt(n / 100.0) + 0.4, 3 + n, ff));
    }
    systems.push_back(haloex::testing::latticeSystem(30000, 5, 0.02, ff));
    systems.push_back(haloex::testing::latticeSystem(120000, 6, 0.02, ff));  // past the column sort's limit
    // Tall columns (a periodic box must exceed 2 rlist across: 2.5 nm).
    systems.push_back(haloex::testing::uniformSystemInBox(5000, {2.5, 2.5, 10.0}, 9, ff));
    for (const auto& s : systems) {
        expectDeviceOrderAndBuild(s.x, s.q, {}, static_cast<int>(s.x.size()), s.box, {true, true, true},
                                  fmt::format("{} ({} atoms)", s.name, s.x.size()));
    }
}

TEST(CellOrderGpu, MatchesTheReferenceAndTheBuildLeavesDecomposedRanksInPlace) {
    HALOEX_REQUIRE_GPU();
    const md::ForceField ff;
    const auto system = haloex::testing::latticeSystem(12000, 21, 0.02, ff);
    for (const plan::Int3 grid : {plan::Int3{2, 1, 1}, plan::Int3{2, 2, 1}, plan::Int3{2, 2, 2}}) {
        for (const auto& r : haloex::testing::decompose(system, grid, ff.rc, kRlist, 4)) {
            expectDeviceOrderAndBuild(r.x, r.q, r.zone, r.numHome, r.box, r.periodic,
                                      fmt::format("grid {}x{}x{} rank {}", grid[0], grid[1], grid[2], r.rank));
        }
    }
}

// Atoms on a line along z share one column, past the 2 048 words one block
// sorts in shared memory: the column is sorted by rank; equal z keep index order.
TEST(CellOrderGpu, AColumnLongerThanOneBlockSortsIsStillInOrder) {
    HALOEX_REQUIRE_GPU();
    std::vector<Vec3f> line;
    for (int i = 0; i < 3000; ++i) line.push_back(Vec3f{1.0f, 2.0f, static_cast<float>((i * 7919) % 1000) * 0.01f});
    const std::vector<int> reference = cellOrderReference(line);
    for (const char* columnSort : {"1", "0"}) {
        ::setenv("HALOEX_COLUMN_SORT", columnSort, 1);
        EXPECT_EQ(deviceCellOrder(line), reference) << "HALOEX_COLUMN_SORT=" << columnSort;
    }
    ::unsetenv("HALOEX_COLUMN_SORT");
}

TEST(CellOrderGpu, ANonFinitePositionLeavesTheIdentity) {
    HALOEX_REQUIRE_GPU();
    const md::ForceField ff;
    auto s = haloex::testing::uniformSystem(1000, 2.5, 17, ff);
    std::vector<int> identity(s.x.size());
    std::iota(identity.begin(), identity.end(), 0);
    for (const char* columnSort : {"1", "0"}) {
        SCOPED_TRACE(fmt::format("HALOEX_COLUMN_SORT={}", columnSort));
        ::setenv("HALOEX_COLUMN_SORT", columnSort, 1);
        s.x[500].y = std::numeric_limits<float>::quiet_NaN();
        EXPECT_EQ(deviceCellOrder(s.x), identity);
        s.x[500].y = 1.0f;
        s.x[20].z = std::numeric_limits<float>::infinity();
        EXPECT_EQ(deviceCellOrder(s.x), identity);
        s.x[20].z = 1.0f;
    }
    ::unsetenv("HALOEX_COLUMN_SORT");
}

TEST(CellOrderGpu, NoAtomOneAtomAndChangingSizesAreFine) {
    HALOEX_REQUIRE_GPU();
    EXPECT_TRUE(deviceCellOrder({}).empty());
    EXPECT_EQ(deviceCellOrder({Vec3f{1.0f, 2.0f, 3.0f}}), std::vector<int>{0});
    const md::ForceField ff;
    CellOrder order;  // one object, growing and shrinking, switching sorts
    for (int n : {10, 3000, 50, 3000}) {
        const auto s = haloex::testing::uniformSystem(n, std::cbrt(n / 100.0) + 0.4, n, ff);
        for (const char* columnSort : {"1", "0"}) {
            ::setenv("HALOEX_COLUMN_SORT", columnSort, 1);
            EXPECT_EQ(deviceCellOrder(order, s.x), cellOrderReference(s.x))
                << n << " atoms, HALOEX_COLUMN_SORT=" << columnSort;
        }
    }
    ::unsetenv("HALOEX_COLUMN_SORT");
}

// The order as one graph launch (the default) equals the reference's --
// captured at the first call, launched again for the same positions and
// count (the second call on one buffer), updated for another count and for
// the other sort; and so does the order of twelve launches
// (HALOEX_CELL_ORDER_GRAPH=0). The tests above run the default.
TEST(CellOrderGpu, AsOneGraphAndAsTwelveLaunchesTheOrderIsTheReferences) {
    HALOEX_REQUIRE_GPU();
    const md::ForceField ff;
    for (const char* graph : {"1", "0"}) {
        ::setenv("HALOEX_CELL_ORDER_GRAPH", graph, 1);
        CellOrder order;
        cuda::Stream stream;
        for (const char* columnSort : {"1", "0"}) {
            ::setenv("HALOEX_COLUMN_SORT", columnSort, 1);
            for (int n : {3000, 2990, 5000}) {
                const auto s = haloex::testing::uniformSystem(n, std::cbrt(n / 100.0) + 0.4, n, ff);
                const cuda::DeviceBuffer<Vec3f> dX = upload(s.x);
                const std::vector<int> want = cellOrderReference(s.x);
                for (int call = 0; call < 2; ++call) {  // the second launches the graph the first captured
                    const int* dOrder = order.compute(dX.data(), n, stream);
                    std::vector<int> got(s.x.size());
                    HALOEX_CUDA_CHECK(
                        cudaMemcpyAsync(got.data(), dOrder, got.size() * sizeof(int), cudaMemcpyDeviceToHost, stream));
                    HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
                    EXPECT_EQ(got, want) << n << " atoms, call " << call << ", HALOEX_COLUMN_SORT=" << columnSort
                                         << ", HALOEX_CELL_ORDER_GRAPH=" << graph;
                }
            }
        }
    }
    ::unsetenv("HALOEX_COLUMN_SORT");
    ::unsetenv("HALOEX_CELL_ORDER_GRAPH");
}

// On several ranks the home count changes at every search while the
// positions stay in one array: the sort by columns' graph, captured once,
// serves every count up to its capacity (read on the device), and its order
// is the reference's for each count; the radix sort captures per count.
TEST(CellOrderGpu, OneGraphServesChangingCountsInOneArray) {
    HALOEX_REQUIRE_GPU();
    ::unsetenv("HALOEX_CELL_ORDER_GRAPH");
    const md::ForceField ff;
    const auto s = haloex::testing::uniformSystem(3000, std::cbrt(3000 / 100.0) + 0.4, 41, ff);
    const cuda::DeviceBuffer<Vec3f> dX = upload(s.x);
    const std::vector<int> counts = {3000, 2990, 2400, 3000, 17, 2999};
    for (const char* columnSort : {"1", "0"}) {
        SCOPED_TRACE(fmt::format("HALOEX_COLUMN_SORT={}", columnSort));
        ::setenv("HALOEX_COLUMN_SORT", columnSort, 1);
        CellOrder order;
        cuda::Stream stream;
        for (int n : counts) {
            const std::vector<Vec3f> home(s.x.begin(), s.x.begin() + n);
            const int* dOrder = order.compute(dX.data(), n, stream);
            std::vector<int> got(home.size());
            HALOEX_CUDA_CHECK(
                cudaMemcpyAsync(got.data(), dOrder, got.size() * sizeof(int), cudaMemcpyDeviceToHost, stream));
            HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
            EXPECT_EQ(got, cellOrderReference(home)) << n << " atoms";
        }
        if (std::string(columnSort) == "1") {
            EXPECT_EQ(order.graphCaptures(), 1) << "the sort by columns captured its graph again for a smaller count";
        } else {
            EXPECT_GE(order.graphCaptures(), 5) << "the radix sort's passes take the count: one capture per count";
        }
    }
    ::unsetenv("HALOEX_COLUMN_SORT");
}

}  // namespace
