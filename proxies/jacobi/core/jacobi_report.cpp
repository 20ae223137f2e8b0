#include "jacobi_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "haloex/core/error.hpp"

namespace haloex::jacobi {

Spread summarize(std::vector<double> values) {
    HALOEX_ASSERT(!values.empty(), "a spread of no measurements");
    std::sort(values.begin(), values.end());
    const std::size_t n = values.size();
    Spread s;
    s.median = n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
    s.min = values.front();
    s.max = values.back();
    return s;
}

const char* toString(RunStatus s) {
    switch (s) {
        case RunStatus::Passed: return "passed";
        case RunStatus::Failed: return "failed";
        case RunStatus::Skipped: return "skipped";
    }
    return "?";
}

RunResult newRunResult(const std::string& transport, const ProblemSpec& spec, int ranks, int repeats) {
    RunResult r;
    r.transport = transport;
    r.ranks = ranks;
    r.px = spec.px;
    r.py = spec.py;
    r.nx = spec.nx;
    r.ny = spec.ny;
    r.localNx = spec.localNx();
    r.localNy = spec.localNy();
    r.boundary = toString(spec.boundary);
    r.niter = spec.niter;
    r.repeats = repeats;
    return r;
}

void computeScaling(RunResult& r) {
    if (r.usPerIteration.median > 0 && r.singleUsPerIteration > 0) {
        r.speedup = r.singleUsPerIteration / r.usPerIteration.median;
        r.efficiency = r.speedup / r.ranks;
    }
}

double relativeError(double a, double b) { return std::abs(a - b) / std::max(std::abs(b), 1e-300); }

std::string csvHeader() {
    return "transport,path,status,ranks,px,py,nx,ny,local_nx,local_ny,boundary,niter,repeats,"
           "us_per_iter,us_per_iter_min,us_per_iter_max,single_us_per_iter,speedup,efficiency,"
           "max_abs_error,mismatches,norm,reference_norm,norm_rel_error";
}

std::string csvLine(const RunResult& r) {
    return fmt::format(
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},{:.3e},{},{:.17g},"
        "{:.17g},{:.3e}",
        r.transport, r.path, toString(r.status), r.ranks, r.px, r.py, r.nx, r.ny, r.localNx, r.localNy, r.boundary,
        r.niter, r.repeats, r.usPerIteration.median, r.usPerIteration.min, r.usPerIteration.max, r.singleUsPerIteration,
        r.speedup, r.efficiency, r.maxAbsError, r.mismatches, r.norm, r.referenceNorm, r.normRelativeError);
}

std::string humanLine(const RunResult& r) {
    if (r.status == RunStatus::Skipped) return fmt::format("{:<8} SKIPPED: {}", r.transport, r.reason);
    std::string check = r.mismatches == 0
                            ? "bitwise equal to the reference"
                            : fmt::format("{} cells differ, max |error| {:.3e}", r.mismatches, r.maxAbsError);
    std::string line = fmt::format(
        "{:<8} {:<7} {:9.2f} us/iter (min {:.2f}, max {:.2f}; {} x {} iterations)  1 device {:9.2f} us/iter  speedup "
        "{:5.2f}  efficiency {:5.1f}%  | {}; norm {:.6e} (rel. error {:.1e})",
        r.transport, r.path, r.usPerIteration.median, r.usPerIteration.min, r.usPerIteration.max, r.repeats, r.niter,
        r.singleUsPerIteration, r.speedup, 100.0 * r.efficiency, check, r.norm, r.normRelativeError);
    if (r.status == RunStatus::Failed) line += fmt::format("  FAILED: {}", r.reason);
    return line;
}

nlohmann::json toJson(const RunResult& r) {
    return nlohmann::json{{"transport", r.transport},
                          {"path", r.path},
                          {"status", toString(r.status)},
                          {"reason", r.reason},
                          {"notes", r.notes},
                          {"ranks", r.ranks},
                          {"px", r.px},
                          {"py", r.py},
                          {"nx", r.nx},
                          {"ny", r.ny},
                          {"local_nx", r.localNx},
                          {"local_ny", r.localNy},
                          {"boundary", r.boundary},
                          {"niter", r.niter},
                          {"repeats", r.repeats},
                          {"us_per_iter", r.usPerIteration.median},
                          {"us_per_iter_min", r.usPerIteration.min},
                          {"us_per_iter_max", r.usPerIteration.max},
                          {"single_us_per_iter", r.singleUsPerIteration},
                          {"speedup", r.speedup},
                          {"efficiency", r.efficiency},
                          {"max_abs_error", r.maxAbsError},
                          {"mismatches", r.mismatches},
                          {"norm", r.norm},
                          {"reference_norm", r.referenceNorm},
                          {"norm_rel_error", r.normRelativeError}};
}

}  // namespace haloex::jacobi
