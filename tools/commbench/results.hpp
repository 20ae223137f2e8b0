#pragma once
// One micro-benchmark's repeated measurements, summarised (median and
// spread) and written as a table, CSV or JSON.
#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace haloex::commbench {

struct Summary {
    double median = 0, min = 0, max = 0, p25 = 0, p75 = 0;
};
Summary summarize(std::vector<double> samples);  // empty -> all zero

struct Measurement {
    std::string benchmark;  // e.g. "put_signal_pingpong"
    std::string variant;    // e.g. "block"
    std::string driver;     // "gpu" (GPU-initiated) or "cpu" (CPU-orchestrated)
    std::size_t bytes = 0;
    std::string unit;    // "us", "GB/s", "Mmsg/s"
    std::string metric;  // what a sample is, e.g. "half round trip"
    int iterations = 0;  // inner iterations per sample
    std::vector<double> samples;
    std::string skipped;  // non-empty: why it did not run
};

// A measurement with no samples yet.
Measurement newMeasurement(std::string driver, std::string benchmark, std::string variant, std::size_t bytes,
                           std::string unit, std::string metric, int iterations);

std::string csvHeader();
std::string csvLine(const Measurement& m);
nlohmann::json toJson(const Measurement& m);
// A fixed-width table line (and its header).
std::string tableHeader();
std::string tableLine(const Measurement& m);
std::string formatBytes(std::size_t bytes);

}  // namespace haloex::commbench
