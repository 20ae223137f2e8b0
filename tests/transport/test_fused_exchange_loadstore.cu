// The fused exchange kernels (src/transport/fused/fused_exchange.cuh) instantiated
// with the load/store peer policy, in a translation unit without -rdc or
// NVSHMEM: what a transport over NCCL's LSA pointers or CUDA IPC mappings
// would run. Two virtual ranks of one process on one GPU exchange over plain
// device pointers (a periodic ring of two: each is the other's sender and
// receiver), each rank's kernel on its own stream so both run at once; float,
// double and Vec3f (with the periodic shift), on the direct and the bulk
// (TMA) path, several blocks per pulse, with one coordinate signal per pulse
// and with signals per block (FusedArgs::coordBlockWords); with device
// timestamps recorded (FusedArgs::trace), in order. Checked exactly against
// the host.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "fused_exchange.cuh"
#include "haloex/core/vec3.hpp"
#include "haloex/detail/cuda/blocking_ops.hpp"
#include "haloex/cuda/check.hpp"
#include "haloex/cuda/device_buffer.hpp"

namespace haloex::nvshmem_detail {
namespace {

constexpr int kHome = 1000;  // elements each rank owns
constexpr int kSent = 301;   // of them sent to the other rank (the last ones), not a multiple of 4
constexpr int kSlot = 304;   // receive slot, padded to 4 elements
constexpr int kBlocks = 3;   // blocks per pulse

void copyToHost(void* host, const void* device, std::size_t bytes) {
    HALOEX_CUDA_CHECK(cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost));
}

template <class T>
T valueOf(int rank, int i) {
    if constexpr (std::is_same_v<T, Vec3f>) {
        return Vec3f{0.5f + static_cast<float>(i) * 0.25f, static_cast<float>(rank) - 0.125f * i, 3.0f + i};
    } else {
        return static_cast<T>(rank * 10000 + i) + static_cast<T>(0.5);
    }
}
template <class T>
T forceOf(int rank, int i) {
    if constexpr (std::is_same_v<T, Vec3f>) {
        return Vec3f{1.0f + i, -0.5f * rank, 0.25f * i};
    } else {
        return static_cast<T>(i % 17) + static_cast<T>(rank) * static_cast<T>(0.25);
    }
}

// One rank's arrays: x and f of home + halo, signals, counters, diagnostics.
template <class T>
struct Rank {
    cuda::DeviceBuffer<T> x{kHome + kSlot}, f{kHome + kSlot};
    cuda::DeviceBuffer<int> map{kSent};
    cuda::DeviceBuffer<std::uint64_t> coordSignal{kMaxPulses}, forceSignal{kMaxPulses}, doneWords{kMaxPulses};
    cuda::DeviceBuffer<std::uint64_t> coordBlockWords{kMaxPulses * kMaxSignalBlocks};
    cuda::DeviceBuffer<std::uint64_t> forwardTrace{kTraceWords}, reverseTrace{kTraceWords};
    cuda::DeviceBuffer<std::uint64_t> coordSequence{1}, forceSequence{1};
    cuda::DeviceBuffer<unsigned> pulseBlockCounters{kMaxPulses}, kernelBlockCounter{1};
    cuda::DeviceBuffer<WaitDiagnostics> diagnostics{1};
    cuda::DeviceBuffer<int> abortFlag{1};
    cuda::DeviceBuffer<PulseRecordOf<T>> record{1};
    cuda::Stream stream;
};

// How a case runs the kernels: signals per block, device timestamps.
struct Mode {
    bool blockSignals = false;
    bool timestamps = false;
};

template <class T>
FusedArgsOf<T> argsOf(Rank<T>& r, int rank, std::uint64_t* sequence, float shift, Mode mode, std::uint64_t* trace) {
    FusedArgsOf<T> a;
    a.pulses = r.record.data();
    a.numPulses = 1;
    a.x = r.x.data();
    a.f = r.f.data();
    a.coordSignal = r.coordSignal.data();
    a.forceSignal = r.forceSignal.data();
    a.coordBlockWords = mode.blockSignals ? r.coordBlockWords.data() : nullptr;
    a.trace = mode.timestamps ? trace : nullptr;
    a.sequence = sequence;
    a.doneWords = r.doneWords.data();
    a.pulseBlockCounters = r.pulseBlockCounters.data();
    a.kernelBlockCounter = r.kernelBlockCounter.data();
    a.shift[0] = shift;
    a.diagnostics = r.diagnostics.data();
    a.abortFlag = r.abortFlag.data();
    a.timeoutNs = 10'000'000'000ull;
    a.myPe = rank;
    return a;
}

// The points each kernel recorded, in the order they happen: forward start
// <= sent <= signalled and start <= received <= finished <= the kernel's end;
// reverse start <= signalled, start <= received <= finished <= its end.
template <class T>
void expectTimestampsInOrder(Rank<T>& rank, int r) {
    std::uint64_t forward[kTraceWords], reverse[kTraceWords];
    copyToHost(forward, rank.forwardTrace.data(), sizeof forward);
    copyToHost(reverse, rank.reverseTrace.data(), sizeof reverse);
    SCOPED_TRACE("rank " + std::to_string(r));
    const std::uint64_t* f = forward;  // pulse 0
    const std::uint64_t* b = reverse;
    for (int k : {kTraceStart, kTraceSent, kTraceSignalled, kTraceReceived, kTraceFinished}) {
        EXPECT_NE(f[k], 0u) << "forward point " << k;
    }
    for (int k : {kTraceStart, kTraceSignalled, kTraceReceived, kTraceFinished}) {
        EXPECT_NE(b[k], 0u) << "reverse point " << k;
    }
    EXPECT_EQ(f[kTraceDependencies], 0u) << "the pulse waits for no other";
    EXPECT_LE(f[kTraceStart], f[kTraceSent]);
    EXPECT_LE(f[kTraceSent], f[kTraceSignalled]);
    EXPECT_LE(f[kTraceStart], f[kTraceReceived]);
    EXPECT_LE(f[kTraceReceived], f[kTraceFinished]);
    EXPECT_LE(f[kTraceFinished], forward[kTraceKernelEnd]);
    EXPECT_LE(b[kTraceStart], b[kTraceSignalled]);
    EXPECT_LE(b[kTraceStart], b[kTraceReceived]);
    EXPECT_LE(b[kTraceReceived], b[kTraceFinished]);
    EXPECT_LE(b[kTraceFinished], reverse[kTraceKernelEnd]);
}

template <class T>
void exchangeAndCheck(PathKind path, Mode mode = {}) {
    if (cuda::deviceCount() == 0) GTEST_SKIP() << "no CUDA device is visible: the fused kernels need a GPU";
    std::array<Rank<T>, 2> ranks;
    const int shiftSign = std::is_same_v<T, Vec3f> ? 1 : 0;  // only coordinates are shifted
    const float shift = shiftSign != 0 ? 2.5f : 0.0f;
    std::array<std::vector<T>, 2> x, f;
    std::vector<int> map(kSent);
    for (int i = 0; i < kSent; ++i) map[i] = kHome - kSent + i;
    for (int r = 0; r < 2; ++r) {
        Rank<T>& me = ranks[r];
        Rank<T>& peer = ranks[1 - r];
        x[r].resize(kHome + kSlot);
        f[r].resize(kHome + kSlot);
        for (int i = 0; i < kHome + kSlot; ++i) {
            x[r][i] = i < kHome ? valueOf<T>(r, i) : T{};
            f[r][i] = i < kHome ? forceOf<T>(r, i) : T{};
        }
        cuda::copyToDeviceNow(me.x.data(), x[r].data(), x[r].size() * sizeof(T));
        cuda::copyToDeviceNow(me.f.data(), f[r].data(), f[r].size() * sizeof(T));
        cuda::copyToDeviceNow(me.map.data(), map.data(), map.size() * sizeof(int));
        for (auto* b : {&me.coordSignal, &me.forceSignal, &me.doneWords}) b->resizeZeroed(kMaxPulses);
        me.coordBlockWords.resizeZeroed(kMaxPulses * kMaxSignalBlocks);
        me.forwardTrace.resizeZeroed(kTraceWords);
        me.reverseTrace.resizeZeroed(kTraceWords);
        me.pulseBlockCounters.resizeZeroed(kMaxPulses);
        me.kernelBlockCounter.resizeZeroed(1);
        me.diagnostics.resizeZeroed(1);
        me.abortFlag.resizeZeroed(1);
        const std::uint64_t one = 1;
        cuda::copyToDeviceNow(me.coordSequence.data(), &one, sizeof one);
        cuda::copyToDeviceNow(me.forceSequence.data(), &one, sizeof one);
        PulseRecordOf<T> rec;
        rec.indexMap = me.map.data();
        rec.sendCount = kSent;
        rec.numIndependent = kSent;
        rec.recvCount = kSent;
        rec.recvOffset = kHome;
        rec.recvCapacity = kSlot;
        rec.remoteRecvOffset = kHome;
        rec.dim = 0;
        rec.shiftSign = shiftSign;
        rec.sendPe = 1 - r;
        rec.recvPe = 1 - r;
        rec.sendPath = rec.recvPath = path;
        rec.peerX = peer.x.data();
        rec.peerF = peer.f.data();
        rec.peerCoordSignal = peer.coordSignal.data();
        rec.peerForceSignal = peer.forceSignal.data();
        rec.peerCoordBlockWords = mode.blockSignals ? peer.coordBlockWords.data() : nullptr;  // pulse 0's words
        cuda::copyToDeviceNow(me.record.data(), &rec, sizeof rec);
    }
    HALOEX_CUDA_CHECK(cudaDeviceSynchronize());

    // Forward: both ranks at once (each waits for the other's signal).
    for (int r = 0; r < 2; ++r) {
        fusedForward<T, LoadStorePeers><<<dim3(kBlocks, 1), kFusedThreads, 0, ranks[r].stream.get()>>>(
            argsOf(ranks[r], r, ranks[r].coordSequence.data(), shift, mode, ranks[r].forwardTrace.data()));
        HALOEX_CUDA_CHECK(cudaGetLastError());
    }
    HALOEX_CUDA_CHECK(cudaDeviceSynchronize());
    // The halo forces each rank computed on what it received, then reverse.
    for (int r = 0; r < 2; ++r) {
        std::vector<T> halo(kSlot, T{});
        for (int i = 0; i < kSent; ++i) halo[i] = forceOf<T>(r, kHome + i);
        cuda::copyToDeviceNow(ranks[r].f.data() + kHome, halo.data(), halo.size() * sizeof(T));
    }
    for (int r = 0; r < 2; ++r) {
        fusedReverse<T, LoadStorePeers><<<dim3(kBlocks, 1), kFusedThreads, 0, ranks[r].stream.get()>>>(
            argsOf(ranks[r], r, ranks[r].forceSequence.data(), shift, mode, ranks[r].reverseTrace.data()));
        HALOEX_CUDA_CHECK(cudaGetLastError());
    }
    HALOEX_CUDA_CHECK(cudaDeviceSynchronize());

    for (int r = 0; r < 2; ++r) {
        const int peer = 1 - r;
        std::vector<T> gotX(kHome + kSlot), gotF(kHome + kSlot);
        copyToHost(gotX.data(), ranks[r].x.data(), gotX.size() * sizeof(T));
        copyToHost(gotF.data(), ranks[r].f.data(), gotF.size() * sizeof(T));
        int aborted = 0;
        copyToHost(&aborted, ranks[r].abortFlag.data(), sizeof aborted);
        ASSERT_EQ(aborted, 0) << "rank " << r << " timed out";
        for (int i = 0; i < kSent; ++i) {
            T expected = valueOf<T>(peer, map[i]);
            if constexpr (std::is_same_v<T, Vec3f>) expected.x += shift;
            ASSERT_EQ(std::memcmp(&gotX[kHome + i], &expected, sizeof(T)), 0) << "rank " << r << " halo element " << i;
        }
        for (int i = 0; i < kHome; ++i) {
            T expected = forceOf<T>(r, i);
            const int k = i - (kHome - kSent);
            if (k >= 0) {  // the peer's halo force on the element this rank sent it
                const T add = forceOf<T>(peer, kHome + k);
                if constexpr (std::is_same_v<T, Vec3f>) {
                    expected = Vec3f{expected.x + add.x, expected.y + add.y, expected.z + add.z};
                } else {
                    expected = expected + add;
                }
            }
            ASSERT_EQ(std::memcmp(&gotF[i], &expected, sizeof(T)), 0) << "rank " << r << " element " << i;
        }
        std::uint64_t seq[2];
        copyToHost(&seq[0], ranks[r].coordSequence.data(), sizeof(std::uint64_t));
        copyToHost(&seq[1], ranks[r].forceSequence.data(), sizeof(std::uint64_t));
        EXPECT_EQ(seq[0], 2u) << "the forward kernel advances its exchange counter once";
        EXPECT_EQ(seq[1], 2u) << "the reverse kernel advances its exchange counter once";
        // The peer signalled this rank's receive one way or the other, not both.
        std::uint64_t signal = 0;
        std::vector<std::uint64_t> words(kMaxSignalBlocks);
        copyToHost(&signal, ranks[r].coordSignal.data(), sizeof signal);
        copyToHost(words.data(), ranks[r].coordBlockWords.data(), words.size() * sizeof(std::uint64_t));
        EXPECT_EQ(signal, mode.blockSignals ? 0u : 1u) << "rank " << r << ": the pulse's one signal";
        for (int b = 0; b < kMaxSignalBlocks; ++b) {
            EXPECT_EQ(words[b], mode.blockSignals && b < kBlocks ? 1u : 0u) << "rank " << r << ": block " << b;
        }
        if (mode.timestamps) expectTimestampsInOrder(ranks[r], r);
    }
}

}  // namespace

TEST(FusedExchangeLoadStore, FloatDirect) { exchangeAndCheck<float>(PathKind::Direct); }
TEST(FusedExchangeLoadStore, FloatBulk) { exchangeAndCheck<float>(PathKind::Tma); }
TEST(FusedExchangeLoadStore, DoubleDirect) { exchangeAndCheck<double>(PathKind::Direct); }
TEST(FusedExchangeLoadStore, DoubleBulk) { exchangeAndCheck<double>(PathKind::Tma); }
TEST(FusedExchangeLoadStore, Vec3fDirectWithShift) { exchangeAndCheck<Vec3f>(PathKind::Direct); }
TEST(FusedExchangeLoadStore, Vec3fBulkWithShift) { exchangeAndCheck<Vec3f>(PathKind::Tma); }
TEST(FusedExchangeLoadStore, FloatDirectSignalsPerBlock) { exchangeAndCheck<float>(PathKind::Direct, {true, false}); }
TEST(FusedExchangeLoadStore, Vec3fDirectSignalsPerBlock) { exchangeAndCheck<Vec3f>(PathKind::Direct, {true, false}); }
TEST(FusedExchangeLoadStore, Vec3fBulkSignalsPerBlock) { exchangeAndCheck<Vec3f>(PathKind::Tma, {true, false}); }
TEST(FusedExchangeLoadStore, Vec3fDirectTimestamps) { exchangeAndCheck<Vec3f>(PathKind::Direct, {false, true}); }
TEST(FusedExchangeLoadStore, Vec3fBulkSignalsPerBlockTimestamps) {
    exchangeAndCheck<Vec3f>(PathKind::Tma, {true, true});
}

}  // namespace haloex::nvshmem_detail
