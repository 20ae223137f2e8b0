// The device halo view's host side that runs without a GPU
// (halo/device_halo.hpp, halo/peer_memory.hpp): sends and receives that do
// not pair up are refused on every rank, with a message naming both ranks
// and the tag, before any device memory is touched; backends without
// load/store peer memory are refused with what to use instead.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "haloex/core/error.hpp"
#include "haloex/halo/device_halo.hpp"
#include "haloex/transport/peer_memory.hpp"
#include "haloex/runtime/world.hpp"

namespace haloex {
namespace {

// Runs `body` on `ranks` thread ranks and returns the message of the error
// they raise (empty if none).
std::string errorOf(int ranks, const std::function<void(runtime::World&)>& body) {
    try {
        runtime::runInProcess(ranks, body);
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::InvalidInput) << e.what();
        return e.what();
    }
    return {};
}

TEST(DeviceHaloLinks, ASendWithoutItsReceiveIsRefused) {
    const std::string message = errorOf(2, [](runtime::World& world) {
        if (world.rank() == 0) {
            DeviceHalo halo(world, Backend::Ipc, {}, {{1, 3}});
        } else {
            DeviceHalo halo(world, Backend::Ipc, {{0, 4, 64, 2}}, {});
        }
    });
    EXPECT_NE(message.find("rank 0 sends to rank 1 with tag 3, but rank 1 declares 0 receive(s) from rank 0 with "
                           "that tag"),
              std::string::npos)
        << message;
}

TEST(DeviceHaloLinks, AReceiveWithoutItsSendIsRefused) {
    const std::string message = errorOf(2, [](runtime::World& world) {
        if (world.rank() == 0) {
            DeviceHalo halo(world, Backend::Ipc, {{1, 0, 64, 2}}, {{1, 0}});
        } else {
            DeviceHalo halo(world, Backend::Ipc, {{0, 0, 64, 2}}, {});
        }
    });
    EXPECT_NE(message.find("rank 0 receives from rank 1 with tag 0, but rank 1 declares 0 send(s)"), std::string::npos)
        << message;
    EXPECT_NE(message.find("wait forever"), std::string::npos) << message;
}

TEST(DeviceHaloLinks, TwoReceivesWithTheSameTagAreRefused) {
    const std::string message = errorOf(2, [](runtime::World& world) {
        const int other = 1 - world.rank();
        if (world.rank() == 0) {
            DeviceHalo halo(world, Backend::Ipc, {}, {{other, 5}});
        } else {
            DeviceHalo halo(world, Backend::Ipc, {{other, 5, 64, 2}, {other, 5, 64, 2}}, {});
        }
    });
    EXPECT_NE(message.find("rank 1 declares 2 receive(s) from rank 0 with that tag"), std::string::npos) << message;
}

TEST(DeviceHaloLinks, APeerOutsideTheJobIsRefused) {
    const std::string message = errorOf(2, [](runtime::World& world) {
        DeviceHalo halo(world, Backend::Ipc, {}, {{2, 0}});
    });
    EXPECT_NE(message.find("sends to rank 2 (tag 0), but the job has ranks 0..1"), std::string::npos) << message;
}

TEST(DeviceHaloLinks, EmptySlotsAreRefused) {
    const std::string message = errorOf(1, [](runtime::World& world) {
        DeviceHalo halo(world, Backend::Ipc, {{0, 0, 0, 2}}, {{0, 0}});
    });
    EXPECT_NE(message.find("has 2 slot(s) of 0 bytes"), std::string::npos) << message;
}

TEST(DeviceHaloLinks, MoreLinksThanTheViewHoldsAreRefused) {
    std::vector<DeviceHaloSend> sends(kDeviceHaloMaxLinks + 1, DeviceHaloSend{0, 0});
    const std::string message =
        errorOf(1, [&](runtime::World& world) { DeviceHalo halo(world, Backend::Ipc, {}, sends); });
    EXPECT_NE(message.find("at most 26 each"), std::string::npos) << message;
}

TEST(PeerMemory, BackendsWithoutLoadStorePeersAreRefused) {
    for (Backend b : {Backend::Reference, Backend::Staged}) {
        EXPECT_FALSE(hasPeerMemory(b)) << toString(b);
        try {
            allocatePeerMemory(b, runtime::singleRankWorld(), 64, "the test's windows");
            ADD_FAILURE() << toString(b) << " gave peer memory";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("the test's windows: the " + std::string(toString(b)) +
                                                 " backend has no memory that peers address with loads and stores"),
                      std::string::npos)
                << e.what();
        }
    }
}

TEST(PeerMemory, TheRegistrySaysWhichBackendsHaveIt) {
    EXPECT_EQ(hasPeerMemory(Backend::Ipc), unavailableReason(Backend::Ipc).empty());
    EXPECT_EQ(hasPeerMemory(Backend::Nvshmem), unavailableReason(Backend::Nvshmem).empty());
    EXPECT_EQ(hasPeerMemory(Backend::NcclDevice), unavailableReason(Backend::NcclDevice).empty());
    EXPECT_FALSE(hasPeerMemory(Backend::Nccl)) << "the nccl transport has no load/store peers; nccl-device has";
}

TEST(PeerMemory, NvshmemNeedsAProcessPerRank) {
    if (!hasPeerMemory(Backend::Nvshmem)) GTEST_SKIP() << "this build has no NVSHMEM";
    const std::string message = errorOf(2, [](runtime::World& world) {
        allocatePeerMemory(Backend::Nvshmem, world, 64, "the test's windows");
    });
    EXPECT_NE(message.find("NVSHMEM needs one process per rank (mpirun)"), std::string::npos) << message;
}

}  // namespace
}  // namespace haloex
