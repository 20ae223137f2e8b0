#pragma once
// What haloex-commbench measures and how often.
#include <cstddef>
#include <vector>

namespace haloex::commbench {

struct BenchSettings {
    int repetitions = 15;          // samples per measurement (median and spread over them)
    int latencyIterations = 1000;  // round trips (or puts) per latency sample
    double waitTimeoutSeconds = 10.0;
    std::vector<std::size_t> latencySizes{8, 1024};
    std::vector<std::size_t> bandwidthSizes;                       // 8 B .. 64 MiB
    std::size_t bandwidthBytesPerSample = std::size_t{256} << 20;  // sets the iterations per size
    std::vector<int> messageRateWarps{1, 4, 16, 32};
    std::vector<int> messageRateBatches{1, 32};
    int messageRateIterations = 200;

    std::size_t maxBytes() const {
        std::size_t m = 16384;
        for (auto b : bandwidthSizes) m = m > b ? m : b;
        for (auto b : latencySizes) m = m > b ? m : b;
        return m;
    }
    int bandwidthIterations(std::size_t bytes) const {
        const std::size_t n = bandwidthBytesPerSample / (bytes ? bytes : 1);
        return static_cast<int>(n < 3 ? 3 : n > 1000 ? 1000 : n);
    }
};

// Largest message --max-bytes accepts: far beyond any GPU's memory use for a
// benchmark, and small enough that no size computation overflows.
inline constexpr std::size_t kMaxBenchBytes = std::size_t{1} << 36;  // 64 GiB

// Powers of `step` (>= 2) from 8 B up to and including `largest`. Stops
// before a product could wrap around (which looped until memory ran out).
inline std::vector<std::size_t> sizesUpTo(std::size_t largest, std::size_t step) {
    std::vector<std::size_t> out;
    if (step < 2) step = 2;
    for (std::size_t b = 8; b <= largest; b *= step) {
        out.push_back(b);
        if (b > largest / step) break;
    }
    if (out.empty() || out.back() != largest) out.push_back(largest);
    return out;
}

}  // namespace haloex::commbench
