// haloex-commbench-view: the flag ping-pong on the library's device halo view
// (view_pingpong.hpp) between ranks 0 and 1, over CUDA IPC and NCCL's device
// API (nccl-device). Apart from haloex-commbench because that executable
// initialises NVSHMEM in its own module and does not link the halo library.
// Launch with mpirun -np 2. Exit codes: 0 done, 2 bad input, 77 skipped (no GPU).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "haloex/build_info.hpp"
#include "haloex/core/error.hpp"
#include "haloex/detail/core/safe_file.hpp"
#include "haloex/detail/core/wait_limit.hpp"
#include "haloex/cuda/device_buffer.hpp"
#include "haloex/cuda/device_select.hpp"
#include "haloex/runtime/mpi_world.hpp"
#include "record.hpp"
#include "results.hpp"
#include "settings.hpp"
#include "view_pingpong.hpp"

namespace {

using namespace haloex;
using namespace haloex::commbench;

constexpr int kExitBadInput = 2;
constexpr int kExitSkipped = 77;

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"haloex-commbench-view: the device halo view's flag ping-pong (ipc, nccl-device), ranks 0 and 1"};
    bool quick = false, allowShared = false;
    int reps = 0, iters = 0;
    double waitTimeout = 10.0;
    std::string json;
    app.add_flag("--quick", quick, "Fewer repetitions and iterations (5 x 200)");
    app.add_option("--reps", reps, "Samples per measurement (default 15, quick 5)");
    app.add_option("--iters", iters, "Round trips per sample (default 1000, quick 200)");
    app.add_flag("--allow-shared-gpus", allowShared, "Allow two ranks on one GPU (MPS; nccl-device then skips)");
    app.add_option("--wait-timeout", waitTimeout, "Device-side wait limit in seconds")->capture_default_str();
    app.add_option("--json", json, "Write settings, machine and measurements as JSON to this file (rank 0)");
    CLI11_PARSE(app, argc, argv);

    runtime::MpiSession session(argc, argv);
    runtime::MpiWorld world;
    const bool root = world.rank() == 0;
    BenchSettings s;
    try {
        if (reps < 0 || iters < 0 || !validWaitSeconds(waitTimeout, false)) {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("--reps and --iters must be positive (0: default), --wait-timeout {} a number of "
                                   "seconds above 0 and at most {:g}",
                                   waitTimeout, kMaxWaitSeconds));
        }
        if (world.size() < 2) {
            throwError(ErrorKind::InvalidInput, "one rank: the ping-pong runs between ranks 0 and 1; mpirun -np 2");
        }
        if (root && !json.empty()) requireWritableOutput("--json", json);
    } catch (const Error& e) {
        if (root) fmt::print(stderr, "haloex-commbench-view: error: {}\n", e.what());
        return kExitBadInput;
    }
    s.repetitions = reps ? reps : quick ? 5 : 15;
    s.latencyIterations = iters ? iters : quick ? 200 : 1000;
    s.waitTimeoutSeconds = waitTimeout;
    try {
        if (world.allReduceValue<std::int64_t>(cuda::deviceCount(), runtime::ReduceOp::Min) == 0) {
            if (root) fmt::print("SKIPPED: no GPU is visible on {} (check nvidia-smi)\n", hostName());
            return kExitSkipped;
        }
        cuda::selectDevice(world, allowShared);
        const auto gpus = cuda::gatherGpuIdentities(world);  // collective: every rank
        const std::vector<Measurement> all = runViewPingPong(world, s);
        if (root) {
            fmt::print("haloex-commbench-view {}: {} repetitions, {} round trips per sample\n{}\n", gitCommit(),
                       s.repetitions, s.latencyIterations, tableHeader());
            for (const auto& m : all) fmt::print("{}\n", tableLine(m));
            if (!json.empty()) {
                const nlohmann::json doc = benchRecord("haloex-commbench-view", gpus,
                                                       {{"repetitions", s.repetitions},
                                                        {"latency_iterations", s.latencyIterations},
                                                        {"wait_timeout_s", s.waitTimeoutSeconds}},
                                                       all);
                writeFileAtomically(json, doc.dump(2) + "\n", "--json");
            }
        }
        return 0;
    } catch (const Error& e) {
        if (e.kind() == ErrorKind::InvalidInput) {
            if (root) fmt::print(stderr, "haloex-commbench-view: error: {}\n", e.what());
            return kExitBadInput;
        }
        world.abort(fmt::format("haloex-commbench-view: {}", e.what()));
    }
    return 1;
}
