#pragma once
// Kernel-side description of the fused Jacobi iteration (stencil_kernels.cu):
// everything is passed by value in one argument block, rebuilt per launch
// only in `parity`, `seq` and `normSquared`.
#include <cstdint>

#include "haloex/stencil/jacobi_layout.hpp"
#include "wait_diagnostics.hpp"

namespace haloex::nvshmem_detail {

inline constexpr int kJacobiMaxPulses = 4;  // a 2D plan: x and y, both directions
inline constexpr int kJacobiMaxUnsent = 4;
inline constexpr int kJacobiThreads = 256;
inline constexpr int kJacobiDefaultTileCells = 16 * kJacobiThreads;
inline constexpr int kJacobiKernelId = 2;  // WaitDiagnostics::kernel of the Jacobi kernel

struct JacobiMessage {
    stencil::Line send;
    stencil::Line remote;
    int pulse = -1;
    int peer = -1;
    int normBegin = 0, normEnd = 0;
    int direct = 1;                             // 1: stores through peerField; 0: staging, then put-with-signal
    int putIntoField = 0;                       // put path, contiguous destination: put straight into the peer's field
    double* peerField[2] = {nullptr, nullptr};  // direct: the peer's fields (nvshmem_ptr)
    std::uint64_t* peerSignal = nullptr;        // direct: the peer's signal of this pulse (nvshmem_ptr)
    int firstChunk = 0, numChunks = 0;
};

struct JacobiUnsent {
    stencil::Line cells;
    int normBegin = 0, normEnd = 0;
    int firstChunk = 0, numChunks = 0;
};

struct JacobiReceive {
    stencil::Line recv;
    int pulse = -1;
    int peer = -1;
    int fromSlot = 0;  // the sender puts into a receive slot (strided line): unpack after the wait
};

struct JacobiArgs {
    double* field[2] = {nullptr, nullptr};  // symmetric
    int parity = 0;                         // read field[parity], write field[1 - parity]
    std::int64_t ax = 0;
    int nx = 0, ny = 0;
    JacobiMessage msgs[kJacobiMaxPulses];
    int numMsgs = 0;
    JacobiUnsent unsent[kJacobiMaxUnsent];
    int numUnsent = 0;
    JacobiReceive recvs[kJacobiMaxPulses];
    int numRecvs = 0;
    // Symmetric [2 (iteration parity)][kJacobiMaxPulses][slotStride]: the
    // put path's send staging and the strided receive slots.
    double* staging = nullptr;
    double* slots = nullptr;
    std::int64_t slotStride = 0;
    std::uint64_t* signals = nullptr;  // symmetric [kJacobiMaxPulses]
    std::uint64_t seq = 0;             // this launch's signal value (1, 2, ...)
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
    WaitDiagnostics* diagnostics = nullptr;
    int* abortFlag = nullptr;
    std::uint64_t timeoutNs = 0;
    int myPe = 0;
    int withholdPulse = -1;  // test hook: never signal this pulse
};

}  // namespace haloex::nvshmem_detail
