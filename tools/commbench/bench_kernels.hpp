#pragma once
// Kernels of haloex-commbench's GPU-initiated measurements (bench_kernels.cu).
// Launchers return at once; launch errors throw. Ping-pongs run on both PEs
// (initiator and responder); every wait has a time limit and, on expiry,
// leaves its diagnostic in `wait` (see src/transport/fused/wait_diagnostics.hpp).
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "wait_diagnostics.hpp"

namespace haloex::commbench {

enum class Scope : int { Thread = 0, Warp = 1, Block = 2 };
const char* toString(Scope s);
int threadsOf(Scope s);  // 1, 32, 256

struct WaitSetup {
    nvshmem_detail::WaitDiagnostics* diagnostics = nullptr;  // mapped host memory (device pointer)
    int* abortFlag = nullptr;                                // device
    std::uint64_t timeoutNs = 0;
    int myPe = 0;
};

struct PingPongArgs {
    void* data = nullptr;                 // symmetric buffer (put destination = the same address on the peer)
    const void* source = nullptr;         // local source
    void* peerData = nullptr;             // nvshmem_ptr(data, peer): direct and TMA variants
    std::uint64_t* signal = nullptr;      // symmetric, this PE's copy
    std::uint64_t* peerSignal = nullptr;  // nvshmem_ptr(signal, peer)
    std::size_t bytes = 0;
    int peer = 0;
    int iterations = 0;
    int initiator = 0;                        // 1 on the PE that starts (and times) the exchange
    unsigned long long* elapsedNs = nullptr;  // device [1], written by the initiator
    WaitSetup wait;
};

// put + quiet, `iterations` times (initiator only): the put latency.
void launchPutLatency(const PingPongArgs& a, Scope scope, cudaStream_t stream);
// Ping-pong with put-with-signal (both PEs).
void launchPutSignalPingPong(const PingPongArgs& a, Scope scope, cudaStream_t stream);
// Ping-pong with plain stores through peerData and a system-scope release
// store of the flag (one block, both PEs).
void launchDirectStorePingPong(const PingPongArgs& a, Scope scope, cudaStream_t stream);
// Ping-pong with a TMA bulk store (cp.async.bulk) from shared memory to
// peerData, then the flag (one block, both PEs). bytes: multiple of 16, at
// most kTmaMaxBytes.
inline constexpr std::size_t kTmaMaxBytes = 16384;
void launchTmaPingPong(const PingPongArgs& a, cudaStream_t stream);

struct BandwidthArgs {
    void* dest = nullptr;  // symmetric (put) or peer pointer (stores)
    const void* source = nullptr;
    std::size_t bytes = 0;  // per iteration
    int peer = 0;
    int iterations = 0;
    int blocks = 1;
};
// Every block puts its share with putmem_nbi_block each iteration; quiet at the end.
void launchPutBandwidth(const BandwidthArgs& a, cudaStream_t stream);
// Every block stores its share through the peer pointer (16-byte stores where aligned).
void launchStoreBandwidth(const BandwidthArgs& a, cudaStream_t stream);

struct MessageRateArgs {
    void* dest = nullptr;  // symmetric, at least slots * 8 bytes
    const void* source = nullptr;
    int slots = 0;
    int peer = 0;
    int iterations = 0;
    int batch = 1;  // puts between two quiets
    int blocks = 1;
    int warpsPerBlock = 1;
};
// Every thread puts 8-byte messages (putmem_nbi), a quiet after every `batch`;
// put b of a batch goes to word (b * threads + thread) mod slots, so the
// store pattern (a warp's words adjacent) is the same for every batch size.
void launchMessageRate(const MessageRateArgs& a, cudaStream_t stream);

int multiprocessors();

}  // namespace haloex::commbench
