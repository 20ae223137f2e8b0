#pragma once
// The longest wait a time limit may name. Every wait limit in seconds
// (--wait-timeout, HALOEX_WAIT_TIMEOUT, HALOEX_HOST_WAIT_TIMEOUT) is checked
// against it before it becomes nanoseconds in an unsigned or a signed 64-bit
// integer: 1e308 used to wrap when cast, NaN passed "> 0" checks, and
// HALOEX_HOST_WAIT_TIMEOUT beyond ~9.2e9 s overflowed the deadline and timed
// out at once. 1e9 s is some 31 years: "never" for any job.
#include <cmath>

namespace haloex {

inline constexpr double kMaxWaitSeconds = 1e9;

// Whether `seconds` is a usable wait limit: finite, at most kMaxWaitSeconds,
// and above 0 (or 0 too, where 0 means "the default" or "no limit").
inline bool validWaitSeconds(double seconds, bool zeroAllowed) {
    return std::isfinite(seconds) && (zeroAllowed ? seconds >= 0.0 : seconds > 0.0) && seconds <= kMaxWaitSeconds;
}

}  // namespace haloex
