// Host wall time of a call's named parts, for accounts of where a step of
// several collective parts goes (a search step's migration and halo plan).
#pragma once

#include <chrono>
#include <string_view>
#include <utility>
#include <vector>

namespace haloex {

/// The parts of one call and their host wall time (ms), in the order each
/// part first ran; a part that recurs (once per dimension, once per pulse)
/// accumulates. A part that ends in a host wait includes the GPU's work
/// before it and the time the peers took to get there.
using PartTimes = std::vector<std::pair<const char*, double>>;

/// Adds `ms` to part `name` of `parts` (parts are told apart by their text),
/// appending a part not seen before; `name` must outlive `parts`.
inline void addPartTime(PartTimes& parts, const char* name, double ms) {
    for (auto& [part, total] : parts) {
        if (std::string_view(part) == name) {
            total += ms;
            return;
        }
    }
    parts.emplace_back(name, ms);
}

/// Times consecutive parts into a PartTimes, which it empties first.
class PartClock {
public:
    /// Starts the first part now; `parts` is emptied and then filled by mark().
    explicit PartClock(PartTimes& parts) : parts_(parts), last_(Clock::now()) { parts_.clear(); }

    /// The time since the last mark (or the construction) goes to `name`,
    /// which must outlive the PartTimes (a string literal).
    void mark(const char* name) {
        const Clock::time_point now = Clock::now();
        const double ms = std::chrono::duration<double, std::milli>(now - last_).count();
        last_ = now;
        addPartTime(parts_, name, ms);
    }

private:
    using Clock = std::chrono::steady_clock;
    PartTimes& parts_;
    Clock::time_point last_;
};

}  // namespace haloex
