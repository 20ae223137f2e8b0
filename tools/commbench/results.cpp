#include "results.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

namespace haloex::commbench {
namespace {

// Linear interpolation between order statistics.
double quantile(const std::vector<double>& sorted, double q) {
    const double pos = q * static_cast<double>(sorted.size() - 1);
    const auto lo = static_cast<std::size_t>(std::floor(pos));
    const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
    return sorted[lo] + (pos - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

}  // namespace

Summary summarize(std::vector<double> samples) {
    Summary s;
    if (samples.empty()) return s;
    std::sort(samples.begin(), samples.end());
    s.median = quantile(samples, 0.5);
    s.min = samples.front();
    s.max = samples.back();
    s.p25 = quantile(samples, 0.25);
    s.p75 = quantile(samples, 0.75);
    return s;
}

Measurement newMeasurement(std::string driver, std::string benchmark, std::string variant, std::size_t bytes,
                           std::string unit, std::string metric, int iterations) {
    Measurement m;
    m.benchmark = std::move(benchmark);
    m.variant = std::move(variant);
    m.driver = std::move(driver);
    m.bytes = bytes;
    m.unit = std::move(unit);
    m.metric = std::move(metric);
    m.iterations = iterations;
    return m;
}

std::string formatBytes(std::size_t bytes) {
    if (bytes >= (std::size_t{1} << 20) && bytes % (std::size_t{1} << 20) == 0)
        return fmt::format("{} MiB", bytes >> 20);
    if (bytes >= 1024 && bytes % 1024 == 0) return fmt::format("{} KiB", bytes >> 10);
    return fmt::format("{} B", bytes);
}

std::string csvHeader() {
    return "benchmark,variant,driver,bytes,unit,metric,median,min,max,p25,p75,samples,iterations,skipped";
}

std::string csvLine(const Measurement& m) {
    const Summary s = summarize(m.samples);
    return fmt::format("{},{},{},{},{},{},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{},{},\"{}\"", m.benchmark, m.variant,
                       m.driver, m.bytes, m.unit, m.metric, s.median, s.min, s.max, s.p25, s.p75, m.samples.size(),
                       m.iterations, m.skipped);
}

nlohmann::json toJson(const Measurement& m) {
    const Summary s = summarize(m.samples);
    return {{"benchmark", m.benchmark},
            {"variant", m.variant},
            {"driver", m.driver},
            {"bytes", m.bytes},
            {"unit", m.unit},
            {"metric", m.metric},
            {"median", s.median},
            {"min", s.min},
            {"max", s.max},
            {"p25", s.p25},
            {"p75", s.p75},
            {"samples", m.samples},
            {"iterations", m.iterations},
            {"skipped", m.skipped}};
}

std::string tableHeader() {
    return fmt::format("{:<24} {:<16} {:<4} {:>9} {:>11} {:>11} {:>11} {:>7}  {}", "benchmark", "variant", "by", "size",
                       "median", "min", "max", "unit", "metric");
}

std::string tableLine(const Measurement& m) {
    if (!m.skipped.empty()) {
        return fmt::format("{:<24} {:<16} {:<4} {:>9}  SKIPPED: {}", m.benchmark, m.variant, m.driver,
                           formatBytes(m.bytes), m.skipped);
    }
    const Summary s = summarize(m.samples);
    return fmt::format("{:<24} {:<16} {:<4} {:>9} {:>11.4g} {:>11.4g} {:>11.4g} {:>7}  {}", m.benchmark, m.variant,
                       m.driver, formatBytes(m.bytes), s.median, s.min, s.max, m.unit, m.metric);
}

}  // namespace haloex::commbench
