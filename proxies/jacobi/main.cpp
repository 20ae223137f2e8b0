// haloex-jacobi: 2D 5-point Jacobi on a periodic or fixed-boundary grid over a
// row (1D) or 2D process grid, halos through the structured-grid plan and the
// transports (staged, ipc, nccl: CPU-orchestrated; nvshmem, nccl-device: one
// fused, GPU-initiated kernel per iteration; cpu: host arrays, for checking).
// Every run is checked against a one-device computation of the whole grid and
// reports time, speedup and efficiency. Launch with mpirun.
// Exit codes: 0 all runs passed, 1 a run failed its check, 2 bad input,
// 77 nothing could run here (e.g. no GPU), so nothing was checked.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/cpu_runner.hpp"
#include "core/jacobi_faces.hpp"
#include "core/jacobi_problem.hpp"
#include "core/jacobi_report.hpp"
#include "core/nvidia_spellings.hpp"
#include "gpu/gpu_runner.hpp"
#include "haloex/build_info.hpp"
#include "haloex/core/error.hpp"
#include "haloex/detail/core/safe_file.hpp"
#include "haloex/detail/core/wait_limit.hpp"
#include "haloex/runtime/mpi_world.hpp"

namespace {

using namespace haloex;
using namespace haloex::jacobi;

constexpr int kExitFailed = 1;
constexpr int kExitBadInput = 2;
constexpr int kExitSkipped = 77;

struct Options {
    int nx = 1024, ny = 1024;
    bool perRank = false;
    int niter = 1000;
    int nccheck = 0;
    int warmup = 10;
    int repeat = 1;
    std::string decomp = "row";
    std::string boundary = "periodic";
    std::string transports = "all";
    std::string nvshmemPath = "auto";
    int maxBlocks = 0;
    int tileCells = 0;
    bool allowSharedGpus = false;
    double waitTimeout = 0.0;
    bool csv = false;
    std::string json;
};

std::vector<std::string> knownTransports() { return {"staged", "ipc", "nccl", "nvshmem", "nccl-device", "cpu"}; }

std::vector<std::string> parseTransports(const std::string& text) {
    std::vector<std::string> out;
    std::stringstream in(text);
    std::string name;
    while (std::getline(in, name, ',')) {
        if (name.empty()) continue;
        if (name == "all") {
            for (const auto& n : gpu::defaultTransports()) out.push_back(n);
            continue;
        }
        const auto known = knownTransports();
        if (std::find(known.begin(), known.end(), name) == known.end()) {
            throwError(ErrorKind::InvalidInput, fmt::format("--transport '{}': use a comma-separated list of {} or all",
                                                            name, fmt::join(known, ", ")));
        }
        if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
    }
    if (out.empty()) throwError(ErrorKind::InvalidInput, "--transport: name at least one transport (or all)");
    return out;
}

ProblemSpec makeSpec(const Options& o, int ranks) {
    ProblemSpec spec;
    spec.nx = o.nx;
    spec.ny = o.ny;
    spec.niter = o.niter;
    spec.nccheck = o.nccheck;
    spec.boundary = parseBoundary(o.boundary);
    if (o.warmup < 0) throwError(ErrorKind::InvalidInput, fmt::format("--warmup {}: use 0 or more", o.warmup));
    if (o.repeat < 1) throwError(ErrorKind::InvalidInput, fmt::format("--repeat {}: use 1 or more", o.repeat));
    if (o.nvshmemPath == "put") {
        throwError(ErrorKind::InvalidInput,
                   "--nvshmem-path put: the fused Jacobi kernel stores straight into the neighbours' fields over "
                   "NVLink/P2P and has no put-with-signal path; use auto (or direct), and --transport nccl or staged "
                   "between GPUs without load/store access");
    }
    if (o.nvshmemPath != "auto" && o.nvshmemPath != "direct") {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("--nvshmem-path '{}': use auto or direct (the same: direct stores)", o.nvshmemPath));
    }
    if (o.maxBlocks < 0)
        throwError(ErrorKind::InvalidInput, fmt::format("--max-blocks {}: use 0 or more", o.maxBlocks));
    if (o.tileCells < 0)
        throwError(ErrorKind::InvalidInput, fmt::format("--tile-cells {}: use 0 or more", o.tileCells));
    if (o.perRank) {
        if (o.nx < 1 || o.ny < 1) {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("--nx {} --ny {} --per-rank: every rank needs at least one cell", o.nx, o.ny));
        }
        if (o.decomp == "2d") {
            // Per-rank blocks are equal by construction; pick the squarest grid.
            spec.nx = 1;
            spec.ny = 1;
            int px = 1;
            for (int p = 1; p * p <= ranks; ++p)
                if (ranks % p == 0) px = p;
            spec.px = px;
            spec.py = ranks / px;
        } else {
            chooseProcessGrid(spec, o.decomp, ranks);
        }
        const long long nx = static_cast<long long>(o.nx) * spec.px, ny = static_cast<long long>(o.ny) * spec.py;
        if (nx > std::numeric_limits<int>::max() || ny > std::numeric_limits<int>::max()) {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("--per-rank: the grid of {} x {} cells is too large", nx, ny));
        }
        spec.nx = static_cast<int>(nx);
        spec.ny = static_cast<int>(ny);
    } else {
        chooseProcessGrid(spec, o.decomp, ranks);
    }
    validate(spec, ranks);
    return spec;
}

int run(const Options& o, const ProblemSpec& spec, const std::vector<std::string>& names, runtime::MpiWorld& world) {
    const plan::GridHaloPlan plan = plan::buildGridPlan(gridSpec(spec), world.rank());
    const stencil::LocalStencil stencil = buildLocalStencil(plan);
    const bool root = world.rank() == 0;
    if (root && !o.csv) {
        fmt::print("haloex-jacobi {}: {} ranks, process grid {}, {} x {} cells ({} x {} per rank), {} boundaries, {} "
                   "iterations ({} warm-up, {} timed run(s)), transports {}\n",
                   gitCommit(), world.size(), spec.gridString(), spec.nx, spec.ny, spec.localNx(), spec.localNy(),
                   toString(spec.boundary), spec.niter, o.warmup, o.repeat, fmt::join(names, ","));
    }

    std::vector<RunResult> results;
    nlohmann::json machine{{"host", hostName()}, {"ranks", world.size()}};
    bool wantsGpu = false;
    for (const auto& name : names) {
        if (name == "cpu") {
            const Reference ref = cpuReferenceOnRank0(spec, world, o.repeat);
            results.push_back(runCpuTransport(spec, stencil, world, o.repeat, ref));
            results.back().notes.push_back("reference: " + ref.kind);
        } else {
            wantsGpu = true;
        }
    }
    if (wantsGpu) {
        std::vector<std::string> gpuNames;
        for (const auto& n : names)
            if (n != "cpu") gpuNames.push_back(n);
        auto skipAll = [&](const std::string& reason) {
            for (const auto& n : gpuNames) {
                RunResult r = newRunResult(n, spec, world.size(), 0);
                r.reason = reason;
                results.push_back(r);
            }
        };
        if (const std::string reason = gpu::noGpuReason(world); !reason.empty()) {
            skipAll(reason);
        } else {
            try {
                gpu::selectGpu(world, o.allowSharedGpus);
            } catch (const Error& e) {
                // More ranks than GPUs without --allow-shared-gpus: the same on every rank of the node.
                if (e.kind() != ErrorKind::InvalidInput) throw;
                if (root) fmt::print(stderr, "haloex-jacobi: error: {}\n", e.what());
                return kExitBadInput;
            }
            gpu::GpuSettings settings;
            settings.warmup = o.warmup;
            settings.repeats = o.repeat;
            settings.allowSharedGpus = o.allowSharedGpus;
            settings.nvshmemPath = o.nvshmemPath;
            settings.waitTimeoutSeconds = o.waitTimeout;
            settings.maxBlocks = o.maxBlocks;
            settings.tileCells = o.tileCells;
            settings.printNorms = !o.csv;
            machine["gpu"] = gpu::gpuMachineInfo(world);
            // The one-GPU reference is itself checked against the CPU where that is cheap.
            const bool crossCheck = static_cast<double>(spec.nx) * spec.ny * spec.niter <= 5e7;
            const Reference ref = gpu::gpuReference(spec, world, settings, crossCheck);
            for (const auto& n : gpuNames) {
                results.push_back(gpu::runGpuTransport(n, spec, plan, stencil, world, settings, ref));
                results.back().notes.push_back("reference: " + ref.kind);
                if (root && !o.csv) fmt::print("{}\n", humanLine(results.back()));
            }
        }
    }

    int passed = 0, failed = 0;
    for (const auto& r : results) {
        passed += r.status == RunStatus::Passed;
        failed += r.status == RunStatus::Failed;
    }
    if (root) {
        if (o.csv) {
            fmt::print("{}\n", csvHeader());
            for (const auto& r : results) fmt::print("{}\n", csvLine(r));
        } else {
            fmt::print("\nsummary ({} x {} cells, grid {}, {}):\n", spec.nx, spec.ny, spec.gridString(),
                       toString(spec.boundary));
            for (const auto& r : results) {
                fmt::print("{}\n", humanLine(r));
                for (const auto& note : r.notes) fmt::print("           {}\n", note);
            }
            if (passed + failed == 0) fmt::print("SKIPPED: no transport could run here\n");
        }
        if (!o.json.empty()) {
            nlohmann::json doc{{"tool", "haloex-jacobi"},
                               {"commit", gitCommit()},
                               {"date", utcTimestamp()},
                               {"machine", machine},
                               {"settings",
                                {{"nx", spec.nx},
                                 {"ny", spec.ny},
                                 {"per_rank", o.perRank},
                                 {"px", spec.px},
                                 {"py", spec.py},
                                 {"boundary", toString(spec.boundary)},
                                 {"niter", spec.niter},
                                 {"nccheck", spec.nccheck},
                                 {"warmup", o.warmup},
                                 {"repeat", o.repeat},
                                 {"nvshmem_path", o.nvshmemPath},
                                 {"allow_shared_gpus", o.allowSharedGpus}}},
                               {"results", nlohmann::json::array()}};
            for (const auto& r : results) doc["results"].push_back(toJson(r));
            writeFileAtomically(o.json, doc.dump(2) + "\n", "--json");
        }
    }
    if (failed > 0) return kExitFailed;
    return passed > 0 ? 0 : kExitSkipped;
}

}  // namespace

// What throws outside main's own try (CLI11's set-up, starting MPI) ends the
// program through std::terminate, with the exception's message: as intended.
// NOLINTNEXTLINE(bugprone-exception-escape)
int main(int argc, char** argv) {
    Options o;
    CLI::App app{"haloex-jacobi: 2D 5-point Jacobi with halos through haloex's transports, checked against a "
                 "one-device computation (launch with mpirun; exit code 77 means nothing could run). NVIDIA's "
                 "single-dash spellings -niter, -nccheck, -nx, -ny and -csv are accepted"};
    app.set_version_flag(
        "--version", [] { return haloex::buildDescription("haloex-jacobi"); },
        "Print the version and the build (commit, CUDA with its GPU architectures, MPI, NCCL, NVSHMEM) and exit");
    app.add_option("--nx", o.nx, "Cells along x (the whole grid; per rank with --per-rank)")->capture_default_str();
    app.add_option("--ny", o.ny, "Cells along y (the whole grid; per rank with --per-rank)")->capture_default_str();
    app.add_flag("--per-rank", o.perRank, "--nx/--ny give each rank's block (the grid is px*nx by py*ny)");
    app.add_option("--niter", o.niter, "Timed iterations")->capture_default_str();
    app.add_option("--nccheck", o.nccheck,
                   "Reduce and print the residual norm every N iterations (a host sync; 0: only after the last)")
        ->capture_default_str();
    app.add_option("--warmup", o.warmup, "Untimed iterations before the timed runs")->capture_default_str();
    app.add_option("--repeat", o.repeat, "Timed runs per transport (the median is reported)")->capture_default_str();
    app.add_option("--decomp", o.decomp, "Process grid: row (1 x ranks), 2d, or PXxPY")->capture_default_str();
    app.add_option("--boundary", o.boundary, "periodic or fixed")->capture_default_str();
    app.add_option("--transport", o.transports,
                   "Comma-separated list of staged, ipc, nccl, nvshmem, nccl-device, cpu, or all (every GPU transport "
                   "built)")
        ->capture_default_str();
    app.add_option("--nvshmem-path", o.nvshmemPath,
                   "nvshmem, nccl-device: auto or direct (the fused kernel stores into the neighbours' fields)")
        ->capture_default_str();
    app.add_option("--max-blocks", o.maxBlocks,
                   "nvshmem, nccl-device: at most this many blocks in the fused kernel, up to all that fit (0: 3 "
                   "per SM)")
        ->capture_default_str();
    app.add_option(
           "--tile-cells", o.tileCells,
           "nvshmem, nccl-device: interior cells per work item of the fused kernel, rounded up to a multiple of 256 "
           "(0: 4096)")
        ->capture_default_str();
    app.add_flag("--allow-shared-gpus", o.allowSharedGpus, "Allow several ranks per GPU (start the CUDA MPS daemon)");
    app.add_option("--wait-timeout", o.waitTimeout,
                   "nvshmem, nccl-device: device-side wait limit in seconds (0: default 120)");
    app.add_flag("--csv", o.csv, "Print one CSV line per transport instead of the human summary");
    app.add_option("--json", o.json, "Write the settings, machine and results to this JSON file (rank 0)");
    // NVIDIA's single-dash spellings (-niter 10 -nx 256) mapped before CLI11 reads them.
    std::vector<std::string> args;
    try {
        args = mapNvidiaSpellings(std::vector<std::string>(argv + 1, argv + argc));
    } catch (const Error& e) {
        fmt::print(stderr, "haloex-jacobi: error: {}\n", e.what());
        return kExitBadInput;
    }
    std::vector<char*> mappedArgv{argv[0]};
    for (std::string& a : args) mappedArgv.push_back(a.data());
    CLI11_PARSE(app, static_cast<int>(mappedArgv.size()), mappedArgv.data());
    // Checked before MPI starts, as CLI11 checks the others: NaN and 1e308
    // used to pass and wrap when cast to nanoseconds on the GPU path.
    if (!validWaitSeconds(o.waitTimeout, true)) {
        fmt::print(stderr, "haloex-jacobi: --wait-timeout {}: use 0 (default 120) or a number of seconds up to {:g}\n",
                   o.waitTimeout, kMaxWaitSeconds);
        return kExitBadInput;
    }

    runtime::MpiSession session(argc, argv);
    runtime::MpiWorld world;
    ProblemSpec spec;
    std::vector<std::string> names;
    try {
        spec = makeSpec(o, world.size());
        names = parseTransports(o.transports);
        // The output before the runs: rank 0 writes it, every rank stops.
        std::int64_t badOutput = 0;
        std::string why;
        if (world.rank() == 0 && !o.json.empty()) {
            try {
                requireWritableOutput("--json", o.json);
            } catch (const Error& e) {
                badOutput = 1;
                why = e.what();
            }
        }
        if (world.allReduceValue(badOutput, runtime::ReduceOp::Max) != 0) {
            throwError(ErrorKind::InvalidInput, world.rank() == 0 ? why : "rank 0 cannot write --json");
        }
    } catch (const Error& e) {
        // Every rank finds the same problem; rank 0 says what it is.
        if (world.rank() == 0) fmt::print(stderr, "haloex-jacobi: error: {}\n", e.what());
        return kExitBadInput;
    }
    try {
        return run(o, spec, names, world);
    } catch (const std::exception& e) {
        world.abort(fmt::format("haloex-jacobi: {}", e.what()));
    }
}
