// exchangeKernelParts (backend.hpp): the exchange kernels' device timestamps
// as the named intervals the run summary reports.
#include <algorithm>
#include <cstdint>
#include <fmt/format.h>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "haloex/md/backend.hpp"

namespace haloex::md {
namespace {

// Appends `name` = to - from in µs when both points were reached in order.
void addPart(std::vector<std::pair<std::string, double>>& out, std::string name, std::uint64_t from, std::uint64_t to) {
    if (from == 0 || to == 0 || to < from) return;
    out.emplace_back(std::move(name), 1e-3 * static_cast<double>(to - from));
}

std::uint64_t firstStart(const std::vector<transport::PulseTimestamps>& pulses) {
    std::uint64_t first = std::numeric_limits<std::uint64_t>::max();
    for (const auto& p : pulses) {
        if (p.start != 0) first = std::min(first, p.start);
    }
    return first == std::numeric_limits<std::uint64_t>::max() ? 0 : first;
}

}  // namespace

std::vector<std::pair<std::string, double>> exchangeKernelParts(const transport::ExchangeTimestamps& t) {
    std::vector<std::pair<std::string, double>> out;
    addPart(out, "forward kernel", firstStart(t.forward), t.forwardEnd);
    for (std::size_t p = 0; p < t.forward.size(); ++p) {
        const transport::PulseTimestamps& f = t.forward[p];
        const std::string pulse = fmt::format("forward p{} ", p);
        addPart(out, pulse + "until dependencies", f.start, f.dependencies);
        addPart(out, pulse + "stores", f.start, f.sent);
        addPart(out, pulse + "signal", f.sent, f.signalled);
        addPart(out, pulse + "until received", f.start, f.received);
        addPart(out, pulse + "clear", f.received, f.finished);
    }
    addPart(out, "reverse kernel", firstStart(t.reverse), t.reverseEnd);
    for (std::size_t p = 0; p < t.reverse.size(); ++p) {
        const transport::PulseTimestamps& r = t.reverse[p];
        const std::string pulse = fmt::format("reverse p{} ", p);
        addPart(out, pulse + "until dependencies", r.start, r.dependencies);
        addPart(out, pulse + "signal", r.start, r.signalled);
        addPart(out, pulse + "until received", r.start, r.received);
        addPart(out, pulse + "accumulate", r.received, r.finished);
    }
    return out;
}

}  // namespace haloex::md
