// The transports' pack/unpack kernels on their own: shifts applied exactly as
// the reference does (and -0.0f kept), byte-wise and word-wise element packs,
// accumulation through an index map, and block copies of every alignment.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>

#include "halo_kernels.hpp"
#include "haloex/cuda/device_buffer.hpp"
#include "haloex/transport/reference.hpp"

using namespace haloex;

namespace {

#define SKIP_WITHOUT_GPU() \
    if (cuda::deviceCount() == 0) GTEST_SKIP() << "no CUDA device is visible on this machine (no driver or no GPU)"

template <class T>
cuda::DeviceBuffer<T> toDevice(const std::vector<T>& host) {
    cuda::DeviceBuffer<T> d(std::max<std::size_t>(host.size(), 1));
    if (!host.empty()) cuda::copyToDeviceNow(d.data(), host.data(), host.size() * sizeof(T));
    return d;
}

template <class T>
std::vector<T> toHost(const T* device, std::size_t n) {
    std::vector<T> host(n);
    if (n) HALOEX_CUDA_CHECK(cudaMemcpy(host.data(), device, n * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
}

TEST(HaloKernels, PackCoordinatesShiftsLikeTheReference) {
    SKIP_WITHOUT_GPU();
    const std::vector<Vec3f> x{{0.1f, 0.2f, 0.3f}, {-0.0f, -0.0f, -0.0f}, {3.9f, 2.5f, 1.0f}, {1e-8f, 7.f, 2.9f}};
    const std::vector<int> indices{3, 1, 0, 2};
    plan::Box box;
    box.length = {4.0, 3.2, 3.0000001};
    for (int dim = 0; dim < 3; ++dim) {
        for (int sign : {0, 1, -1}) {
            plan::Pulse pulse;
            pulse.dim = dim;
            pulse.shiftSign = sign;
            auto dx = toDevice(x);
            auto di = toDevice(indices);
            cuda::DeviceBuffer<Vec3f> out(indices.size());
            cuda::packCoordinates(dx.data(), di.data(), static_cast<int>(indices.size()), cuda::pulseShift(pulse, box),
                                  out.data(), nullptr);
            const auto got = toHost(out.data(), indices.size());
            for (std::size_t i = 0; i < indices.size(); ++i) {
                const Vec3f want = transport::shiftedForPulse(pulse, box, x[static_cast<std::size_t>(indices[i])]);
                EXPECT_EQ(std::memcmp(&got[i], &want, sizeof(Vec3f)), 0)
                    << "dim " << dim << " sign " << sign << " entry " << i << ": got (" << got[i].x << ", " << got[i].y
                    << ", " << got[i].z << ")";
            }
        }
    }
}

TEST(HaloKernels, PackElementsOfAnySize) {
    SKIP_WITHOUT_GPU();
    const int n = 1000;
    std::vector<int> indices(300);
    for (std::size_t i = 0; i < indices.size(); ++i) indices[i] = static_cast<int>((i * 7919) % n);
    auto di = toDevice(indices);
    for (std::size_t size : {1u, 3u, 4u, 8u, 12u, 16u, 20u}) {
        std::vector<std::byte> data(n * size);
        for (std::size_t b = 0; b < data.size(); ++b) data[b] = static_cast<std::byte>((b * 31 + size) & 0xFF);
        auto dd = toDevice(data);
        cuda::DeviceBuffer<std::byte> out(indices.size() * size);
        cuda::packElements(dd.data(), size, di.data(), static_cast<int>(indices.size()), out.data(), nullptr);
        const auto got = toHost(out.data(), indices.size() * size);
        for (std::size_t i = 0; i < indices.size(); ++i) {
            ASSERT_EQ(std::memcmp(&got[i * size], &data[static_cast<std::size_t>(indices[i]) * size], size), 0)
                << "element size " << size << ", entry " << i;
        }
    }
}

TEST(HaloKernels, UnpackAddsThroughTheIndexMap) {
    SKIP_WITHOUT_GPU();
    std::vector<Vec3f> f(50);
    for (std::size_t i = 0; i < f.size(); ++i) f[i] = Vec3f{0.1f * i, -0.3f * i, 1.0f / (i + 1)};
    const std::vector<int> indices{5, 0, 49, 17, 3};
    std::vector<Vec3f> received(indices.size());
    for (std::size_t i = 0; i < received.size(); ++i) received[i] = Vec3f{1.5f + i, -2.25f * i, 1e-3f * i};
    auto df = toDevice(f);
    auto di = toDevice(indices);
    auto dr = toDevice(received);
    cuda::unpackAddForces(dr.data(), di.data(), static_cast<int>(indices.size()), df.data(), nullptr);
    const auto got = toHost(df.data(), f.size());
    std::vector<Vec3f> want = f;
    for (std::size_t i = 0; i < indices.size(); ++i) want[static_cast<std::size_t>(indices[i])] += received[i];
    EXPECT_EQ(std::memcmp(got.data(), want.data(), f.size() * sizeof(Vec3f)), 0);
}

TEST(HaloKernels, CopyBlockOfEveryAlignment) {
    SKIP_WITHOUT_GPU();
    std::vector<std::uint8_t> src(5000);
    std::iota(src.begin(), src.end(), 0);
    auto ds = toDevice(src);
    for (std::size_t offset : {0u, 1u, 4u, 16u}) {
        for (std::size_t bytes : {0u, 1u, 12u, 64u, 4096u, 4000u + 3u}) {
            cuda::DeviceBuffer<std::uint8_t> dst(5000);
            HALOEX_CUDA_CHECK(cudaMemset(dst.data(), 0xAB, 5000));
            cuda::copyBlock(ds.data() + offset, bytes, dst.data() + offset, nullptr);
            const auto got = toHost(dst.data(), 5000);
            for (std::size_t b = 0; b < 5000; ++b) {
                const bool inside = b >= offset && b < offset + bytes;
                ASSERT_EQ(got[b], inside ? src[b] : 0xAB)
                    << "offset " << offset << ", " << bytes << " bytes, byte " << b;
            }
        }
    }
}

}  // namespace
