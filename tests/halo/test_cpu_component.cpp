// haloex_halo, the registry and the halo API for the CPU (component halo):
// this executable links it alone, so that it needing any CUDA, NCCL or
// NVSHMEM symbol would fail its link. Reference and Staged work in host
// memory, the memory space defaults to the backend's, and every device
// backend and device memory is refused saying where they are.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "haloex/config.hpp"
#include "haloex/core/error.hpp"
#include "haloex/halo/backend.hpp"
#include "haloex/halo/collective_buffer.hpp"
#include "haloex/halo/particle_halo.hpp"
#include "haloex/plan/decomposition.hpp"
#include "haloex/runtime/plan_exchange.hpp"

namespace {

using namespace haloex;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Why a device backend is missing here: the CPU-only component says where
// the device backends are; a build without CUDA says so.
std::string expectedReason() { return HALOEX_HAVE_CUDA ? "haloex::transports" : "this build has no CUDA"; }

TEST(CpuComponent, HasReferenceAndStagedAndSaysWhereTheOthersAre) {
    EXPECT_EQ(availableBackends(), (std::vector<Backend>{Backend::Reference, Backend::Staged}));
    for (Backend b : {Backend::Ipc, Backend::Nccl, Backend::Nvshmem, Backend::NcclDevice}) {
        const std::string why = unavailableReason(b);
        EXPECT_FALSE(why.empty()) << toString(b);
        if (b == Backend::Ipc) {
            EXPECT_TRUE(contains(why, expectedReason())) << why;
        }
        try {
            makeTransport(b, runtime::singleRankWorld());
            ADD_FAILURE() << toString(b) << " was made by the CPU-only component";
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
            EXPECT_TRUE(contains(e.what(), why)) << e.what();
        }
    }
    EXPECT_FALSE(deviceUnavailableReason().empty());
}

TEST(CpuComponent, TheMemorySpaceDefaultsToTheBackends) {
    EXPECT_EQ(makeTransport(Backend::Reference, runtime::singleRankWorld())->memorySpace(),
              transport::MemorySpace::Host);
    EXPECT_EQ(makeTransport(Backend::Staged, runtime::singleRankWorld())->memorySpace(), transport::MemorySpace::Host);
    EXPECT_EQ(makeTransport(Backend::Auto, runtime::singleRankWorld())->name(), "staged");
    transport::TransportOptions device;
    device.memorySpace = transport::MemorySpace::Device;
    try {
        makeTransport(Backend::Staged, runtime::singleRankWorld(), device);
        ADD_FAILURE() << "staged in device memory was made by the CPU-only component";
    } catch (const Error& e) {
        EXPECT_TRUE(contains(e.what(), expectedReason())) << e.what();
    }
}

TEST(CpuComponent, DeviceMemoryIsRefused) {
    EXPECT_THROW(CollectiveBuffer<double>(runtime::singleRankWorld(), CollectiveMemory::Device, 8), Error);
}

// A gather over 4 thread ranks with each host backend: every ghost is a
// shifted copy of an atom, so wrapped back into the box it is one of them.
TEST(CpuComponent, GathersPositionsWithEachHostBackend) {
    plan::DecompositionSpec spec;
    spec.box.length = {3.0, 3.0, 3.0};
    spec.rc = 0.6;
    spec.rlist = 0.7;
    spec.grid = plan::RankGrid({2, 2, 1});
    const plan::Decomposition decomposition(spec);
    std::vector<Vec3d> lattice;
    for (int i = 0; i < 216; ++i) {
        const int x = i % 6, y = (i / 6) % 6, z = i / 36;  // a 6x6x6 lattice, spacing 0.5
        lattice.push_back(Vec3d{x + 0.5, y + 0.5, z + 0.5} * 0.5);
    }
    const auto owned = plan::partitionAtoms(decomposition, lattice);
    for (Backend backend : {Backend::Reference, Backend::Staged}) {
        SCOPED_TRACE(std::string(toString(backend)));
        runtime::runInProcess(4, [&](runtime::World& world) {
            std::vector<Vec3d> x;
            for (int id : owned[static_cast<std::size_t>(world.rank())])
                x.push_back(lattice[static_cast<std::size_t>(id)]);
            const auto built = runtime::buildParticlePlan(decomposition, x, world);
            auto transport = makeTransport(backend, world);
            ParticleHalo halo(*transport, built.plan);
            x.resize(static_cast<std::size_t>(built.plan.numLocal));
            halo.gather(x.data(), PeriodicShift{spec.box});
            ASSERT_GT(built.plan.numHalo(), 0);
            for (int g = 0; g < built.plan.numLocal; ++g) {
                EXPECT_EQ(x[static_cast<std::size_t>(g)], built.localPositions[static_cast<std::size_t>(g)]) << g;
            }
        });
    }
}

}  // namespace
