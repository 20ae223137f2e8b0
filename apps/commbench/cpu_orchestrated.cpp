// The CPU-orchestrated equivalents: what the staged, ipc and nccl transports
// do per message, measured alone.
#include "cpu_orchestrated.hpp"

#include <cuda_runtime.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <fmt/format.h>
#include <vector>

#include "haloex/cuda/blocking_ops.hpp"
#include "haloex/core/error.hpp"
#include "haloex/cuda/check.hpp"
#include "haloex/cuda/device_buffer.hpp"
#include "haloex/cuda/device_select.hpp"

#if HALOEX_COMMBENCH_WITH_NCCL
#include <nccl.h>
#endif

namespace haloex::commbench {
namespace {

using Clock = std::chrono::steady_clock;

void checkMpi(int code, const char* call) {
    if (code != MPI_SUCCESS) throwError(ErrorKind::Runtime, fmt::format("{} failed (MPI error {})", call, code));
}

#if HALOEX_COMMBENCH_WITH_NCCL
void checkNccl(ncclResult_t status, const char* call) {
    if (status != ncclSuccess) {
        throwError(ErrorKind::Nccl,
                   fmt::format("{} failed: {} (rerun with NCCL_DEBUG=WARN)", call, ncclGetErrorString(status)));
    }
}
#endif

class Bench {
public:
    Bench(runtime::MpiWorld& world, const BenchSettings& s)
        : world_(world), s_(s), comm_(world.comm()), rank_(world.rank()), peer_(world.rank() == 0 ? 1 : 0),
          active_(world.rank() < 2) {
        buffer_.resize(s.maxBytes());
        source_.resize(s.maxBytes());
        cuda::fillBytesNow(buffer_.data(), 0, buffer_.bytes());
        cuda::fillBytesNow(source_.data(), 0x3c, source_.bytes());
        hostSend_.allocate(s.maxBytes());
        hostRecv_.allocate(s.maxBytes());
        std::memset(hostSend_.data(), 0x3c, s.maxBytes());
        connectIpc();
    }
    ~Bench() {
        if (peerBuffer_ && peerOpened_) cudaIpcCloseMemHandle(peerBuffer_);
#if HALOEX_COMMBENCH_WITH_NCCL
        if (nccl_) ncclCommDestroy(nccl_);
#endif
        if (std::uncaught_exceptions() == 0) world_.barrier();  // the peer unmapped our buffer
    }

    std::vector<Measurement> run() {
        std::vector<Measurement> out;
        for (std::size_t bytes : s_.latencySizes) out.push_back(memcpyEvent(bytes));
        for (std::size_t bytes : s_.latencySizes) out.push_back(memcpyPingPong(bytes));
        std::vector<std::size_t> mpiSizes = s_.latencySizes;
        for (std::size_t b : {std::size_t{65536}, std::size_t{1} << 20}) {
            if (b <= s_.maxBytes() && std::find(mpiSizes.begin(), mpiSizes.end(), b) == mpiSizes.end()) {
                mpiSizes.push_back(b);
            }
        }
        for (std::size_t bytes : mpiSizes) out.push_back(mpiPingPong(bytes));
        const std::string ncclWhy = setUpNccl();
        for (std::size_t bytes : mpiSizes) out.push_back(ncclPingPong(bytes, ncclWhy));
        for (std::size_t bytes : s_.bandwidthSizes) out.push_back(memcpyBandwidth(bytes));
        for (std::size_t bytes : s_.bandwidthSizes) out.push_back(ncclBandwidth(bytes, ncclWhy));
        return out;
    }

private:
    Measurement make(const char* benchmark, const char* variant, std::size_t bytes, const char* unit,
                     const char* metric, int iterations) const {
        return newMeasurement("cpu", benchmark, variant, bytes, unit, metric, iterations);
    }

    // Ranks 0 and 1 map each other's device buffer (CUDA IPC).
    void connectIpc() {
        struct Export {
            cudaIpcMemHandle_t handle{};
            std::int32_t ok = 0;
        } mine, theirs;
        if (active_ && cudaIpcGetMemHandle(&mine.handle, buffer_.data()) == cudaSuccess) mine.ok = 1;
        cudaGetLastError();
        world_.sendRecvBytes(active_ ? std::as_bytes(std::span(&mine, 1)) : std::span<const std::byte>{},
                             active_ ? peer_ : -1,
                             active_ ? std::as_writable_bytes(std::span(&theirs, 1)) : std::span<std::byte>{},
                             active_ ? peer_ : -1, 7100);
        std::int64_t ok = 1;
        if (active_) {
            if (!theirs.ok) {
                ok = 0;
                ipcWhy_ = fmt::format("rank {} could not export its buffer through CUDA IPC", peer_);
            } else {
                const cudaError_t st =
                    cudaIpcOpenMemHandle(&peerBuffer_, theirs.handle, cudaIpcMemLazyEnablePeerAccess);
                if (st != cudaSuccess) {
                    cudaGetLastError();
                    ok = 0;
                    ipcWhy_ = fmt::format("cudaIpcOpenMemHandle failed on rank {}: {}", rank_, cudaGetErrorString(st));
                    peerBuffer_ = nullptr;
                } else {
                    peerOpened_ = true;
                }
            }
        }
        ipcOk_ = world_.allReduceValue(ok, runtime::ReduceOp::Min) == 1;
        if (!ipcOk_ && ipcWhy_.empty()) ipcWhy_ = "CUDA IPC failed on the other rank of the pair";
    }

    template <class F>
    double timed(F&& f) {
        const auto t0 = Clock::now();
        f();
        return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    }

    // s_.repetitions samples: the ranks start each one together (barrier),
    // those that take part run `once`, rank 0 keeps what it returns.
    template <class F>
    void collectSamples(Measurement& m, bool takesPart, F&& once) {
        for (int r = 0; r < s_.repetitions; ++r) {
            world_.barrier();
            if (!takesPart) continue;
            const double value = once();
            if (rank_ == 0) m.samples.push_back(value);
        }
        world_.barrier();
    }

    // Copy into the peer's buffer and wait for it on the host (what a
    // CPU-orchestrated transport does before it may tell the peer).
    Measurement memcpyEvent(std::size_t bytes) {
        const int iters = s_.latencyIterations;
        Measurement m = make("memcpy_peer_event", "cudaMemcpyAsync", bytes, "us", "copy + event sync", iters);
        if (!ipcOk_) {
            m.skipped = ipcWhy_;
            return m;
        }
        cuda::Event done;
        collectSamples(m, rank_ == 0, [&] {
            const double us = timed([&] {
                for (int i = 0; i < iters; ++i) {
                    HALOEX_CUDA_CHECK(cudaMemcpyAsync(peerBuffer_, source_.data(), bytes, cudaMemcpyDefault, stream_));
                    done.record(stream_);
                    HALOEX_CUDA_CHECK(cudaEventSynchronize(done));
                }
            });
            return us / iters;
        });
        return m;
    }

    // The ipc transport's hand-off: copy, sync, MPI message; the peer answers in kind.
    Measurement memcpyPingPong(std::size_t bytes) {
        const int iters = s_.latencyIterations;
        Measurement m = make("memcpy_peer_pingpong", "copy+sync+MPI", bytes, "us", "half round trip", iters);
        if (!ipcOk_) {
            m.skipped = ipcWhy_;
            return m;
        }
        char token = 0;
        collectSamples(m, active_, [&] {
            const double us = timed([&] {
                for (int i = 0; i < iters; ++i) {
                    if (rank_ == 1)
                        checkMpi(MPI_Recv(&token, 1, MPI_CHAR, peer_, 7200, comm_, MPI_STATUS_IGNORE), "MPI_Recv");
                    HALOEX_CUDA_CHECK(cudaMemcpyAsync(peerBuffer_, source_.data(), bytes, cudaMemcpyDefault, stream_));
                    HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream_));
                    checkMpi(MPI_Send(&token, 1, MPI_CHAR, peer_, 7200, comm_), "MPI_Send");
                    if (rank_ == 0)
                        checkMpi(MPI_Recv(&token, 1, MPI_CHAR, peer_, 7200, comm_, MPI_STATUS_IGNORE), "MPI_Recv");
                }
            });
            return us / (2.0 * iters);
        });
        return m;
    }

    Measurement mpiPingPong(std::size_t bytes) {
        const int iters = s_.latencyIterations;
        Measurement m = make("mpi_pingpong", "host buffers", bytes, "us", "half round trip", iters);
        const int count = static_cast<int>(bytes);
        collectSamples(m, active_, [&] {
            const double us = timed([&] {
                for (int i = 0; i < iters; ++i) {
                    if (rank_ == 0) {
                        checkMpi(MPI_Send(hostSend_.data(), count, MPI_BYTE, peer_, 7300, comm_), "MPI_Send");
                        checkMpi(MPI_Recv(hostRecv_.data(), count, MPI_BYTE, peer_, 7300, comm_, MPI_STATUS_IGNORE),
                                 "MPI_Recv");
                    } else {
                        checkMpi(MPI_Recv(hostRecv_.data(), count, MPI_BYTE, peer_, 7300, comm_, MPI_STATUS_IGNORE),
                                 "MPI_Recv");
                        checkMpi(MPI_Send(hostSend_.data(), count, MPI_BYTE, peer_, 7300, comm_), "MPI_Send");
                    }
                }
            });
            return us / (2.0 * iters);
        });
        return m;
    }

    // Empty when NCCL is set up; otherwise why not. Collective.
    std::string setUpNccl() {
#if HALOEX_COMMBENCH_WITH_NCCL
        const auto gpus = cuda::gatherGpuIdentities(world_);
        if (const auto shared = cuda::findSharedGpu(gpus)) {
            return fmt::format("NCCL refuses two ranks on one GPU (ranks {} and {} share {}); run one rank per GPU",
                               shared->first, shared->second, gpus[static_cast<std::size_t>(shared->first)].busId);
        }
        ncclUniqueId id{};
        if (rank_ == 0) checkNccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
        world_.broadcastBytes(std::as_writable_bytes(std::span(&id, 1)), 0);
        checkNccl(ncclCommInitRank(&nccl_, world_.size(), id, rank_), "ncclCommInitRank");
        return {};
#else
        return "this build has no NCCL (" HALOEX_COMMBENCH_NCCL_REASON ")";
#endif
    }

    Measurement ncclPingPong(std::size_t bytes, const std::string& why) {
        const int iters = s_.latencyIterations;
        Measurement m = make("nccl_pingpong", "send/recv+sync", bytes, "us", "half round trip", iters);
        if (!why.empty()) {
            m.skipped = why;
            return m;
        }
#if HALOEX_COMMBENCH_WITH_NCCL
        collectSamples(m, active_, [&] {
            const double us = timed([&] {
                for (int i = 0; i < iters; ++i) {
                    if (rank_ == 0) {
                        checkNccl(ncclSend(source_.data(), bytes, ncclChar, peer_, nccl_, stream_), "ncclSend");
                        checkNccl(ncclRecv(buffer_.data(), bytes, ncclChar, peer_, nccl_, stream_), "ncclRecv");
                    } else {
                        checkNccl(ncclRecv(buffer_.data(), bytes, ncclChar, peer_, nccl_, stream_), "ncclRecv");
                        checkNccl(ncclSend(source_.data(), bytes, ncclChar, peer_, nccl_, stream_), "ncclSend");
                    }
                    HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream_));
                }
            });
            return us / (2.0 * iters);
        });
#endif
        return m;
    }

    Measurement memcpyBandwidth(std::size_t bytes) {
        const int iters = s_.bandwidthIterations(bytes);
        Measurement m = make("memcpy_peer_bandwidth", "cudaMemcpyAsync", bytes, "GB/s", "one direction", iters);
        if (!ipcOk_) {
            m.skipped = ipcWhy_;
            return m;
        }
        cuda::Event start(true), stop(true);
        collectSamples(m, rank_ == 0, [&] {
            start.record(stream_);
            for (int i = 0; i < iters; ++i) {
                HALOEX_CUDA_CHECK(cudaMemcpyAsync(peerBuffer_, source_.data(), bytes, cudaMemcpyDefault, stream_));
            }
            stop.record(stream_);
            HALOEX_CUDA_CHECK(cudaEventSynchronize(stop));
            float ms = 0;
            HALOEX_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
            return static_cast<double>(bytes) * iters / (ms * 1e-3) / 1e9;
        });
        return m;
    }

    Measurement ncclBandwidth(std::size_t bytes, const std::string& why) {
        const int iters = s_.bandwidthIterations(bytes);
        Measurement m = make("nccl_bandwidth", "send/recv", bytes, "GB/s", "one direction", iters);
        if (!why.empty()) {
            m.skipped = why;
            return m;
        }
#if HALOEX_COMMBENCH_WITH_NCCL
        collectSamples(m, active_, [&] {
            const double us = timed([&] {
                for (int i = 0; i < iters; ++i) {
                    if (rank_ == 0) {
                        checkNccl(ncclSend(source_.data(), bytes, ncclChar, peer_, nccl_, stream_), "ncclSend");
                    } else {
                        checkNccl(ncclRecv(buffer_.data(), bytes, ncclChar, peer_, nccl_, stream_), "ncclRecv");
                    }
                }
                HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream_));
                // Both ends done: the receiver's completion ends the transfer.
                checkMpi(MPI_Sendrecv(MPI_BOTTOM, 0, MPI_BYTE, peer_, 7400, MPI_BOTTOM, 0, MPI_BYTE, peer_, 7400, comm_,
                                      MPI_STATUS_IGNORE),
                         "MPI_Sendrecv");
            });
            return static_cast<double>(bytes) * iters / (us * 1e-6) / 1e9;
        });
#endif
        return m;
    }

    runtime::MpiWorld& world_;
    BenchSettings s_;
    MPI_Comm comm_;
    int rank_, peer_;
    bool active_;
    cuda::DeviceBuffer<unsigned char> buffer_, source_;
    cuda::PinnedBuffer<unsigned char> hostSend_, hostRecv_;
    void* peerBuffer_ = nullptr;
    bool peerOpened_ = false;
    bool ipcOk_ = false;
    std::string ipcWhy_;
    cuda::Stream stream_;
#if HALOEX_COMMBENCH_WITH_NCCL
    ncclComm_t nccl_ = nullptr;
#endif
};

}  // namespace

std::vector<Measurement> runCpuOrchestrated(runtime::MpiWorld& world, const BenchSettings& settings) {
    Bench bench(world, settings);
    return bench.run();
}

}  // namespace haloex::commbench
