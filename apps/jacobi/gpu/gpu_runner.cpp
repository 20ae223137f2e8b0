#include "gpu_runner.hpp"

#include <cuda_runtime.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <map>
#include <memory>

#include "../core/jacobi_cpu.hpp"
#include "haloex/core/error.hpp"
#include "haloex/cuda/check.hpp"
#include "haloex/cuda/device_buffer.hpp"
#include "haloex/cuda/device_select.hpp"
#include "jacobi_kernels.hpp"

#if HALOEX_JACOBI_WITH_NCCL
#include <nccl.h>
#endif
#if HALOEX_JACOBI_WITH_NVSHMEM
#include "haloex/stencil/jacobi_nvshmem.hpp"
#endif

namespace haloex::jacobi::gpu {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

void checkMpi(int code, const char* call) {
    if (code == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(code, text, &length);
    throwError(ErrorKind::Runtime,
               fmt::format("{} failed: {}", call, std::string(text, static_cast<std::size_t>(length))));
}

// Runs `step` on every rank; if it failed anywhere, every rank returns the
// first failing rank's message (so a local failure cannot leave peers waiting
// in a later collective). Collective.
template <class F>
std::string agreeOnFailure(runtime::World& world, F&& step) {
    std::array<char, 512> mine{};
    try {
        step();
    } catch (const std::exception& e) {
        const std::string text = fmt::format("rank {}: {}", world.rank(), e.what());
        std::memcpy(mine.data(), text.data(), std::min(text.size(), mine.size() - 1));
    }
    const auto all = world.allGather(mine);
    for (const auto& m : all) {
        if (m[0] != '\0') return std::string(m.data());
    }
    return {};
}

// ---------------------------------------------------------------------------
// A way to run one Jacobi iteration on this rank's GPU.
class Variant {
public:
    virtual ~Variant() = default;
    virtual double* field(int parity) = 0;
    // Reads field(parity), writes field(1 - parity) with its halo lines; norm
    // (optional, device) receives the sum of squared updates.
    virtual void iterate(int parity, double* norm) = 0;
    // Waits on the host for all queued work; throws on a detected failure.
    virtual void finish() = 0;
    virtual cudaStream_t stream() = 0;  // initialisation and read-back go here
    virtual std::string path() const { return "-"; }
    virtual std::vector<std::string> notes() const { return {}; }
};

// The CPU-orchestrated pattern: boundary lines (packed) on a high-priority
// halo stream, the interior on the compute stream at the same time, the
// transport's exchange and the unpack on the halo stream, and the streams
// joined at the end of the iteration.
class Orchestrated : public Variant {
public:
    explicit Orchestrated(const stencil::LocalStencil& s, int recvCopies = 1)
        : s_(s), halo_(cuda::Stream::highestPriority()) {
        fields_[0].resize(static_cast<std::size_t>(s.numLocal()));
        fields_[1].resize(static_cast<std::size_t>(s.numLocal()));
        HALOEX_ASSERT(s.sends.size() + s.unsentLines.size() <= static_cast<std::size_t>(kMaxBoundaryLines) &&
                          s.receives.size() <= static_cast<std::size_t>(kMaxBoundaryLines),
                      "a 2D stencil has at most four boundary lines");
        for (const auto& m : s.sends) {
            const int l = work_.numLines++;
            work_.lines[l] = m.send;
            work_.packOffset[l] = sendTotal_;
            work_.normBegin[l] = m.normBegin;
            work_.normEnd[l] = m.normEnd;
            sendOffset_.push_back(sendTotal_);
            sendTotal_ += m.send.count;
        }
        for (const auto& u : s.unsentLines) {
            const int l = work_.numLines++;
            work_.lines[l] = u.cells;
            work_.packOffset[l] = -1;
            work_.normBegin[l] = u.normBegin;
            work_.normEnd[l] = u.normEnd;
        }
        planBlocks(work_.lines, work_.numLines, work_.firstBlock);
        for (const auto& r : s.receives) {
            const int l = unpack_.numLines++;
            unpack_.lines[l] = r.recv;
            unpack_.offset[l] = recvTotal_;
            recvOffset_.push_back(recvTotal_);
            recvTotal_ += r.recv.count;
        }
        planBlocks(unpack_.lines, unpack_.numLines, unpack_.firstBlock);
        send_.resize(static_cast<std::size_t>(std::max<std::int64_t>(sendTotal_, 1)));
        recv_.resize(static_cast<std::size_t>(std::max<std::int64_t>(recvTotal_ * recvCopies, 1)));
    }

    double* field(int parity) override { return fields_[parity & 1].data(); }
    cudaStream_t stream() override { return compute_; }

    void iterate(int parity, double* norm) override {
        const double* cur = fields_[parity & 1].data();
        double* next = fields_[1 - (parity & 1)].data();
        // The boundary kernel overwrites cells the previous interior read.
        interiorDone_.waitOn(halo_);
        computeBoundary(work_, cur, next, s_.ax, send_.data(), norm, halo_);
        computeInterior(cur, next, s_.ax, s_.nx, s_.ny, norm, compute_);
        interiorDone_.record(compute_);
        exchange();
        unpackHalo(unpack_, recv_.data() + recvBase(), next, halo_);
        haloDone_.record(halo_);
        haloDone_.waitOn(compute_);
        ++iteration_;
    }

    void finish() override {
        HALOEX_CUDA_CHECK(cudaStreamSynchronize(halo_));
        HALOEX_CUDA_CHECK(cudaStreamSynchronize(compute_));
    }

protected:
    // Enqueue (or perform) the delivery of send_ into the receivers' recv_.
    virtual void exchange() = 0;
    // Offset of this iteration's receive copy in recv_.
    virtual std::int64_t recvBase() const { return 0; }

    stencil::LocalStencil s_;
    cuda::DeviceBuffer<double> fields_[2];
    cuda::DeviceBuffer<double> send_, recv_;
    std::vector<std::int64_t> sendOffset_, recvOffset_;
    std::int64_t sendTotal_ = 0, recvTotal_ = 0;
    BoundaryWork work_;
    UnpackWork unpack_;
    cuda::Stream compute_;
    cuda::Stream halo_;
    cuda::Event interiorDone_, haloDone_;
    std::int64_t iteration_ = 0;
};

// staged: device -> pinned host -> MPI -> pinned host -> device.
class Staged final : public Orchestrated {
public:
    Staged(const stencil::LocalStencil& s, runtime::MpiWorld& world) : Orchestrated(s), comm_(world.comm()) {
        sendHost_.allocate(send_.size());
        recvHost_.allocate(recv_.size());
        requests_.resize(s.sends.size() + s.receives.size());
    }
    std::vector<std::string> notes() const override {
        return {"host-staged: D2H copy, stream sync, MPI_Isend/Irecv of every face, H2D copy (one sync per "
                "iteration)"};
    }

private:
    void exchange() override {
        HALOEX_CUDA_CHECK(cudaMemcpyAsync(sendHost_.data(), send_.data(), sendTotal_ * sizeof(double),
                                          cudaMemcpyDeviceToHost, halo_));
        HALOEX_CUDA_CHECK(cudaStreamSynchronize(halo_));  // MPI cannot wait on a stream
        std::size_t n = 0;
        for (std::size_t r = 0; r < s_.receives.size(); ++r) {
            const auto& rv = s_.receives[r];
            checkMpi(MPI_Irecv(recvHost_.data() + recvOffset_[r], rv.recv.count, MPI_DOUBLE, rv.peer, 4000 + rv.pulse,
                               comm_, &requests_[n++]),
                     "MPI_Irecv");
        }
        for (std::size_t m = 0; m < s_.sends.size(); ++m) {
            const auto& msg = s_.sends[m];
            checkMpi(MPI_Isend(sendHost_.data() + sendOffset_[m], msg.send.count, MPI_DOUBLE, msg.peer,
                               4000 + msg.pulse, comm_, &requests_[n++]),
                     "MPI_Isend");
        }
        checkMpi(MPI_Waitall(static_cast<int>(n), requests_.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
        HALOEX_CUDA_CHECK(cudaMemcpyAsync(recv_.data(), recvHost_.data(), recvTotal_ * sizeof(double),
                                          cudaMemcpyHostToDevice, halo_));
    }

    MPI_Comm comm_;
    cuda::PinnedBuffer<double> sendHost_, recvHost_;
    std::vector<MPI_Request> requests_;
};

// ipc: peer copies (cudaMemcpyAsync through CUDA IPC mappings) into the
// receivers' slots, one stream sync, then an MPI notification per face. The
// slots are double-buffered by iteration: a rank writes slot (t % 2) of a
// peer only after that peer's notification of t - 1, which it sent after its
// own stream had finished unpacking slot (t % 2) in t - 2 (every face
// neighbour relation is mutual, so that notification always exists).
class Ipc final : public Orchestrated {
public:
    Ipc(const stencil::LocalStencil& s, runtime::MpiWorld& world)
        : Orchestrated(s, /*recvCopies=*/2), world_(world), comm_(world.comm()) {
        if (world.localSize() != world.size()) {
            throwError(ErrorKind::Runtime, "CUDA IPC needs every rank on one node");
        }
        requests_.resize(s.sends.size() + s.receives.size());
        notifications_.resize(s.receives.size());
        peerSlot_.assign(s.sends.size(), nullptr);
    }
    ~Ipc() override {
        for (auto& [rank, base] : opened_) cudaIpcCloseMemHandle(base);
        // Owners free their slots afterwards: no peer may still map them.
        if (std::uncaught_exceptions() == 0) {
            try {
                world_.barrier();
            } catch (...) {
            }
        }
    }

    // Collective: exchanges where every message lands, then maps the peers'
    // slots. Returns the local failure (or empty) so the caller can agree.
    void connect() {
        struct Export {
            cudaIpcMemHandle_t handle{};
            std::int64_t offset = 0;        // the receive's line in the slot array
            std::int64_t parityStride = 0;  // elements between the two copies
            std::int32_t ok = 0;
            std::int32_t pid = 0;
        };
        Export mine;
        mine.pid = static_cast<std::int32_t>(getpid());
        mine.parityStride = recvTotal_;
        std::string localError;
        if (const cudaError_t st = cudaIpcGetMemHandle(&mine.handle, recv_.data()); st == cudaSuccess) {
            mine.ok = 1;
        } else {
            cudaGetLastError();
            localError = fmt::format("cudaIpcGetMemHandle failed: {}", cudaGetErrorString(st));
        }
        std::vector<Export> theirs(s_.sends.size());
        for (int p = 0; p < s_.numPulses; ++p) {
            int r = -1, m = -1;
            for (std::size_t i = 0; i < s_.receives.size(); ++i)
                if (s_.receives[i].pulse == p) r = static_cast<int>(i);
            for (std::size_t i = 0; i < s_.sends.size(); ++i)
                if (s_.sends[i].pulse == p) m = static_cast<int>(i);
            Export out = mine;
            if (r >= 0) out.offset = recvOffset_[static_cast<std::size_t>(r)];
            world_.sendRecvBytes(r >= 0 ? std::as_bytes(std::span(&out, 1)) : std::span<const std::byte>{},
                                 r >= 0 ? s_.receives[static_cast<std::size_t>(r)].peer : -1,
                                 m >= 0 ? std::as_writable_bytes(std::span(&theirs[static_cast<std::size_t>(m)], 1))
                                        : std::span<std::byte>{},
                                 m >= 0 ? s_.sends[static_cast<std::size_t>(m)].peer : -1, 5000 + p);
        }
        if (!localError.empty()) throwError(ErrorKind::Cuda, localError);
        for (std::size_t m = 0; m < s_.sends.size(); ++m) {
            const Export& e = theirs[m];
            const int peer = s_.sends[m].peer;
            if (!e.ok) throwError(ErrorKind::Cuda, fmt::format("rank {} could not export its receive slots", peer));
            double* base = nullptr;
            if (peer == world_.rank()) {
                base = recv_.data();
            } else if (auto it = opened_.find(peer); it != opened_.end()) {
                base = static_cast<double*>(it->second);
            } else {
                void* mapped = nullptr;
                const cudaError_t st = cudaIpcOpenMemHandle(&mapped, e.handle, cudaIpcMemLazyEnablePeerAccess);
                if (st != cudaSuccess) {
                    cudaGetLastError();
                    throwError(ErrorKind::Cuda,
                               fmt::format("cudaIpcOpenMemHandle of rank {}'s slots failed: {} ({}); CUDA IPC needs "
                                           "peer-accessible GPUs on one node (under MPS, IPC between clients needs a "
                                           "recent driver)",
                                           peer, cudaGetErrorName(st), cudaGetErrorString(st)));
                }
                opened_[peer] = mapped;
                base = static_cast<double*>(mapped);
            }
            peerSlot_[m] = base + e.offset;
            peerParityStride_.push_back(e.parityStride);
        }
    }

    std::vector<std::string> notes() const override {
        return {"CUDA IPC: peer cudaMemcpyAsync of every face into double-buffered slots, one stream sync and one "
                "MPI notification per face per iteration"};
    }

private:
    std::int64_t recvBase() const override { return (iteration_ & 1) * recvTotal_; }

    void exchange() override {
        const std::int64_t q = iteration_ & 1;
        for (std::size_t m = 0; m < s_.sends.size(); ++m) {
            HALOEX_CUDA_CHECK(cudaMemcpyAsync(peerSlot_[m] + q * peerParityStride_[m], send_.data() + sendOffset_[m],
                                              static_cast<std::size_t>(s_.sends[m].send.count) * sizeof(double),
                                              cudaMemcpyDeviceToDevice, halo_));
        }
        HALOEX_CUDA_CHECK(cudaStreamSynchronize(halo_));  // the data is in the peers' memory
        std::size_t n = 0;
        for (std::size_t r = 0; r < s_.receives.size(); ++r) {
            checkMpi(MPI_Irecv(&notifications_[r], 1, MPI_INT64_T, s_.receives[r].peer, 6000 + s_.receives[r].pulse,
                               comm_, &requests_[n++]),
                     "MPI_Irecv");
        }
        for (std::size_t m = 0; m < s_.sends.size(); ++m) {
            checkMpi(MPI_Isend(&iteration_, 1, MPI_INT64_T, s_.sends[m].peer, 6000 + s_.sends[m].pulse, comm_,
                               &requests_[n++]),
                     "MPI_Isend");
        }
        checkMpi(MPI_Waitall(static_cast<int>(n), requests_.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
        for (std::size_t r = 0; r < s_.receives.size(); ++r) {
            if (notifications_[r] != iteration_) {
                throwError(ErrorKind::Internal,
                           fmt::format("ipc: rank {} is in iteration {} but rank {} notified iteration {}",
                                       world_.rank(), iteration_, s_.receives[r].peer, notifications_[r]));
            }
        }
    }

    runtime::MpiWorld& world_;
    MPI_Comm comm_;
    std::vector<MPI_Request> requests_;
    std::vector<std::int64_t> notifications_;
    std::vector<double*> peerSlot_;
    std::vector<std::int64_t> peerParityStride_;
    std::map<int, void*> opened_;
};

#if HALOEX_JACOBI_WITH_NCCL
void checkNccl(ncclResult_t status, const char* call) {
    if (status == ncclSuccess) return;
    throwError(ErrorKind::Nccl, fmt::format("{} failed: {}; rerun with NCCL_DEBUG=WARN for NCCL's explanation", call,
                                            ncclGetErrorString(status)));
}

// nccl: the faces as one group of ncclSend/ncclRecv on the halo stream; no
// host synchronisation.
class Nccl final : public Orchestrated {
public:
    Nccl(const stencil::LocalStencil& s, runtime::World& world) : Orchestrated(s) {
        ncclUniqueId id{};
        if (world.rank() == 0) checkNccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
        world.broadcastBytes(std::as_writable_bytes(std::span(&id, 1)), 0);
        checkNccl(ncclCommInitRank(&comm_, world.size(), id, world.rank()), "ncclCommInitRank");
    }
    ~Nccl() override {
        if (comm_) ncclCommDestroy(comm_);
    }
    std::vector<std::string> notes() const override {
        return {"NCCL: one ncclGroupStart/End of ncclSend/ncclRecv per iteration, stream-ordered (no host sync)"};
    }

private:
    void exchange() override {
        checkNccl(ncclGroupStart(), "ncclGroupStart");
        for (std::size_t m = 0; m < s_.sends.size(); ++m) {
            checkNccl(ncclSend(send_.data() + sendOffset_[m], static_cast<std::size_t>(s_.sends[m].send.count),
                               ncclDouble, s_.sends[m].peer, comm_, halo_),
                      "ncclSend");
        }
        for (std::size_t r = 0; r < s_.receives.size(); ++r) {
            checkNccl(ncclRecv(recv_.data() + recvOffset_[r], static_cast<std::size_t>(s_.receives[r].recv.count),
                               ncclDouble, s_.receives[r].peer, comm_, halo_),
                      "ncclRecv");
        }
        checkNccl(ncclGroupEnd(), "ncclGroupEnd");
    }
    ncclComm_t comm_ = nullptr;
};
#endif

#if HALOEX_JACOBI_WITH_NVSHMEM
// nvshmem: one fused kernel per iteration (haloex_nvshmem).
class Nvshmem final : public Variant {
public:
    Nvshmem(const stencil::LocalStencil& s, runtime::World& world, const GpuSettings& settings)
        : stream_(cuda::Stream::highestPriority()) {
        stencil::NvshmemJacobiOptions o;
        o.path = settings.nvshmemPath;
        o.waitTimeoutSeconds = settings.waitTimeoutSeconds;
        o.maxBlocks = settings.maxBlocks;
        o.tileCells = settings.tileCells;
        impl_ = stencil::makeNvshmemJacobi(world, s, o);
    }
    double* field(int parity) override { return impl_->field(parity); }
    void iterate(int parity, double* norm) override { impl_->iterate(parity, norm, stream_.get()); }
    void finish() override {
        const cudaError_t st = cudaStreamSynchronize(stream_);
        impl_->checkForFailure();  // a timeout explains an error better than the error
        HALOEX_CUDA_CHECK(st);
    }
    cudaStream_t stream() override { return stream_; }
    std::string path() const override { return impl_->pathSummary(); }
    std::vector<std::string> notes() const override { return impl_->describe(); }

private:
    cuda::Stream stream_;
    std::unique_ptr<stencil::NvshmemJacobi> impl_;
};
#endif

// ---------------------------------------------------------------------------
// Timed runs from the initial field; the last one's result is kept.
struct Measured {
    std::vector<double> usPerIteration;
    std::vector<double> interior;
    double normSquared = 0.0;
};

void initBoth(Variant& v, const ProblemSpec& spec, const stencil::LocalStencil& s) {
    for (int parity = 0; parity < 2; ++parity) {
        initField(v.field(parity), s.nx, s.ny, s.ax, s.originX, s.originY, spec.nx, spec.ny,
                  spec.boundary == Boundary::Periodic, v.stream());
    }
}

std::vector<double> readInterior(const double* field, const stencil::LocalStencil& s, cudaStream_t stream) {
    std::vector<double> out(static_cast<std::size_t>(s.nx) * s.ny);
    HALOEX_CUDA_CHECK(cudaMemcpy2DAsync(out.data(), static_cast<std::size_t>(s.nx) * sizeof(double),
                                        field + s.index(0, 0), static_cast<std::size_t>(s.ax) * sizeof(double),
                                        static_cast<std::size_t>(s.nx) * sizeof(double), static_cast<std::size_t>(s.ny),
                                        cudaMemcpyDeviceToHost, stream));
    HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
    return out;
}

bool normIteration(const ProblemSpec& spec, int it, int iterations) {
    return it + 1 == iterations || (spec.nccheck > 0 && (it + 1) % spec.nccheck == 0);
}

Measured measure(Variant& v, const ProblemSpec& spec, const stencil::LocalStencil& s, runtime::World& world,
                 const GpuSettings& settings, const std::string& name) {
    // One slot per norm iteration (--nccheck periods and the last iteration).
    cuda::DeviceBuffer<double> norms(static_cast<std::size_t>(spec.niter / std::max(spec.nccheck, 1) + 2));
    int lastSlot = 0;
    auto runOnce = [&](int iterations, bool printNorms) {
        initBoth(v, spec, s);
        norms.zeroAsync(v.stream());
        v.finish();
        world.barrier();  // no peer writes into this rank's fields before they are initialised
        const auto t0 = Clock::now();
        int slot = 0;
        for (int it = 0; it < iterations; ++it) {
            double* norm = nullptr;
            if (normIteration(spec, it, iterations)) {
                lastSlot = slot;
                norm = norms.data() + slot++;
            }
            v.iterate(it & 1, norm);
            if (norm && it + 1 < iterations) {
                // --nccheck: the convergence check of a real solver (host sync + reduction).
                v.finish();
                double local = 0.0;
                HALOEX_CUDA_CHECK(cudaMemcpy(&local, norm, sizeof local, cudaMemcpyDeviceToHost));
                const double total = std::sqrt(world.allReduceValue(local, runtime::ReduceOp::Sum));
                if (printNorms && world.rank() == 0) {
                    fmt::print("  {} iteration {:6d}: norm {:.10e}\n", name, it + 1, total);
                }
            }
        }
        v.finish();
        const double seconds = secondsSince(t0);
        return world.allReduceValue(seconds, runtime::ReduceOp::Max);
    };
    if (settings.warmup > 0) runOnce(settings.warmup, false);
    Measured m;
    for (int rep = 0; rep < settings.repeats; ++rep) {
        const double seconds = runOnce(spec.niter, settings.printNorms && rep == 0);
        m.usPerIteration.push_back(seconds / spec.niter * 1e6);
    }
    m.interior = readInterior(v.field(spec.niter & 1), s, v.stream());
    HALOEX_CUDA_CHECK(cudaMemcpy(&m.normSquared, norms.data() + lastSlot, sizeof(double), cudaMemcpyDeviceToHost));
    return m;
}

RunResult baseResult(const std::string& name, const ProblemSpec& spec, runtime::World& world, const GpuSettings& st) {
    return newRunResult(name, spec, world.size(), st.repeats);
}

// Why NCCL cannot run here (two ranks on one GPU), or empty. Collective.
std::string ncclSharedGpuReason(runtime::World& world) {
    const auto gpus = cuda::gatherGpuIdentities(world);
    if (const auto shared = cuda::findSharedGpu(gpus)) {
        const auto& gpu = gpus[static_cast<std::size_t>(shared->first)];
        return fmt::format("NCCL refuses two ranks on one GPU (ranks {} and {} share {} on {}); run one rank per GPU",
                           shared->first, shared->second, gpu.busId, gpu.host);
    }
    return {};
}

}  // namespace

std::vector<std::string> builtTransports() {
    std::vector<std::string> names{"staged", "ipc"};
#if HALOEX_JACOBI_WITH_NCCL
    names.push_back("nccl");
#endif
#if HALOEX_JACOBI_WITH_NVSHMEM
    names.push_back("nvshmem");
#endif
    return names;
}

std::string notBuiltReason(const std::string& name) {
    if (name == "staged" || name == "ipc") return {};
#if HALOEX_JACOBI_WITH_NCCL
    if (name == "nccl") return {};
#else
    if (name == "nccl") return "this build has no NCCL (" HALOEX_JACOBI_NCCL_REASON ")";
#endif
#if HALOEX_JACOBI_WITH_NVSHMEM
    if (name == "nvshmem") return {};
#else
    if (name == "nvshmem") return "this build has no NVSHMEM (" HALOEX_JACOBI_NVSHMEM_REASON ")";
#endif
    return fmt::format("unknown transport '{}'", name);
}

std::string noGpuReason(runtime::World& world) {
    const std::int64_t count = cuda::deviceCount();
    const std::int64_t fewest = world.allReduceValue(count, runtime::ReduceOp::Min);
    if (fewest > 0) return {};
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    return fmt::format("no GPU is visible{} (check nvidia-smi and CUDA_VISIBLE_DEVICES)",
                       count == 0 ? fmt::format(" on {}", host) : std::string(" on some rank's node"));
}

void selectGpu(runtime::World& world, bool allowSharedGpus) { cuda::selectDevice(world, allowSharedGpus); }

Reference gpuReference(const ProblemSpec& spec, runtime::World& world, const GpuSettings& settings,
                       bool crossCheckCpu) {
    Reference ref;
    ref.kind = "one-GPU";
    double us = 0.0;
    std::string failure;
    if (world.rank() == 0) {
        try {
            const long long nx = spec.nx, ny = spec.ny, ax = nx + 2;
            const auto cells = static_cast<std::size_t>(ax * (ny + 2));
            const bool periodic = spec.boundary == Boundary::Periodic;
            cuda::DeviceBuffer<double> a(cells), b(cells), norm(1);
            cuda::Stream stream;
            auto runOnce = [&](int iterations) {
                for (double* f : {a.data(), b.data()})
                    initField(f, spec.nx, spec.ny, ax, 0, 0, nx, ny, periodic, stream);
                norm.zeroAsync(stream);
                HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
                const auto t0 = Clock::now();
                for (int it = 0; it < iterations; ++it) {
                    const double* cur = (it & 1) ? b.data() : a.data();
                    double* next = (it & 1) ? a.data() : b.data();
                    referenceStep(cur, next, nx, ny, it + 1 == iterations ? norm.data() : nullptr, stream);
                    if (periodic) referenceWrap(next, nx, ny, stream);
                }
                HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
                return secondsSince(t0);
            };
            if (settings.warmup > 0) runOnce(settings.warmup);
            std::vector<double> samples;
            for (int rep = 0; rep < settings.repeats; ++rep) samples.push_back(runOnce(spec.niter) / spec.niter * 1e6);
            us = summarize(samples).median;
            ref.interior.resize(static_cast<std::size_t>(nx * ny));
            const double* last = (spec.niter & 1) ? b.data() : a.data();
            HALOEX_CUDA_CHECK(cudaMemcpy2D(ref.interior.data(), static_cast<std::size_t>(nx) * sizeof(double),
                                           last + 1 + ax, static_cast<std::size_t>(ax) * sizeof(double),
                                           static_cast<std::size_t>(nx) * sizeof(double), static_cast<std::size_t>(ny),
                                           cudaMemcpyDeviceToHost));
            HALOEX_CUDA_CHECK(cudaMemcpy(&ref.normSquared, norm.data(), sizeof(double), cudaMemcpyDeviceToHost));
            if (crossCheckCpu) {
                const FieldResult cpu = cpuReference(spec, spec.niter);
                const FieldComparison c = compareFields(ref.interior.data(), cpu.interior.data(), cpu.interior.size());
                if (!c.bitwiseEqual() || relativeError(ref.normSquared, cpu.normSquared) > kNormTolerance) {
                    throwError(ErrorKind::Internal,
                               fmt::format("the one-GPU reference disagrees with the CPU reference: {} cells differ "
                                           "(max |error| {:.3e}), squared norms {:.17g} and {:.17g}",
                                           c.mismatches, c.maxAbsError, ref.normSquared, cpu.normSquared));
                }
                ref.kind = "one-GPU (itself checked against the CPU)";
            }
        } catch (const std::exception& e) {
            failure = e.what();
        }
    }
    // Rank 0's failure ends every rank's run with its message.
    std::int64_t failed = failure.empty() ? 0 : 1;
    failed = world.allReduceValue(failed, runtime::ReduceOp::Max);
    if (failed) {
        if (world.rank() == 0) throwError(ErrorKind::Runtime, "one-GPU reference: " + failure);
        throwError(ErrorKind::Runtime, "one-GPU reference failed on rank 0");
    }
    ref.usPerIteration = world.allReduceValue(us, runtime::ReduceOp::Max);
    return ref;
}

RunResult runGpuTransport(const std::string& name, const ProblemSpec& spec, const stencil::LocalStencil& s,
                          runtime::MpiWorld& world, const GpuSettings& settings, const Reference& reference) {
    RunResult r = baseResult(name, spec, world, settings);
    if (std::string why = notBuiltReason(name); !why.empty()) {
        r.reason = why;
        return r;
    }
    std::unique_ptr<Variant> variant;
    std::string failure;
    if (name == "staged") {
        failure = agreeOnFailure(world, [&] { variant = std::make_unique<Staged>(s, world); });
    } else if (name == "ipc") {
        if (world.localSize() != world.size()) {
            r.reason = "CUDA IPC needs every rank on one node; use staged, nccl or nvshmem across nodes";
            return r;
        }
        std::unique_ptr<Ipc> ipc;
        failure = agreeOnFailure(world, [&] { ipc = std::make_unique<Ipc>(s, world); });
        if (failure.empty()) {
            // connect() communicates before anything that can fail locally.
            failure = agreeOnFailure(world, [&] { ipc->connect(); });
        }
        if (!failure.empty()) {
            r.reason = "CUDA IPC is not usable here: " + failure;
            return r;
        }
        variant = std::move(ipc);
    } else if (name == "nccl") {
#if HALOEX_JACOBI_WITH_NCCL
        if (std::string why = ncclSharedGpuReason(world); !why.empty()) {
            r.reason = why;
            return r;
        }
        failure = agreeOnFailure(world, [&] { variant = std::make_unique<Nccl>(s, world); });
#endif
    } else if (name == "nvshmem") {
#if HALOEX_JACOBI_WITH_NVSHMEM
        // Collective inside NVSHMEM: a failure here ends the job with its message.
        variant = std::make_unique<Nvshmem>(s, world, settings);
#endif
    }
    if (!failure.empty()) throwError(ErrorKind::Runtime, fmt::format("setting up the {} transport: {}", name, failure));
    HALOEX_ASSERT(variant != nullptr, "every built transport has a variant");

    r.path = variant->path();
    r.notes = variant->notes();
    const Measured m = measure(*variant, spec, s, world, settings, name);
    r.usPerIteration = summarize(m.usPerIteration);
    r.singleUsPerIteration = reference.usPerIteration;
    computeScaling(r);
    checkAgainstReference(r, spec, s, world, m.interior, m.normSquared, reference);
    return r;
}

nlohmann::json gpuMachineInfo(runtime::World& world) {
    nlohmann::json info;
    const auto gpus = cuda::gatherGpuIdentities(world);
    int device = 0;
    HALOEX_CUDA_CHECK(cudaGetDevice(&device));
    cudaDeviceProp prop{};
    HALOEX_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    int driver = 0, runtimeVersion = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtimeVersion);
    info["gpu_name"] = prop.name;
    info["gpus_visible"] = cuda::deviceCount();
    info["cuda_driver"] = driver;
    info["cuda_runtime"] = runtimeVersion;
    nlohmann::json ranks = nlohmann::json::array();
    for (const auto& g : gpus) ranks.push_back({{"host", g.host}, {"bus_id", g.busId}, {"device", g.device}});
    info["rank_gpus"] = ranks;
    info["shared_gpus"] = cuda::findSharedGpu(gpus).has_value();
    return info;
}

}  // namespace haloex::jacobi::gpu
