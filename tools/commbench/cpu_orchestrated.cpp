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

#include "haloex/core/error.hpp"
#include "haloex/detail/cuda/blocking_ops.hpp"
#include "haloex/cuda/check.hpp"
#include "haloex/cuda/device_buffer.hpp"
#include "haloex/cuda/ipc_peer_memory.hpp"
#include "haloex/detail/runtime/mpi_check.hpp"
#include "nccl_pair.hpp"

namespace haloex::commbench {
namespace {

using Clock = std::chrono::steady_clock;

class Bench {
public:
    Bench(runtime::MpiWorld& world, const BenchSettings& s)
        : world_(world), s_(s), comm_(world.comm()), rank_(world.rank()), peer_(world.rank() == 0 ? 1 : 0),
          active_(world.rank() < 2) {
        connectIpc();
        source_.resize(s.maxBytes());
        cuda::fillBytesNow(source_.data(), 0x3c, source_.bytes());
        hostSend_.allocate(s.maxBytes());
        hostRecv_.allocate(s.maxBytes());
        std::memset(hostSend_.data(), 0x3c, s.maxBytes());
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

    // The receive buffer, in CUDA IPC peer memory (the library's provider):
    // ranks 0 and 1 copy into each other's. Where IPC cannot work the
    // measurements that need it skip with the reason, and the buffer is
    // plain device memory. Collective.
    void connectIpc() {
        try {
            peerMemory_ = cuda::makeIpcPeerMemory(world_, s_.maxBytes(), "the benchmark's receive buffer");
        } catch (const Error& e) {
            // Every rank finds the same: not all of them on one node.
            if (e.kind() != ErrorKind::InvalidInput) throw;
            ipcWhy_ = e.what();
            plainBuffer_.resize(s_.maxBytes());
            cuda::fillBytesNow(plainBuffer_.data(), 0, plainBuffer_.bytes());
            buffer_ = plainBuffer_.data();
            return;
        }
        buffer_ = static_cast<unsigned char*>(peerMemory_->localBase());
        std::int64_t ok = 1;
        if (active_) {
            try {
                peerBuffer_ = peerMemory_->peerBase(peer_);
            } catch (const Error& e) {
                ipcWhy_ = e.what();
            }
            if (!peerBuffer_) {
                ok = 0;
                if (ipcWhy_.empty()) ipcWhy_ = fmt::format("rank {} has no load/store path to rank {}", rank_, peer_);
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
                        HALOEX_MPI_CHECK(MPI_Recv(&token, 1, MPI_CHAR, peer_, 7200, comm_, MPI_STATUS_IGNORE));
                    HALOEX_CUDA_CHECK(cudaMemcpyAsync(peerBuffer_, source_.data(), bytes, cudaMemcpyDefault, stream_));
                    HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream_));
                    HALOEX_MPI_CHECK(MPI_Send(&token, 1, MPI_CHAR, peer_, 7200, comm_));
                    if (rank_ == 0)
                        HALOEX_MPI_CHECK(MPI_Recv(&token, 1, MPI_CHAR, peer_, 7200, comm_, MPI_STATUS_IGNORE));
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
                        HALOEX_MPI_CHECK(MPI_Send(hostSend_.data(), count, MPI_BYTE, peer_, 7300, comm_));
                        HALOEX_MPI_CHECK(
                            MPI_Recv(hostRecv_.data(), count, MPI_BYTE, peer_, 7300, comm_, MPI_STATUS_IGNORE));
                    } else {
                        HALOEX_MPI_CHECK(
                            MPI_Recv(hostRecv_.data(), count, MPI_BYTE, peer_, 7300, comm_, MPI_STATUS_IGNORE));
                        HALOEX_MPI_CHECK(MPI_Send(hostSend_.data(), count, MPI_BYTE, peer_, 7300, comm_));
                    }
                }
            });
            return us / (2.0 * iters);
        });
        return m;
    }

    // Empty when NCCL is set up; otherwise why not. Collective.
    std::string setUpNccl() {
        std::string why;
        nccl_ = connectNccl(world_, why);
        return why;
    }

    Measurement ncclPingPong(std::size_t bytes, const std::string& why) {
        const int iters = s_.latencyIterations;
        Measurement m = make("nccl_pingpong", "send/recv+sync", bytes, "us", "half round trip", iters);
        if (!why.empty()) {
            m.skipped = why;
            return m;
        }
        collectSamples(m, active_, [&] {
            const double us = timed([&] {
                for (int i = 0; i < iters; ++i) {
                    if (rank_ == 0) {
                        nccl_->send(source_.data(), bytes, peer_, stream_);
                        nccl_->recv(buffer_, bytes, peer_, stream_);
                    } else {
                        nccl_->recv(buffer_, bytes, peer_, stream_);
                        nccl_->send(source_.data(), bytes, peer_, stream_);
                    }
                    HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream_));
                }
            });
            return us / (2.0 * iters);
        });
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
        collectSamples(m, active_, [&] {
            const double us = timed([&] {
                for (int i = 0; i < iters; ++i) {
                    if (rank_ == 0) {
                        nccl_->send(source_.data(), bytes, peer_, stream_);
                    } else {
                        nccl_->recv(buffer_, bytes, peer_, stream_);
                    }
                }
                HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream_));
                // Both ends done: the receiver's completion ends the transfer.
                HALOEX_MPI_CHECK(MPI_Sendrecv(MPI_BOTTOM, 0, MPI_BYTE, peer_, 7400, MPI_BOTTOM, 0, MPI_BYTE, peer_,
                                              7400, comm_, MPI_STATUS_IGNORE));
            });
            return static_cast<double>(bytes) * iters / (us * 1e-6) / 1e9;
        });
        return m;
    }

    runtime::MpiWorld& world_;
    BenchSettings s_;
    MPI_Comm comm_;
    int rank_, peer_;
    bool active_;
    // The receive buffer: CUDA IPC peer memory, or plain device memory where IPC cannot work.
    std::unique_ptr<transport::PeerMemory> peerMemory_;
    cuda::DeviceBuffer<unsigned char> plainBuffer_;
    unsigned char* buffer_ = nullptr;
    cuda::DeviceBuffer<unsigned char> source_;
    cuda::PinnedBuffer<unsigned char> hostSend_, hostRecv_;
    void* peerBuffer_ = nullptr;  // the peer's receive buffer, mapped here
    bool ipcOk_ = false;
    std::string ipcWhy_;
    cuda::Stream stream_;
    std::unique_ptr<NcclPair> nccl_;
};

}  // namespace

std::vector<Measurement> runCpuOrchestrated(runtime::MpiWorld& world, const BenchSettings& settings) {
    Bench bench(world, settings);
    return bench.run();
}

}  // namespace haloex::commbench
