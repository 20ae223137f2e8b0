// The fused, GPU-initiated Jacobi iteration: one launch computes the new
// field, delivers the sent face lines into the peers' halos and returns once
// this rank's own halo lines have arrived (haloex/stencil/jacobi_fused.hpp).
// Plain CUDA on the library's public device API (peer pointers from
// PeerMemory, signals and timed waits of the device halo view): no -rdc, no
// NVSHMEM or NCCL device library, whichever backend provides the memory.
//
// Work is handed out dynamically (one counter): the boundary chunks come
// first, so the lines the peers wait for are computed by the first blocks to
// start, and the interior tiles follow while the halo travels. The block that
// completes the last boundary chunk signals every receiver; the last block to
// finish waits for this rank's senders. No block ever waits for another block
// of the same launch, and only one block per launch spins.
//
// Why a signal may follow all boundary chunks but need not follow the
// interior: the only cells that read a halo are the boundary lines, so once
// they are computed this rank no longer reads the halo the peers will
// overwrite in the next iteration (they write the other field of the pair).
#include "fused_jacobi_kernels.hpp"

#include <algorithm>
#include "haloex/cuda/check.hpp"
#include "haloex/halo/device_halo_view.cuh"
#include "haloex/stencil/jacobi_update.hpp"

namespace haloex::jacobi::fused {
namespace {

constexpr int kWarps = kJacobiThreads / 32;

__device__ __forceinline__ std::int64_t lineAt(const stencil::Line& line, int k) {
    return line.start + static_cast<std::int64_t>(k) * line.stride;
}

// Chunk `c` of a message: compute, store here and into the peer's field.
__device__ void messageChunk(const JacobiArgs& a, const JacobiMessage& m, int c, const double* cur, double* next,
                             double& norm) {
    const int begin = c * a.chunkCells;
    const int end = min(m.send.count, begin + a.chunkCells);
    double* peer = m.peerField[1 - a.parity];
    for (int k = begin + static_cast<int>(threadIdx.x); k < end; k += blockDim.x) {
        const std::int64_t cell = lineAt(m.send, k);
        const double old = cur[cell];
        const double v = stencil::jacobiAt(cur, cell, a.ax);
        next[cell] = v;
        if (k >= m.normBegin && k < m.normEnd) norm += (v - old) * (v - old);
        peer[lineAt(m.remote, k)] = v;
    }
    // Each thread orders its own deliveries before the chunk is counted.
    __threadfence_system();
}

__device__ void unsentChunk(const JacobiArgs& a, const JacobiUnsent& u, int c, const double* cur, double* next,
                            double& norm) {
    const int begin = c * a.chunkCells;
    const int end = min(u.cells.count, begin + a.chunkCells);
    for (int k = begin + static_cast<int>(threadIdx.x); k < end; k += blockDim.x) {
        const std::int64_t cell = lineAt(u.cells, k);
        const double old = cur[cell];
        const double v = stencil::jacobiAt(cur, cell, a.ax);
        next[cell] = v;
        if (k >= u.normBegin && k < u.normEnd) norm += (v - old) * (v - old);
    }
}

__device__ void boundaryChunk(const JacobiArgs& a, int item, const double* cur, double* next, double& norm) {
    for (int m = 0; m < a.numMsgs; ++m) {
        const JacobiMessage& msg = a.msgs[m];
        if (item >= msg.firstChunk && item < msg.firstChunk + msg.numChunks) {
            messageChunk(a, msg, item - msg.firstChunk, cur, next, norm);
            return;
        }
    }
    for (int u = 0; u < a.numUnsent; ++u) {
        const JacobiUnsent& line = a.unsent[u];
        if (item >= line.firstChunk && item < line.firstChunk + line.numChunks) {
            unsentChunk(a, line, item - line.firstChunk, cur, next, norm);
            return;
        }
    }
}

// Interior cell number l -> local index: cell (i + 1, j + 1) of the rank's
// field sits at (i + 2) + ax (j + 2).
__device__ __forceinline__ std::int64_t interiorCell(const JacobiArgs& a, unsigned l) {
    const unsigned j = l / a.interiorCols;
    const unsigned i = l - j * a.interiorCols;
    return static_cast<std::int64_t>(i + 2) + a.ax * static_cast<std::int64_t>(j + 2);
}

// The bulk of the bytes. `cur` is read-only for the whole launch (peers write
// only the other field), so its loads may take the non-coherent path; each
// thread issues the loads of kUnroll cells before it stores any, which the
// compiler may not do by itself (it cannot prove `next` and `cur` apart), to
// keep enough reads in flight for the memory system. The arithmetic is
// jacobiUpdate's, in the same order: results stay bitwise equal.
__device__ void interiorTile(const JacobiArgs& a, int tile, const double* __restrict__ cur, double* __restrict__ next,
                             double& norm) {
    constexpr int kUnroll = 4;
    const unsigned begin = static_cast<unsigned>(tile) * static_cast<unsigned>(a.tileCells);
    const unsigned end = min(a.interiorCells, begin + static_cast<unsigned>(a.tileCells));
    const std::int64_t ax = a.ax;
    unsigned l = begin + threadIdx.x;
    for (; l + (kUnroll - 1) * blockDim.x < end; l += kUnroll * blockDim.x) {
        std::int64_t cell[kUnroll];
        double old[kUnroll], v[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            cell[u] = interiorCell(a, l + u * blockDim.x);
            old[u] = __ldg(cur + cell[u]);
            v[u] = stencil::jacobiUpdate(__ldg(cur + cell[u] - 1), __ldg(cur + cell[u] + 1), __ldg(cur + cell[u] - ax),
                                         __ldg(cur + cell[u] + ax));
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            next[cell[u]] = v[u];
            norm += (v[u] - old[u]) * (v[u] - old[u]);
        }
    }
    for (; l < end; l += blockDim.x) {
        const std::int64_t c = interiorCell(a, l);
        const double old = __ldg(cur + c);
        const double v =
            stencil::jacobiUpdate(__ldg(cur + c - 1), __ldg(cur + c + 1), __ldg(cur + c - ax), __ldg(cur + c + ax));
        next[c] = v;
        norm += (v - old) * (v - old);
    }
}

// Thread 0: tell every receiver its line is there. The data went out as
// plain stores, ordered before this by the system-scope fences of the
// boundary counter; the view's signal is one release store at system scope.
__device__ void signalReceivers(const JacobiArgs& a) {
    for (int m = 0; m < a.numMsgs; ++m) {
        const JacobiMessage& msg = a.msgs[m];
        if (msg.pulse != a.withholdPulse) device::signal(a.view, msg.link, a.seq);
    }
}

// Thread 0 of the last block: wait (timed) for this rank's senders. The
// cells are already in `next`; the next launch, ordered after this one on
// the stream, reads them.
__device__ void receiveHalo(const JacobiArgs& a) {
    for (int r = 0; r < a.numRecvs; ++r) {
        if (!device::wait(a.view, a.recvs[r].link, a.seq)) return;  // timed out: the host reports it
    }
}

__device__ double blockSum(double v) {
    __shared__ double partial[kWarps];
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
    __syncthreads();
    double total = 0.0;
    if (threadIdx.x == 0) {
        for (int w = 0; w < kWarps; ++w) total += partial[w];
    }
    return total;  // meaningful in thread 0
}

}  // namespace

__global__ void __launch_bounds__(kJacobiThreads, kJacobiDefaultBlocksPerSm) jacobiFused(JacobiArgs a) {
    __shared__ int item;
    __shared__ int flag;
    if (threadIdx.x == 0) flag = device::timedOut(a.view);
    __syncthreads();
    if (flag) return;  // a wait timed out on this rank: the job is being aborted

    const double* cur = a.field[a.parity];
    double* next = a.field[1 - a.parity];
    const int totalItems = a.boundaryChunks + a.interiorTiles;
    double norm = 0.0;
    if (threadIdx.x == 0) item = static_cast<int>(atomicAdd(a.itemCounter, 1u));
    __syncthreads();
    for (;;) {
        const int t = item;
        if (t >= totalItems) break;
        // Fetch the next item now; its latency hides behind this one's work.
        int fetched = 0;
        if (threadIdx.x == 0) fetched = static_cast<int>(atomicAdd(a.itemCounter, 1u));
        if (t < a.boundaryChunks) {
            boundaryChunk(a, t, cur, next, norm);
            __syncthreads();
            if (threadIdx.x == 0) {
                __threadfence_system();  // this chunk's stores (also to peers) before the count
                const unsigned last = static_cast<unsigned>(a.boundaryChunks) - 1u;
                flag = atomicInc(a.boundaryCounter, last) == last;
                if (flag) __threadfence_system();  // every chunk's stores before the signals
            }
            __syncthreads();
            if (flag && threadIdx.x == 0) signalReceivers(a);
        } else {
            interiorTile(a, t - a.boundaryChunks, cur, next, norm);
        }
        __syncthreads();  // every thread has read `item` and `flag`
        if (threadIdx.x == 0) item = fetched;
        __syncthreads();
    }

    if (a.normSquared) {
        const double sum = blockSum(norm);
        if (threadIdx.x == 0 && sum != 0.0) atomicAdd(a.normSquared, sum);
    }

    // The last block to finish: reset the work counter for the next launch
    // (every block has made its final, failing fetch) and wait for the halo.
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        flag = atomicInc(a.kernelCounter, gridDim.x - 1) == gridDim.x - 1;
        if (flag) *a.itemCounter = 0u;
    }
    __syncthreads();
    if (flag && threadIdx.x == 0) receiveHalo(a);
}

void launchJacobiFused(const JacobiArgs& args, int blocks, cudaStream_t stream) {
    jacobiFused<<<blocks, kJacobiThreads, 0, stream>>>(args);
    HALOEX_CUDA_CHECK_LAUNCH();
}

namespace {
int multiprocessors() {
    int device = 0, sms = 0;
    HALOEX_CUDA_CHECK(cudaGetDevice(&device));
    HALOEX_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    return sms;
}
}  // namespace

int maxResidentJacobiBlocks() {
    int perSm = 0;
    HALOEX_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, jacobiFused, kJacobiThreads, 0));
    return multiprocessors() * perSm;
}

int defaultJacobiBlocks() { return std::min(maxResidentJacobiBlocks(), multiprocessors() * kJacobiDefaultBlocksPerSm); }

void loadJacobiKernel() { device::loadKernelNow(jacobiFused); }

}  // namespace haloex::jacobi::fused
