#pragma once
// One rank's part of a 2D 5-point stencil, described by plain values that a
// kernel can walk without the plan: the local array layout, the face lines it
// sends (and where they land in the peer's array), the halo lines it
// receives, and the boundary lines nobody receives (a fixed global edge).
//
// Local layout (the structured-grid plan's): x fastest, one halo cell on each
// side, index(i, j) = (i + 1) + ax * (j + 1) for interior cell (i, j),
// i in [0, nx), j in [0, ny); ax = nx + 2, ay = ny + 2.
//
// A 5-point stencil reads no corner cells, so only the faces move: each
// message is one plan pulse restricted to its independent entries (the
// sender's own cells); the entries a plan pulse forwards are the corners.
#include <cstdint>
#include <vector>

namespace haloex::stencil {

// Cells start + k * stride for k in [0, count) of a local array.
struct Line {
    std::int64_t start = 0;
    std::int64_t stride = 1;
    int count = 0;

    std::int64_t at(int k) const { return start + static_cast<std::int64_t>(k) * stride; }
};

// One face line of this rank's interior, computed here and stored into the
// peer's halo (the peer's local indices are `remote`).
struct FaceMessage {
    int pulse = -1;      // the plan pulse (its id is the same on every rank)
    int dim = 0;         // 0 = x, 1 = y
    int direction = -1;  // -1: towards the lower neighbour, +1: the upper one
    int peer = -1;       // the receiving rank (may be this rank: periodic with one rank along dim)
    Line send;           // local indices of the cells sent
    Line remote;         // where they land in the peer's array
    // Cells k in [normBegin, normEnd) of `send` count towards the residual
    // norm (lines overlap at the corners; each cell is counted once).
    int normBegin = 0, normEnd = 0;
};

// A boundary line that no message covers (a fixed global edge), with its
// counted range as above.
struct UnsentLine {
    Line cells;
    int normBegin = 0, normEnd = 0;
};

// One halo line of this rank's array, filled by `peer` through `pulse`.
struct FaceReceive {
    int pulse = -1;
    int dim = 0;
    int direction = -1;
    int peer = -1;  // the sending rank
    Line recv;      // local indices of the halo cells, in the sender's order
};

struct LocalStencil {
    int rank = 0;
    int nx = 0, ny = 0;            // interior extents of this rank
    int ax = 0, ay = 0;            // allocated extents (with the halo)
    int originX = 0, originY = 0;  // global index of interior cell (0, 0)
    int numPulses = 0;             // pulses of the plan (ids are below this)
    std::vector<FaceMessage> sends;
    std::vector<FaceReceive> receives;
    // Boundary lines of the interior that no message covers (a fixed global
    // edge): computed like the sent lines, before any signal.
    std::vector<UnsentLine> unsentLines;

    std::int64_t index(int i, int j) const {
        return static_cast<std::int64_t>(i + 1) + static_cast<std::int64_t>(ax) * (j + 1);
    }
    std::int64_t numLocal() const { return static_cast<std::int64_t>(ax) * ay; }
    // The cells that read no halo: i in [1, nx-1), j in [1, ny-1).
    int interiorCols() const { return nx > 2 ? nx - 2 : 0; }
    int interiorRows() const { return ny > 2 ? ny - 2 : 0; }
};

}  // namespace haloex::stencil
