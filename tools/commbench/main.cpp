// haloex-commbench: GPU-initiated communication micro-benchmarks and their
// CPU-orchestrated equivalents, all in one run, between ranks 0 and 1:
//   GPU-initiated (NVSHMEM): put latency (thread, warp, block), put-with-
//   signal ping-pong, direct stores + system release of a flag, TMA bulk
//   store + flag, put and store bandwidth from 8 B to 64 MiB, message rate
//   with many warps, with and without batching (the flag ping-pong on the
//   library's device halo view is haloex-commbench-view's, view_main.cpp);
//   CPU-orchestrated: peer cudaMemcpyAsync + event (and with an MPI
//   hand-off), MPI ping-pong of host buffers, NCCL send/recv.
// Median and spread over repetitions; table, CSV and JSON output.
// Launch with mpirun -np 2. Exit codes: 0 done, 2 bad input, 77 skipped (no GPU).
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cpu_orchestrated.hpp"
#include "gpu_initiated.hpp"
#include "record.hpp"
#include "haloex/build_info.hpp"
#include "haloex/core/error.hpp"
#include "haloex/detail/core/safe_file.hpp"
#include "haloex/detail/core/wait_limit.hpp"
#include "haloex/cuda/device_buffer.hpp"
#include "haloex/cuda/device_select.hpp"
#include "haloex/detail/nvshmem/bootstrap.hpp"
#include "haloex/runtime/mpi_world.hpp"
#include "results.hpp"
#include "settings.hpp"

namespace {

using namespace haloex;
using namespace haloex::commbench;

constexpr int kExitBadInput = 2;
constexpr int kExitSkipped = 77;

struct Options {
    bool quick = false;
    int repetitions = 0;  // 0: 15 (quick: 5)
    int iterations = 0;   // 0: 1000 (quick: 200)
    std::size_t maxBytes = std::size_t{64} << 20;
    bool allowSharedGpus = false;
    double waitTimeout = 10.0;
    bool skipGpu = false, skipCpu = false;
    std::string csv, json;
};

BenchSettings settingsFrom(const Options& o) {
    BenchSettings s;
    if (o.maxBytes < 16384 || o.maxBytes > kMaxBenchBytes || (o.maxBytes & (o.maxBytes - 1)) != 0) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("--max-bytes {}: use a power of two from 16384 to {}", o.maxBytes, kMaxBenchBytes));
    }
    if (o.repetitions < 0 || o.iterations < 0 || !validWaitSeconds(o.waitTimeout, false)) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("--reps and --iters must be positive (0: default), --wait-timeout {} a number of "
                               "seconds above 0 and at most {:g}",
                               o.waitTimeout, kMaxWaitSeconds));
    }
    s.repetitions = o.repetitions ? o.repetitions : o.quick ? 5 : 15;
    s.latencyIterations = o.iterations ? o.iterations : o.quick ? 200 : 1000;
    s.waitTimeoutSeconds = o.waitTimeout;
    s.bandwidthSizes = sizesUpTo(o.maxBytes, o.quick ? 8 : 2);
    if (o.quick) {
        s.bandwidthBytesPerSample = std::size_t{64} << 20;
        s.messageRateWarps = {1, 32};
        s.messageRateIterations = 50;
    }
    return s;
}

int run(const Options& o, const BenchSettings& s, runtime::MpiWorld& world) {
    const bool root = world.rank() == 0;
    if (haloex::cuda::deviceCount() == 0 ||
        world.allReduceValue<std::int64_t>(haloex::cuda::deviceCount(), runtime::ReduceOp::Min) == 0) {
        if (root)
            fmt::print("SKIPPED: no GPU is visible on {} (check nvidia-smi and CUDA_VISIBLE_DEVICES)\n", hostName());
        return kExitSkipped;
    }
    haloex::cuda::selectDevice(world, o.allowSharedGpus);
    const auto gpus = haloex::cuda::gatherGpuIdentities(world);
    const bool shared = haloex::cuda::findSharedGpu(gpus).has_value();
    if (root) {
        fmt::print("haloex-commbench {}: ranks 0 and 1 ({} on {}, {} on {}){}; {} repetitions, {} iterations per "
                   "latency sample\n",
                   gitCommit(), gpus[0].busId, gpus[0].host, gpus[1].busId, gpus[1].host,
                   shared ? " -- THE SAME GPU: timings say nothing about NVLink" : "", s.repetitions,
                   s.latencyIterations);
    }

    std::vector<Measurement> all;
    if (!o.skipGpu) {
        nvshmem_bootstrap::initWithUniqueId(world);
        auto gpu = runGpuInitiated(world, s);
        all.insert(all.end(), gpu.begin(), gpu.end());
    }
    if (!o.skipCpu) {
        auto cpu = runCpuOrchestrated(world, s);
        all.insert(all.end(), cpu.begin(), cpu.end());
    }
    if (!o.skipGpu) nvshmem_finalize();

    if (root) {
        fmt::print("{}\n", tableHeader());
        for (const auto& m : all) fmt::print("{}\n", tableLine(m));
        if (!o.csv.empty()) {
            std::string text = csvHeader() + "\n";
            for (const auto& m : all) text += csvLine(m) + "\n";
            writeFileAtomically(o.csv, text, "--csv");
        }
        if (!o.json.empty()) {
            const nlohmann::json doc = benchRecord("haloex-commbench", gpus,
                                                   {{"quick", o.quick},
                                                    {"repetitions", s.repetitions},
                                                    {"latency_iterations", s.latencyIterations},
                                                    {"max_bytes", o.maxBytes}},
                                                   all);
            writeFileAtomically(o.json, doc.dump(2) + "\n", "--json");
        }
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    CLI::App app{"haloex-commbench: GPU-initiated (NVSHMEM) and CPU-orchestrated communication micro-benchmarks "
                 "between ranks 0 and 1 (launch with mpirun -np 2; exit code 77 means skipped)"};
    app.set_version_flag(
        "--version", [] { return haloex::buildDescription("haloex-commbench"); },
        "Print the version and the build (commit, CUDA with its GPU architectures, MPI, NCCL, NVSHMEM) and exit");
    app.add_flag("--quick", o.quick, "Fewer repetitions, iterations and sizes (a smoke run of well under a minute)");
    app.add_option("--reps", o.repetitions, "Samples per measurement (default 15, quick 5)");
    app.add_option("--iters", o.iterations, "Round trips per latency sample (default 1000, quick 200)");
    app.add_option("--max-bytes", o.maxBytes, "Largest bandwidth message (power of two)")->capture_default_str();
    app.add_flag("--allow-shared-gpus", o.allowSharedGpus,
                 "Allow both ranks on one GPU (start MPS; numbers then say "
                 "nothing about NVLink)");
    app.add_option("--wait-timeout", o.waitTimeout, "Device-side wait limit in seconds")->capture_default_str();
    app.add_flag("--skip-gpu-initiated", o.skipGpu, "Only the CPU-orchestrated measurements");
    app.add_flag("--skip-cpu-orchestrated", o.skipCpu, "Only the GPU-initiated measurements");
    app.add_option("--csv", o.csv, "Write the measurements as CSV to this file");
    app.add_option("--json", o.json, "Write settings, machine and measurements as JSON to this file");
    CLI11_PARSE(app, argc, argv);

    runtime::MpiSession session(argc, argv);
    runtime::MpiWorld world;
    BenchSettings settings;
    try {
        settings = settingsFrom(o);
        // The outputs before the measurements: rank 0 writes them.
        std::int64_t badOutput = 0;
        std::string why;
        if (world.rank() == 0) {
            try {
                if (!o.csv.empty()) requireWritableOutput("--csv", o.csv);
                if (!o.json.empty()) requireWritableOutput("--json", o.json);
            } catch (const Error& e) {
                badOutput = 1;
                why = e.what();
            }
        }
        if (world.allReduceValue(badOutput, runtime::ReduceOp::Max) != 0) {
            throwError(ErrorKind::InvalidInput, world.rank() == 0 ? why : "rank 0 cannot write an output");
        }
        if (world.size() < 2) {
            throwError(ErrorKind::InvalidInput, fmt::format("{} rank: the benchmarks run between ranks 0 and 1; launch "
                                                            "with mpirun -np 2",
                                                            world.size()));
        }
    } catch (const Error& e) {
        if (world.rank() == 0) fmt::print(stderr, "haloex-commbench: error: {}\n", e.what());
        return kExitBadInput;
    }
    try {
        return run(o, settings, world);
    } catch (const Error& e) {
        if (e.kind() == ErrorKind::InvalidInput) {
            // selectDevice: more ranks than GPUs without --allow-shared-gpus (the same on every rank of a node).
            if (world.rank() == 0) fmt::print(stderr, "haloex-commbench: error: {}\n", e.what());
            return kExitBadInput;
        }
        world.abort(fmt::format("haloex-commbench: {}", e.what()));
    } catch (const std::exception& e) {
        world.abort(fmt::format("haloex-commbench: {}", e.what()));
    }
}
