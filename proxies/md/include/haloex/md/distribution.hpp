#pragma once
// Mean, median and spread of sampled values (the device timeline's steps).
#include <algorithm>
#include <numeric>
#include <vector>

namespace haloex::md {

struct Distribution {
    double mean = 0, median = 0, p10 = 0, p90 = 0, min = 0, max = 0;
};

inline Distribution describeSamples(std::vector<double> v) {
    Distribution d;
    if (v.empty()) return d;
    std::sort(v.begin(), v.end());
    // Non-negative, so + 0.5 and truncation round to nearest (halves up), as intended.
    // NOLINTNEXTLINE(bugprone-incorrect-roundings)
    const auto at = [&](double q) { return v[static_cast<std::size_t>(q * (v.size() - 1) + 0.5)]; };
    d.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
    d.median = at(0.5);
    d.p10 = at(0.1);
    d.p90 = at(0.9);
    d.min = v.front();
    d.max = v.back();
    return d;
}

}  // namespace haloex::md
