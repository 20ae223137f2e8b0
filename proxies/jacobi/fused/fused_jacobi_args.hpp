#pragma once
// Kernel-side description of the fused Jacobi iteration (fused_jacobi_kernels.cu):
// everything is passed by value in one argument block, rebuilt per launch
// only in `parity`, `seq` and `normSquared`.
#include <cstdint>

#include "haloex/halo/device_halo.hpp"
#include "haloex/stencil/jacobi_layout.hpp"

namespace haloex::jacobi::fused {

inline constexpr int kJacobiMaxPulses = 4;  // a 2D plan: x and y, both directions
inline constexpr int kJacobiMaxUnsent = 4;
inline constexpr int kJacobiThreads = 256;
inline constexpr int kJacobiDefaultTileCells = 16 * kJacobiThreads;
// 768 threads per SM by default, and the kernel's launch bounds say so:
// ptxas then keeps more of a tile's loads in flight (70 registers, not the 40
// of a full-occupancy target, which ran 12-14 % slower at 2048^2-4096^2
// cells per rank whatever the block count).
inline constexpr int kJacobiDefaultBlocksPerSm = 3;

struct JacobiMessage {
    stencil::Line send;
    stencil::Line remote;  // where the cells land in the peer's field
    int pulse = -1;
    int peer = -1;
    int link = -1;  // the device halo view's send link of this pulse
    int normBegin = 0, normEnd = 0;
    double* peerField[2] = {nullptr, nullptr};  // the peer's fields, as this GPU addresses them
    int firstChunk = 0, numChunks = 0;
};

struct JacobiUnsent {
    stencil::Line cells;
    int normBegin = 0, normEnd = 0;
    int firstChunk = 0, numChunks = 0;
};

struct JacobiReceive {
    int pulse = -1;
    int link = -1;  // the device halo view's receive link of this pulse
};

struct JacobiArgs {
    double* field[2] = {nullptr, nullptr};  // peer memory
    int parity = 0;                         // read field[parity], write field[1 - parity]
    std::int64_t ax = 0;
    int nx = 0, ny = 0;
    JacobiMessage msgs[kJacobiMaxPulses];
    int numMsgs = 0;
    JacobiUnsent unsent[kJacobiMaxUnsent];
    int numUnsent = 0;
    JacobiReceive recvs[kJacobiMaxPulses];
    int numRecvs = 0;
    std::uint64_t seq = 0;  // this launch's generation (1, 2, ...): the signal value
    // Work items: boundary chunks first (sent lines, then unsent ones), then interior tiles.
    int chunkCells = 0;
    int boundaryChunks = 0;
    int tileCells = 0;
    int interiorTiles = 0;
    unsigned interiorCells = 0;
    unsigned interiorCols = 0;
    unsigned* boundaryCounter = nullptr;  // device, wraps by itself
    unsigned* kernelCounter = nullptr;    // device, wraps by itself
    unsigned* itemCounter = nullptr;      // device, reset by the last block
    double* normSquared = nullptr;        // device, optional
    int withholdPulse = -1;               // test hook: never signal this pulse
    // The signals and their timed waits (signal-only links: the cells go
    // straight into the peer's field, not into the view's windows).
    DeviceHaloView view;
};

}  // namespace haloex::jacobi::fused
