// The flag ping-pong on the device halo view (view_pingpong.hpp). Rank 0
// stores a message of `bytes` into rank 1's receive window and signals
// generation g; rank 1 waits for g and answers the same way; repeated
// `iterations` times in one kernel, timed on rank 0 with %globaltimer. One
// sample is half a round trip.
#include "view_pingpong.hpp"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>

#include "haloex/core/error.hpp"
#include "haloex/cuda/check.hpp"
#include "haloex/cuda/device_buffer.hpp"
#include "haloex/detail/cuda/memory_order.cuh"
#include "haloex/halo/backend.hpp"
#include "haloex/halo/device_halo.hpp"
#include "haloex/halo/device_halo_view.cuh"
#include "haloex/transport/peer_memory.hpp"

namespace haloex::commbench {
namespace {

constexpr int kLink = 0;  // each of ranks 0 and 1 has one send and one receive link

// Who stores and signals: one thread, or a block of 256.
enum class Scope { Thread, Block };
int threadsOf(Scope s) { return s == Scope::Thread ? 1 : 256; }

// "ipc thread", "nccl-device block", ... (no fmt here: nvcc rejects its
// compile-time format check in this translation unit).
std::string variantOf(Backend backend, Scope scope) {
    return std::string(toString(backend)) + (scope == Scope::Thread ? " thread" : " block");
}

// One measurement's header, before its samples (or the reason it has none).
Measurement pingPongMeasurement(Backend backend, Scope scope, std::size_t bytes, int iterations) {
    return newMeasurement("gpu", "view_flag_pingpong", variantOf(backend, scope), bytes, "us", "half round trip",
                          iterations);
}

// One block of 1 (thread) or 256 (block) threads.
__global__ void viewPingPongKernel(DeviceHaloView view, const unsigned long long* source, std::size_t bytes,
                                   int iterations, std::uint64_t firstGeneration, int initiator,
                                   unsigned long long* elapsedNs) {
    namespace dev = haloex::device;
    const std::uint64_t t0 = cuda::globalTimerNs();
    for (int i = 0; i < iterations; ++i) {
        const std::uint64_t g = firstGeneration + static_cast<std::uint64_t>(i);
        if (!initiator && !dev::waitBlock(view, kLink, g)) return;
        auto* out = dev::sendSlot<unsigned long long>(view, kLink, g);
        for (std::size_t w = threadIdx.x; w < bytes / 8; w += blockDim.x) out[w] = source[w];
        dev::signalBlock(view, kLink, g);  // every thread's stores, then one release store
        if (initiator && !dev::waitBlock(view, kLink, g)) return;
    }
    if (initiator && threadIdx.x == 0) *elapsedNs = cuda::globalTimerNs() - t0;
}

class ViewPingPong {
public:
    ViewPingPong(runtime::World& world, const BenchSettings& s, Backend backend)
        : world_(world), s_(s), backend_(backend), rank_(world.rank()), active_(world.rank() < 2) {
        maxBytes_ = *std::max_element(s.latencySizes.begin(), s.latencySizes.end());
        std::vector<DeviceHaloReceive> receives;
        std::vector<DeviceHaloSend> sends;
        if (active_) {
            const int peer = 1 - rank_;
            receives.push_back({peer, 0, maxBytes_, 2});
            sends.push_back({peer, 0});
        }
        device::loadKernelNow(viewPingPongKernel);
        DeviceHaloOptions o;
        o.waitTimeoutSeconds = s.waitTimeoutSeconds;
        o.what = "the " + std::string(toString(backend)) + " flag ping-pong";
        halo_ = std::make_unique<DeviceHalo>(world, backend, receives, sends, o);
        source_.resize(std::max<std::size_t>(maxBytes_ / 8, 1));
        source_.zeroAsync(nullptr);
        elapsed_.resize(1);
        HALOEX_CUDA_CHECK(cudaDeviceSynchronize());
    }

    Measurement measure(Scope scope, std::size_t bytes) {
        const int iters = s_.latencyIterations;
        Measurement m = pingPongMeasurement(backend_, scope, bytes, iters);
        for (int r = 0; r < s_.repetitions; ++r) {
            elapsed_.zeroAsync(nullptr);
            HALOEX_CUDA_CHECK(cudaDeviceSynchronize());
            world_.barrier();
            if (active_) {
                viewPingPongKernel<<<1, threadsOf(scope)>>>(halo_->view(), source_.data(), bytes, iters, generation_,
                                                            rank_ == 0 ? 1 : 0, elapsed_.data());
                HALOEX_CUDA_CHECK_LAUNCH();
            }
            const cudaError_t st = cudaDeviceSynchronize();
            halo_->throwIfTimedOut();
            HALOEX_CUDA_CHECK(st);
            world_.barrier();
            generation_ += static_cast<std::uint64_t>(iters);
            unsigned long long ns = 0;
            HALOEX_CUDA_CHECK(cudaMemcpy(&ns, elapsed_.data(), sizeof ns, cudaMemcpyDeviceToHost));
            if (rank_ == 0) m.samples.push_back(static_cast<double>(ns) * 1e-3 / (2.0 * iters));
        }
        return m;
    }

private:
    runtime::World& world_;
    const BenchSettings& s_;
    Backend backend_;
    int rank_;
    bool active_;
    std::size_t maxBytes_ = 8;
    std::uint64_t generation_ = 1;  // the signal words only grow
    std::unique_ptr<DeviceHalo> halo_;
    cuda::DeviceBuffer<unsigned long long> source_, elapsed_;
};

}  // namespace

std::vector<Measurement> runViewPingPong(runtime::World& world, const BenchSettings& s) {
    std::vector<Measurement> out;
    for (const Backend backend : {Backend::Ipc, Backend::NcclDevice}) {
        std::string why =
            hasPeerMemory(backend) ? unavailableReason(backend, world) : "this build has no peer memory for it";
        std::unique_ptr<ViewPingPong> bench;
        if (why.empty()) {
            try {
                bench = std::make_unique<ViewPingPong>(world, s, backend);  // collective: fails on every rank alike
            } catch (const Error& e) {
                why = e.what();
            }
        }
        for (const Scope scope : {Scope::Thread, Scope::Block}) {
            for (const std::size_t bytes : s.latencySizes) {
                if (bench) {
                    out.push_back(bench->measure(scope, bytes));
                    continue;
                }
                Measurement m = pingPongMeasurement(backend, scope, bytes, s.latencyIterations);
                m.skipped = why;
                out.push_back(m);
            }
        }
    }
    return out;
}

}  // namespace haloex::commbench
