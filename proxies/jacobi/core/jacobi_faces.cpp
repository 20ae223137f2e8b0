#include "jacobi_faces.hpp"

#include <fmt/format.h>

#include <unordered_set>

#include "haloex/core/error.hpp"

namespace haloex::jacobi {

stencil::Line toLine(const std::vector<int>& indices, const char* what) {
    stencil::Line line;
    line.count = static_cast<int>(indices.size());
    if (indices.empty()) return line;
    line.start = indices[0];
    line.stride = indices.size() > 1 ? indices[1] - indices[0] : 1;
    for (std::size_t k = 0; k < indices.size(); ++k) {
        if (indices[k] != line.at(static_cast<int>(k))) {
            throwError(ErrorKind::Internal,
                       fmt::format("{}: entry {} is local index {}, but a line from {} with stride {} gives {}; the "
                                   "grid plan's pulses are not face-shaped",
                                   what, k, indices[k], line.start, line.stride, line.at(static_cast<int>(k))));
        }
    }
    return line;
}

int sendSlotOf(const plan::Pulse& pulse, const stencil::Line& line) {
    const auto& sends = pulse.sendIndices;
    for (std::size_t first = 0; first + static_cast<std::size_t>(line.count) <= sends.size(); ++first) {
        if (sends[first] != line.start) continue;
        bool run = true;
        for (int k = 1; k < line.count && run; ++k) run = sends[first + static_cast<std::size_t>(k)] == line.at(k);
        if (run) return static_cast<int>(first);
    }
    throwError(ErrorKind::Internal,
               fmt::format("pulse {}: the line of {} cells from local index {} (stride {}) is not a run of its {} "
                           "send indices",
                           pulse.id, line.count, line.start, line.stride, sends.size()));
}

stencil::LocalStencil buildLocalStencil(const plan::GridHaloPlan& plan) {
    if (plan.interior[2] != 1 || plan.halo[2] != 0 || plan.halo[0] != 1 || plan.halo[1] != 1) {
        throwError(ErrorKind::Internal,
                   fmt::format("the Jacobi stencil needs a 2D plan with a halo of one cell in x and y; rank {} has "
                               "halo ({}, {}, {}) and {} layers",
                               plan.rank, plan.halo[0], plan.halo[1], plan.halo[2], plan.interior[2]));
    }
    stencil::LocalStencil s;
    s.rank = plan.rank;
    s.nx = plan.interior[0];
    s.ny = plan.interior[1];
    s.ax = plan.allocated[0];
    s.ay = plan.allocated[1];
    s.originX = plan.origin[0];
    s.originY = plan.origin[1];
    s.numPulses = static_cast<int>(plan.pulses.size());

    // A halo cell is a face cell when it lies outside the interior along one
    // dimension only (outside along both: a corner).
    auto isInterior = [&](int index) {
        const int i = index % s.ax - 1;
        const int j = index / s.ax - 1;
        return i >= 0 && i < s.nx && j >= 0 && j < s.ny;
    };
    auto isFaceHalo = [&](int index) {
        const int i = index % s.ax - 1;
        const int j = index / s.ax - 1;
        const int outside = (i < 0 || i >= s.nx ? 1 : 0) + (j < 0 || j >= s.ny ? 1 : 0);
        return outside == 1;
    };
    bool sentLow[2] = {false, false}, sentHigh[2] = {false, false};
    for (const plan::Pulse& pulse : plan.pulses) {
        const int direction = pulse.direction == plan::Direction::Down ? -1 : +1;
        if (pulse.sends()) {
            HALOEX_ASSERT(pulse.remoteRecvIndices.size() == pulse.sendIndices.size(),
                          "a grid pulse's remote placement lists every sent cell");
            // The face: the sender's interior cells among the pulse's
            // entries (its own data; at a fixed edge its boundary halo cells
            // are own data too, but they are corners for the receiver).
            std::vector<int> own, remote;
            for (std::size_t k = 0; k < pulse.sendIndices.size(); ++k) {
                if (!isInterior(pulse.sendIndices[k])) continue;
                own.push_back(pulse.sendIndices[k]);
                remote.push_back(pulse.remoteRecvIndices[k]);
            }
            stencil::FaceMessage m;
            m.pulse = pulse.id;
            m.dim = pulse.dim;
            m.direction = direction;
            m.peer = pulse.sendRank;
            m.send = toLine(own, fmt::format("rank {} pulse {} send", plan.rank, pulse.id).c_str());
            m.remote = toLine(remote, fmt::format("rank {} pulse {} remote", plan.rank, pulse.id).c_str());
            const int expected = pulse.dim == 0 ? s.ny : s.nx;
            HALOEX_ASSERT(m.send.count == expected, "a face message carries one whole face line");
            (direction < 0 ? sentLow : sentHigh)[pulse.dim] = true;
            s.sends.push_back(m);
        }
        if (pulse.receives()) {
            std::vector<int> face;
            for (int index : pulse.recvIndices) {
                if (isFaceHalo(index)) face.push_back(index);
            }
            stencil::FaceReceive r;
            r.pulse = pulse.id;
            r.dim = pulse.dim;
            r.direction = direction;
            r.peer = pulse.recvRank;
            r.recv = toLine(face, fmt::format("rank {} pulse {} receive", plan.rank, pulse.id).c_str());
            s.receives.push_back(r);
        }
    }
    // The boundary band split into four disjoint lines; a line whose face is
    // not sent (fixed global edge) still has to be computed.
    auto addUnsent = [&](stencil::Line line) { s.unsentLines.push_back({line, 0, 0}); };
    if (!sentLow[1]) addUnsent({s.index(0, 0), 1, s.nx});
    if (!sentHigh[1] && s.ny > 1) addUnsent({s.index(0, s.ny - 1), 1, s.nx});
    if (s.ny > 2) {
        if (!sentLow[0]) addUnsent({s.index(0, 1), s.ax, s.ny - 2});
        if (!sentHigh[0] && s.nx > 1) addUnsent({s.index(s.nx - 1, 1), s.ax, s.ny - 2});
    }

    // Norm ranges: in the order the kernels walk the lines (messages, then
    // unsent lines), a cell counts in the first line that holds it. Lines meet
    // only at their ends, so the cells a line counts are one contiguous range.
    std::unordered_set<std::int64_t> counted;
    auto countRange = [&](const stencil::Line& line, int& begin, int& end) {
        const std::size_t before = counted.size();
        begin = 0;
        end = 0;
        for (int k = 0; k < line.count; ++k) {
            if (counted.insert(line.at(k)).second) {
                if (end == 0) begin = k;
                end = k + 1;
            }
        }
        HALOEX_ASSERT(counted.size() - before == static_cast<std::size_t>(end - begin),
                      "the cells a boundary line counts towards the norm are contiguous");
    };
    for (stencil::FaceMessage& m : s.sends) countRange(m.send, m.normBegin, m.normEnd);
    for (stencil::UnsentLine& u : s.unsentLines) countRange(u.cells, u.normBegin, u.normEnd);
    return s;
}

}  // namespace haloex::jacobi
