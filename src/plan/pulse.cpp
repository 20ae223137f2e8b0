#include "haloex/plan/pulse.hpp"

#include <algorithm>

#include "haloex/core/error.hpp"

namespace haloex::plan {

void computeDependencies(std::vector<Pulse>& pulses, const std::vector<int>& receivedInPulse) {
    for (auto& pulse : pulses) {
        pulse.waitsForward.clear();
        pulse.waitsReverse.clear();
    }
    for (std::size_t p = 0; p < pulses.size(); ++p) {
        Pulse& pulse = pulses[p];
        HALOEX_ASSERT(pulse.id == static_cast<int>(p), "pulse ids must equal their position");
        int independent = 0;
        while (independent < pulse.sendCount() && receivedInPulse.at(pulse.sendIndices[independent]) < 0) {
            ++independent;
        }
        pulse.numIndependent = independent;
        for (int i = independent; i < pulse.sendCount(); ++i) {
            const int source = receivedInPulse.at(pulse.sendIndices[i]);
            HALOEX_ASSERT(source >= 0, "index map must list the rank's own entries first");
            HALOEX_ASSERT(source < pulse.id, "a pulse can only forward data received in earlier pulses");
            pulse.waitsForward.push_back(source);
        }
        std::sort(pulse.waitsForward.begin(), pulse.waitsForward.end());
        pulse.waitsForward.erase(std::unique(pulse.waitsForward.begin(), pulse.waitsForward.end()),
                                 pulse.waitsForward.end());
        for (int q : pulse.waitsForward) pulses[q].waitsReverse.push_back(pulse.id);
    }
}

}  // namespace haloex::plan
