// The device halo view on the GPU (haloex/halo/device_halo_view.cuh), ranks
// as threads of this process (CUDA IPC provider: one GPU, no MPS needed):
//   * a ring: every rank stores generations 1..G into its right neighbour's
//     window (one slot per generation), signals each, waits for its left
//     neighbour's and copies what arrived: every value must be the left
//     neighbour's, of the right generation;
//   * the same ring on the nccl-device provider (NCCL 2.28's device API) for
//     one rank, its own neighbour: NCCL needs a process per GPU, so more
//     thread ranks are refused, with the reason;
//   * the timed wait: a generation nobody signals ends in a report naming the
//     rank, the peer, the link, the tag, the values expected and seen; once
//     one wait has timed out, a second one gives up at once.
// This file is compiled without -rdc, like any user's.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "gpu_test_support.hpp"
#include "haloex/core/error.hpp"
#include "haloex/cuda/device_select.hpp"
#include "haloex/halo/device_halo.hpp"
#include "haloex/halo/device_halo_view.cuh"
#include "haloex/runtime/world.hpp"

namespace haloex {
namespace {

constexpr int kValues = 300;  // more than one block's threads: strided stores
constexpr int kGenerations = 6;

__host__ __device__ std::int64_t valueOf(int rank, std::uint64_t generation, int i) {
    return rank * 1000000LL + static_cast<std::int64_t>(generation) * 1000 + i;
}

__global__ void ringKernel(DeviceHaloView view, std::int64_t* received, int* ok) {
    for (std::uint64_t g = 1; g <= kGenerations; ++g) {
        for (int i = threadIdx.x; i < kValues; i += blockDim.x) device::store(view, 0, g, i, valueOf(view.rank, g, i));
        device::signalBlock(view, 0, g);
        if (!device::waitBlock(view, 0, g)) {
            if (threadIdx.x == 0) *ok = 0;
            return;
        }
        const std::int64_t* in = device::recvSlot<std::int64_t>(view, 0, g);
        for (int i = threadIdx.x; i < kValues; i += blockDim.x) received[(g - 1) * kValues + i] = in[i];
    }
}

// One rank's part of the ring on `backend`.
void runRing(runtime::World& world, Backend backend) {
    const int ranks = world.size();
    const int right = (world.rank() + 1) % ranks, left = (world.rank() + ranks - 1) % ranks;
    // Allocated before the halo: after its barrier a neighbour's kernel
    // may wait for this rank, and a device-synchronising call here would
    // wait for that kernel (the ranks share this process's context).
    cuda::DeviceBuffer<std::int64_t> received(kGenerations * kValues);
    cuda::DeviceBuffer<int> ok(1);
    const int one = 1;
    cuda::copyToDeviceNow(ok.data(), &one, sizeof(int));
    cuda::Stream stream;
    // Loaded before the halo too: lazy loading may synchronise the context.
    device::loadKernelNow(ringKernel);
    DeviceHaloOptions options;
    options.waitTimeoutSeconds = 20;
    options.abortJobOnTimeout = false;
    DeviceHalo halo(world, backend, {{left, 0, kValues * sizeof(std::int64_t), kGenerations + 1}}, {{right, 0}},
                    options);
    EXPECT_EQ(halo.view().numSends, 1);
    EXPECT_EQ(halo.view().sends[0].peer, right);
    ringKernel<<<1, 128, 0, stream.get()>>>(halo.view(), received.data(), ok.data());
    HALOEX_CUDA_CHECK_LAUNCH();
    HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    EXPECT_EQ(halo.pendingTimeout(), "");
    EXPECT_EQ(testing::download(ok, 1)[0], 1);
    const std::vector<std::int64_t> got = testing::download(received, received.size());
    int wrong = 0;
    for (int g = 1; g <= kGenerations; ++g) {
        for (int i = 0; i < kValues; ++i) {
            wrong += got[static_cast<std::size_t>((g - 1) * kValues + i)] != valueOf(left, g, i);
        }
    }
    EXPECT_EQ(wrong, 0) << ranks << " ranks, rank " << world.rank() << ", " << toString(backend);
    world.barrier();  // nobody frees while a neighbour still reads
}

TEST(DeviceHaloView, RingDeliversEveryGenerationIntoItsSlot) {
    HALOEX_REQUIRE_GPU();
    for (int ranks : {1, 2, 4}) {
        runtime::runInProcess(ranks, [&](runtime::World& world) {
            cuda::selectDevice(world, /*allowSharedGpus=*/true);
            runRing(world, Backend::Ipc);
        });
    }
}

// The nccl-device provider refuses these ranks: unavailableReason says
// `expected`, and the halo's constructor throws InvalidInput with that reason.
void expectNcclDeviceRefuses(int ranks, const std::string& expected) {
    runtime::runInProcess(ranks, [&](runtime::World& world) {
        cuda::selectDevice(world, /*allowSharedGpus=*/true);
        const std::string why = unavailableReason(Backend::NcclDevice, world);
        EXPECT_NE(why.find(expected), std::string::npos) << why;
        try {
            DeviceHalo halo(world, Backend::NcclDevice, {{world.rank(), 0, 64, 2}}, {{world.rank(), 0}});
            ADD_FAILURE() << "nccl-device made a halo for " << ranks << " rank(s)";
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
            EXPECT_NE(std::string(e.what()).find("the nccl-device backend cannot run here: " + why), std::string::npos)
                << e.what();
        }
    });
}

// One rank: NCCL 2.28 gives its communicator no symmetric memory (seen on
// one H200: ncclDevCommCreate refuses it), so the provider refuses with the
// reason first. The ring on two or more GPUs is examples/fused_stencil's np2 run.
TEST(DeviceHaloView, NcclDeviceRefusesOneRankWithTheReason) {
    HALOEX_REQUIRE_GPU();
    if (const std::string why = unavailableReason(Backend::NcclDevice); !why.empty()) GTEST_SKIP() << why;
    expectNcclDeviceRefuses(1, "a communicator of one rank no symmetric memory");
}

TEST(DeviceHaloView, NcclDeviceRefusesRanksThatAreThreadsWithTheReason) {
    HALOEX_REQUIRE_GPU();
    if (const std::string why = unavailableReason(Backend::NcclDevice); !why.empty()) GTEST_SKIP() << why;
    expectNcclDeviceRefuses(2, "these 2 ranks are threads of one process");
}

__global__ void timeoutKernel(DeviceHaloView view, int* results) {
    device::signal(view, 0, 3);
    results[0] = device::wait(view, 0, 3) ? 1 : 0;  // present: no wait
    results[1] = device::wait(view, 0, 5) ? 1 : 0;  // never comes: times out
    const std::uint64_t start = cuda::globalTimerNs();
    results[2] = device::wait(view, 0, 4) ? 1 : 0;  // gives up at once: the halo has timed out
    results[3] = static_cast<int>((cuda::globalTimerNs() - start) / 1000000);  // ms
    results[4] = device::timedOut(view) ? 1 : 0;
}

TEST(DeviceHaloView, TimedWaitReportsWhoWaitedForWhat) {
    HALOEX_REQUIRE_GPU();
    runtime::runInProcess(1, [&](runtime::World& world) {
        cuda::selectDevice(world, true);
        DeviceHaloOptions options;
        options.waitTimeoutSeconds = 0.2;
        options.abortJobOnTimeout = false;
        options.what = "the test halo";
        DeviceHalo halo(world, Backend::Ipc, {{0, 7, 64, 2}}, {{0, 7}}, options);
        cuda::DeviceBuffer<int> results(5);
        cuda::fillBytesNow(results.data(), 0xff, results.bytes());
        timeoutKernel<<<1, 1>>>(halo.view(), results.data());
        HALOEX_CUDA_CHECK_LAUNCH();
        const std::vector<int> r = testing::download(results, 5);
        EXPECT_EQ(r[0], 1);
        EXPECT_EQ(r[1], 0);
        EXPECT_EQ(r[2], 0);
        EXPECT_LT(r[3], 100) << "a wait after a timeout gives up at once";
        EXPECT_EQ(r[4], 1);
        const std::string message = halo.pendingTimeout();
        EXPECT_NE(message.find("rank 0: the test halo waited 0.2"), std::string::npos) << message;
        EXPECT_NE(message.find("in block 0 thread 0 for rank 0 on receive link 0 (tag 7): signal expected >= 5, "
                               "seen 3"),
                  std::string::npos)
            << message;
        try {
            halo.throwIfTimedOut();
            ADD_FAILURE() << "no Timeout error";
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::Timeout);
            EXPECT_EQ(std::string(e.what()), message);
        }
    });
}

}  // namespace
}  // namespace haloex
