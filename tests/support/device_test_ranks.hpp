#pragma once
// What the device suites that run as thread ranks or as the MPI ranks of
// their *_npN variants share (test_transport_device, test_particle_halo_device):
// this job's MPI world, why device cases cannot run here, one case run on the
// ranks with a refusal turned into a skip reason, and the per-rank verdict.
// Include it where HALOEX_TEST_WITH_MPI says whether the target links the MPI
// test main.
#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "haloex/config.hpp"
#include "haloex/core/error.hpp"
#include "haloex/runtime/world.hpp"

#if HALOEX_HAVE_CUDA
#include "haloex/cuda/device_buffer.hpp"
#endif
#if HALOEX_TEST_WITH_MPI
#include "haloex/runtime/mpi_world.hpp"
#include "mpi_test_main.hpp"
#endif

namespace haloex::testsupport {

// The MPI world when mpiexec started this test (the *_npN variants), else null
// (the cases then run on thread ranks).
inline runtime::World* mpiWorld() {
#if HALOEX_TEST_WITH_MPI
    if (runtime::MpiSession::launchedByMpiLauncher()) return &mpiTestWorld();
#endif
    return nullptr;
}

// Why device cases cannot run here, or empty.
inline std::string noGpuReason() {
#if HALOEX_HAVE_CUDA
    if (cuda::deviceCount() == 0) return "no CUDA device is visible on this machine (no driver or no GPU)";
    return {};
#else
    return "this build has no CUDA";
#endif
}

// Runs `body` on this job's MPI ranks, or on `numRanks` thread ranks. An
// error `isRefusal` accepts (a configuration the machine cannot run, e.g.
// NCCL's refusal of ranks sharing a GPU) comes back as the reason, for the
// caller to skip with; any other error propagates.
inline std::optional<std::string> runOnRanks(runtime::World* mpi, int numRanks,
                                             const std::function<void(runtime::World&)>& body,
                                             const std::function<bool(const Error&)>& isRefusal) {
    try {
        if (mpi) {
            body(*mpi);
        } else {
            runtime::runInProcess(numRanks, body);
        }
    } catch (const Error& e) {
        if (!isRefusal(e)) throw;
        return std::string(e.what());
    }
    return std::nullopt;
}

// Every rank this process ran (all of them on thread ranks, its own under
// MPI) found no mismatch.
inline void expectNoMismatches(const std::vector<std::string>& mismatches, runtime::World* mpi) {
    for (int r = 0; r < static_cast<int>(mismatches.size()); ++r) {
        if (!mpi || r == mpi->rank()) {
            EXPECT_EQ(mismatches[static_cast<std::size_t>(r)], "") << "rank " << r;
        }
    }
}

}  // namespace haloex::testsupport
