// Host side of the GPU-initiated measurements: symmetric buffers, one launch
// per sample on each of the two PEs, time-limited waits checked after every
// sample.
#include "gpu_initiated.hpp"

#include <nvshmem.h>
#include <nvshmemx.h>

#include <algorithm>
#include <exception>
#include <fmt/format.h>
#include <functional>

#include "bench_kernels.hpp"
#include "haloex/detail/cuda/blocking_ops.hpp"
#include "haloex/core/error.hpp"
#include "haloex/cuda/check.hpp"
#include "haloex/cuda/device_buffer.hpp"

namespace haloex::commbench {
namespace {

// nvshmem_malloc'd bytes; allocating and freeing are collective.
class Symmetric {
public:
    explicit Symmetric(std::size_t bytes) : ptr_(nvshmem_malloc(bytes)) {
        if (!ptr_) {
            throwError(ErrorKind::Nvshmem,
                       fmt::format("nvshmem_malloc of {} bytes failed: raise NVSHMEM_SYMMETRIC_SIZE "
                                   "(e.g. 1G) or pass a smaller --max-bytes",
                                   bytes));
        }
        cuda::fillBytesNow(ptr_, 0, bytes);
    }
    Symmetric(const Symmetric&) = delete;
    Symmetric& operator=(const Symmetric&) = delete;
    ~Symmetric() {
        if (std::uncaught_exceptions() == 0) nvshmem_free(ptr_);
    }
    template <class T = void>
    T* get() const {
        return static_cast<T*>(ptr_);
    }

private:
    void* ptr_;
};

class Bench {
public:
    Bench(runtime::World& world, const BenchSettings& settings)
        : world_(world), s_(settings), rank_(world.rank()), peer_(world.rank() == 0 ? 1 : 0),
          data_(settings.maxBytes()), signal_(64), messages_(kMessageSlots * 8) {
        source_.resize(settings.maxBytes());
        cuda::fillBytesNow(source_.data(), 0x5a, source_.bytes());
        elapsed_.resize(1);
        diagnostics_.allocate(1, cudaHostAllocMapped);
        *diagnostics_.data() = nvshmem_detail::WaitDiagnostics{};
        HALOEX_CUDA_CHECK(
            cudaHostGetDevicePointer(reinterpret_cast<void**>(&diagnosticsDevice_), diagnostics_.data(), 0));
        abortFlag_.resize(1);
        cuda::fillBytesNow(abortFlag_.data(), 0, sizeof(int));
        active_ = rank_ < 2;
        if (active_) {
            peerData_ = nvshmem_ptr(data_.get(), peer_);
            peerSignal_ = static_cast<std::uint64_t*>(nvshmem_ptr(signal_.get(), peer_));
        }
        HALOEX_CUDA_CHECK(cudaDeviceSynchronize());
        nvshmem_barrier_all();
    }
    ~Bench() {
        if (std::uncaught_exceptions() == 0) {
            cudaDeviceSynchronize();
            nvshmem_barrier_all();
        }
    }

    std::vector<Measurement> run() {
        std::vector<Measurement> out;
        for (std::size_t bytes : s_.latencySizes) {
            for (Scope scope : {Scope::Thread, Scope::Warp, Scope::Block}) out.push_back(putLatency(scope, bytes));
        }
        for (std::size_t bytes : s_.latencySizes) {
            for (Scope scope : {Scope::Thread, Scope::Warp, Scope::Block})
                out.push_back(putSignalPingPong(scope, bytes));
        }
        for (std::size_t bytes : s_.latencySizes) {
            for (Scope scope : {Scope::Thread, Scope::Warp, Scope::Block}) out.push_back(directPingPong(scope, bytes));
        }
        for (std::size_t bytes : s_.latencySizes) {
            if (bytes % 16 == 0 && bytes <= kTmaMaxBytes) out.push_back(tmaPingPong(bytes));
        }
        if (kTmaMaxBytes % 16 == 0) out.push_back(tmaPingPong(kTmaMaxBytes));
        for (std::size_t bytes : s_.bandwidthSizes) out.push_back(bandwidth(false, bytes));
        for (std::size_t bytes : s_.bandwidthSizes) out.push_back(bandwidth(true, bytes));
        for (int batch : s_.messageRateBatches) {
            for (int warps : s_.messageRateWarps) out.push_back(messageRate(warps, batch));
        }
        return out;
    }

private:
    static constexpr int kMessageSlots = 1 << 17;

    Measurement make(const char* benchmark, std::string variant, std::size_t bytes, const char* unit,
                     const char* metric, int iterations) const {
        return newMeasurement("gpu", benchmark, std::move(variant), bytes, unit, metric, iterations);
    }

    PingPongArgs pingPongArgs(std::size_t bytes, int iterations) {
        PingPongArgs a;
        a.data = data_.get();
        a.source = source_.data();
        a.peerData = peerData_;
        a.signal = signal_.get<std::uint64_t>();
        a.peerSignal = peerSignal_;
        a.bytes = bytes;
        a.peer = peer_;
        a.iterations = iterations;
        a.initiator = rank_ == 0;
        a.elapsedNs = elapsed_.data();
        a.wait = WaitSetup{diagnosticsDevice_, abortFlag_.data(),
                           static_cast<std::uint64_t>(s_.waitTimeoutSeconds * 1e9), rank_};
        return a;
    }

    // Throws with the diagnostic of a timed-out wait on this rank.
    void checkWaits(const char* what) const {
        const auto& d = *diagnostics_.data();
        if (!*reinterpret_cast<const volatile int*>(&d.ready)) return;
        throwError(ErrorKind::Timeout,
                   fmt::format("rank {}: the {} kernel waited {:.3f} s for the ping-pong signal of round trip {} from "
                               "rank {}: expected >= {}, seen {}. The peer stopped or is slower than --wait-timeout",
                               d.rank, what, d.waitedNs * 1e-9, d.pulse, d.peer, d.expected, d.seen));
    }

    // One sample on both PEs: fresh signals, both ranks ready, launch, wait.
    // Returns the initiator's elapsed nanoseconds (rank 0; 0 elsewhere).
    double sample(const char* what, bool bothPes, const std::function<void()>& launch) {
        cuda::fillBytesNow(signal_.get(), 0, 64);
        cuda::fillBytesNow(elapsed_.data(), 0, sizeof(unsigned long long));
        HALOEX_CUDA_CHECK(cudaDeviceSynchronize());
        world_.barrier();
        if (rank_ == 0 || (bothPes && active_)) launch();
        const cudaError_t st = cudaStreamSynchronize(stream_);
        checkWaits(what);
        HALOEX_CUDA_CHECK(st);
        world_.barrier();
        unsigned long long ns = 0;
        HALOEX_CUDA_CHECK(cudaMemcpy(&ns, elapsed_.data(), sizeof ns, cudaMemcpyDeviceToHost));
        return static_cast<double>(ns);
    }

    Measurement putLatency(Scope scope, std::size_t bytes) {
        const int iters = s_.latencyIterations;
        Measurement m = make("put_latency", toString(scope), bytes, "us", "put_nbi + quiet", iters);
        for (int r = 0; r < s_.repetitions; ++r) {
            const double ns =
                sample("put latency", false, [&] { launchPutLatency(pingPongArgs(bytes, iters), scope, stream_); });
            if (rank_ == 0) m.samples.push_back(ns * 1e-3 / iters);
        }
        return m;
    }

    Measurement putSignalPingPong(Scope scope, std::size_t bytes) {
        const int iters = s_.latencyIterations;
        Measurement m = make("put_signal_pingpong", toString(scope), bytes, "us", "half round trip", iters);
        for (int r = 0; r < s_.repetitions; ++r) {
            const double ns = sample("put-with-signal ping-pong", true,
                                     [&] { launchPutSignalPingPong(pingPongArgs(bytes, iters), scope, stream_); });
            if (rank_ == 0) m.samples.push_back(ns * 1e-3 / (2.0 * iters));
        }
        return m;
    }

    bool peerReachable() {
        const std::int64_t reachable = peerData_ && peerSignal_ ? 1 : 0;
        return world_.allReduceValue<std::int64_t>(active_ ? reachable : 1, runtime::ReduceOp::Min) == 1;
    }

    Measurement directPingPong(Scope scope, std::size_t bytes) {
        const int iters = s_.latencyIterations;
        Measurement m = make("direct_store_flag", toString(scope), bytes, "us", "half round trip", iters);
        if (!peerReachable()) {
            m.skipped = "nvshmem_ptr() is null: no load/store path between ranks 0 and 1 (NVLink/P2P)";
            return m;
        }
        for (int r = 0; r < s_.repetitions; ++r) {
            const double ns = sample("direct-store ping-pong", true,
                                     [&] { launchDirectStorePingPong(pingPongArgs(bytes, iters), scope, stream_); });
            if (rank_ == 0) m.samples.push_back(ns * 1e-3 / (2.0 * iters));
        }
        return m;
    }

    Measurement tmaPingPong(std::size_t bytes) {
        const int iters = s_.latencyIterations;
        Measurement m = make("tma_store_flag", "block", bytes, "us", "half round trip", iters);
        if (!peerReachable()) {
            m.skipped = "nvshmem_ptr() is null: no load/store path between ranks 0 and 1 (NVLink/P2P)";
            return m;
        }
        for (int r = 0; r < s_.repetitions; ++r) {
            const double ns =
                sample("TMA ping-pong", true, [&] { launchTmaPingPong(pingPongArgs(bytes, iters), stream_); });
            if (rank_ == 0) m.samples.push_back(ns * 1e-3 / (2.0 * iters));
        }
        return m;
    }

    // Rank 0 writes into rank 1's buffer; cudaEvent timing on rank 0.
    Measurement bandwidth(bool stores, std::size_t bytes) {
        const int iters = s_.bandwidthIterations(bytes);
        Measurement m = make(stores ? "store_bandwidth" : "put_bandwidth", stores ? "grid stores" : "putmem_nbi_block",
                             bytes, "GB/s", "one direction", iters);
        if (stores && !peerReachable()) {
            m.skipped = "nvshmem_ptr() is null: no load/store path between ranks 0 and 1 (NVLink/P2P)";
            return m;
        }
        BandwidthArgs a;
        a.dest = stores ? peerData_ : data_.get();
        a.source = source_.data();
        a.bytes = bytes;
        a.peer = peer_;
        a.iterations = iters;
        a.blocks = static_cast<int>(
            std::clamp<std::size_t>(bytes / (64 * 1024), 1, 2 * static_cast<std::size_t>(multiprocessors())));
        m.variant += fmt::format(" x{}", a.blocks);
        cuda::Event start(true), stop(true);
        for (int r = 0; r < s_.repetitions; ++r) {
            sample(stores ? "store bandwidth" : "put bandwidth", false, [&] {
                start.record(stream_);
                stores ? launchStoreBandwidth(a, stream_) : launchPutBandwidth(a, stream_);
                stop.record(stream_);
            });
            if (rank_ == 0) {
                float ms = 0;
                HALOEX_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
                m.samples.push_back(static_cast<double>(bytes) * iters / (ms * 1e-3) / 1e9);
            }
        }
        return m;
    }

    Measurement messageRate(int warps, int batch) {
        MessageRateArgs a;
        a.dest = messages_.get();
        a.source = source_.data();
        a.slots = kMessageSlots;
        a.peer = peer_;
        a.iterations = s_.messageRateIterations;
        a.batch = batch;
        a.blocks = multiprocessors();
        a.warpsPerBlock = warps;
        Measurement m =
            make("message_rate", fmt::format("{}x{}w batch {}", a.blocks, warps, batch), 8, "Mmsg/s",
                 "8-byte putmem_nbi, a warp's puts to adjacent words, one quiet per batch of puts", a.iterations);
        cuda::Event start(true), stop(true);
        for (int r = 0; r < s_.repetitions; ++r) {
            sample("message rate", false, [&] {
                start.record(stream_);
                launchMessageRate(a, stream_);
                stop.record(stream_);
            });
            if (rank_ == 0) {
                float ms = 0;
                HALOEX_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
                const double messages = static_cast<double>(a.blocks) * warps * 32 * a.iterations * batch;
                m.samples.push_back(messages / (ms * 1e-3) / 1e6);
            }
        }
        return m;
    }

    runtime::World& world_;
    BenchSettings s_;
    int rank_, peer_;
    bool active_ = false;
    Symmetric data_, signal_, messages_;
    cuda::DeviceBuffer<unsigned char> source_;
    cuda::DeviceBuffer<unsigned long long> elapsed_;
    cuda::PinnedBuffer<nvshmem_detail::WaitDiagnostics> diagnostics_;
    nvshmem_detail::WaitDiagnostics* diagnosticsDevice_ = nullptr;
    cuda::DeviceBuffer<int> abortFlag_;
    void* peerData_ = nullptr;
    std::uint64_t* peerSignal_ = nullptr;
    cuda::Stream stream_;
};

}  // namespace

std::vector<Measurement> runGpuInitiated(runtime::World& world, const BenchSettings& settings) {
    Bench bench(world, settings);
    return bench.run();
}

}  // namespace haloex::commbench
