#pragma once
// One transport's run as printed (human line, CSV) and stored (JSON).
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "jacobi_problem.hpp"

namespace haloex::jacobi {

// Median and spread of repeated measurements.
struct Spread {
    double median = 0.0, min = 0.0, max = 0.0;
};
Spread summarize(std::vector<double> values);  // throws Internal when empty

enum class RunStatus { Passed, Failed, Skipped };
const char* toString(RunStatus s);

struct RunResult {
    std::string transport;
    std::string path = "-";  // nvshmem: direct / put / mixed
    RunStatus status = RunStatus::Skipped;
    std::string reason;  // why skipped or failed
    std::vector<std::string> notes;

    int ranks = 1, px = 1, py = 1;
    int nx = 0, ny = 0, localNx = 0, localNy = 0;
    std::string boundary;
    int niter = 0, repeats = 0;
    Spread usPerIteration;            // over the repetitions
    double singleUsPerIteration = 0;  // the one-device reference, same iterations
    double speedup = 0, efficiency = 0;

    double maxAbsError = 0;
    std::int64_t mismatches = 0;  // cells whose bits differ from the reference
    double norm = 0, referenceNorm = 0, normRelativeError = 0;
};

// A result for `transport` on `ranks` ranks with the problem's sizes filled in.
RunResult newRunResult(const std::string& transport, const ProblemSpec& spec, int ranks, int repeats);

// speedup = reference / run, efficiency = speedup / ranks (0 when unknown).
void computeScaling(RunResult& r);

std::string csvHeader();
std::string csvLine(const RunResult& r);
std::string humanLine(const RunResult& r);
nlohmann::json toJson(const RunResult& r);

// Relative difference |a - b| / max(|b|, tiny).
double relativeError(double a, double b);

}  // namespace haloex::jacobi
