// GPU update kernels (integrate.hpp) against host arithmetic: leapfrog with
// and without a device-side velocity scale, kinetic energies, the
// non-finite check, and capture of a whole update in a CUDA graph.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <random>
#include <vector>

#include "gpu_test_support.hpp"
#include "haloex/cuda/device_buffer.hpp"
#include "haloex/md/gpu/integrate.hpp"

using namespace haloex;
using namespace haloex::md::gpu;
using haloex::testing::download;
using haloex::testing::upload;

namespace {

std::vector<Vec3f> randomVectors(int n, float scale, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-scale, scale);
    std::vector<Vec3f> v(n);
    for (auto& a : v) a = {u(rng), u(rng), u(rng)};
    return v;
}

double kinetic(const std::vector<Vec3f>& v, double mass) {
    double sum = 0.0;
    for (const auto& a : v) sum += 0.5 * mass * norm2(Vec3d(a));
    return sum;
}

// Relative difference of two float vectors, worst element named.
void expectClose(const std::vector<Vec3f>& got, const std::vector<Vec3f>& expected, double tolerance,
                 const char* what) {
    // Relative to the element, floored at the RMS size: an element that
    // happens to be near zero must not turn one rounding into a failure.
    double rms = 0.0;
    for (const auto& e : expected) rms += norm2(Vec3d(e));
    rms = std::sqrt(rms / std::max<std::size_t>(1, expected.size()));
    double worst = 0.0;
    int worstIndex = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
        const double d = std::sqrt(norm2(Vec3d(got[i]) - Vec3d(expected[i]))) /
                         std::max({1e-30, rms, std::sqrt(norm2(Vec3d(expected[i])))});
        if (!(d <= worst)) {
            worst = d;
            worstIndex = static_cast<int>(i);
        }
    }
    EXPECT_LE(worst, tolerance) << what << ": atom " << worstIndex << " got (" << got[worstIndex].x << ", "
                                << got[worstIndex].y << ", " << got[worstIndex].z << ") expected ("
                                << expected[worstIndex].x << ", " << expected[worstIndex].y << ", "
                                << expected[worstIndex].z << ")";
}

}  // namespace

TEST(IntegrateGpu, LeapfrogMatchesHost) {
    HALOEX_REQUIRE_GPU();
    const int n = 100003;  // not a multiple of the block size
    const float dt = 0.002f, mass = 12.0f, lambda = 0.93f;
    const auto x0 = randomVectors(n, 5.0f, 1), v0 = randomVectors(n, 1.0f, 2), f = randomVectors(n, 3000.0f, 3);
    for (bool scaled : {false, true}) {
        SCOPED_TRACE(scaled ? "with velocity scale" : "without velocity scale");
        auto dx = upload(x0), dv = upload(v0), df = upload(f);
        cuda::DeviceBuffer<float> dLambda = upload(std::vector<float>{lambda});
        cuda::DeviceBuffer<double> dEkin(1);
        dEkin.zeroAsync(nullptr);
        LeapfrogArgs a;
        a.x = dx.data();
        a.v = dv.data();
        a.f = df.data();
        a.numAtoms = n;
        a.dt = dt;
        a.invMass = 1.0f / mass;
        a.mass = mass;
        a.velocityScale = scaled ? dLambda.data() : nullptr;
        a.averageKineticEnergy = dEkin.data();
        leapfrog(a, nullptr);
        std::vector<Vec3f> x = x0, v = v0;
        const float l = scaled ? lambda : 1.0f;
        for (int i = 0; i < n; ++i) {
            for (int d = 0; d < 3; ++d) {
                v[i][d] = l * v0[i][d] + f[i][d] * (a.invMass * dt);
                x[i][d] = x0[i][d] + v[i][d] * dt;
            }
        }
        expectClose(download(dv, n), v, 1e-6, "velocities");
        expectClose(download(dx, n), x, 1e-6, "positions");
        const double expected = 0.5 * (kinetic(v0, mass) + kinetic(v, mass));
        const double got = download(dEkin, 1)[0];
        EXPECT_NEAR(got, expected, 1e-6 * expected) << "average kinetic energy";
    }
}

TEST(IntegrateGpu, KineticEnergyAccumulates) {
    HALOEX_REQUIRE_GPU();
    const int n = 777777;
    const auto v = randomVectors(n, 1.5f, 9);
    auto dv = upload(v);
    cuda::DeviceBuffer<double> e(1);
    e.zeroAsync(nullptr);
    accumulateKineticEnergy(dv.data(), n, 12.0f, nullptr, e.data(), nullptr);
    accumulateKineticEnergy(dv.data(), n, 12.0f, nullptr, e.data(), nullptr);  // adds
    const double expected = 2.0 * kinetic(v, 12.0);
    EXPECT_NEAR(download(e, 1)[0], expected, 1e-6 * expected);
    std::vector<float> masses(n, 3.0f);
    auto dm = upload(masses);
    e.zeroAsync(nullptr);
    accumulateKineticEnergy(dv.data(), n, 12.0f, dm.data(), e.data(), nullptr);
    EXPECT_NEAR(download(e, 1)[0], kinetic(v, 3.0), 1e-6 * kinetic(v, 3.0)) << "per-atom masses";
}

TEST(IntegrateGpu, FiniteCheckFindsFirstBadAtom) {
    HALOEX_REQUIRE_GPU();
    const int n = 50000;
    auto x = randomVectors(n, 5.0f, 4), f = randomVectors(n, 100.0f, 5);
    auto dx = upload(x), df = upload(f);
    cuda::DeviceBuffer<int> bad(1);
    resetFiniteCheck(bad.data(), nullptr);
    checkFinite(dx.data(), df.data(), n, bad.data(), nullptr);
    EXPECT_EQ(download(bad, 1)[0], kAllFinite) << "all finite, yet an atom was reported";
    x[4567].z = INFINITY;
    f[123].x = std::nanf("");
    f[40000].y = -INFINITY;
    dx = upload(x);
    df = upload(f);
    checkFinite(dx.data(), df.data(), n, bad.data(), nullptr);
    EXPECT_EQ(download(bad, 1)[0], 123);
    resetFiniteCheck(bad.data(), nullptr);
    checkFinite(dx.data(), nullptr, n, bad.data(), nullptr);  // positions only
    EXPECT_EQ(download(bad, 1)[0], 4567);
}

TEST(IntegrateGpu, UpdateIsGraphCapturable) {
    HALOEX_REQUIRE_GPU();
    const int n = 20000;
    const auto x0 = randomVectors(n, 5.0f, 6), v0 = randomVectors(n, 1.0f, 7), f = randomVectors(n, 300.0f, 8);
    auto dx = upload(x0), dv = upload(v0), df = upload(f);
    cuda::DeviceBuffer<float> dLambda = upload(std::vector<float>{1.0f});
    cuda::DeviceBuffer<double> dEkin(1);
    cuda::DeviceBuffer<int> bad(1);
    cuda::Stream stream;
    LeapfrogArgs a;
    a.x = dx.data();
    a.v = dv.data();
    a.f = df.data();
    a.numAtoms = n;
    a.velocityScale = dLambda.data();
    a.averageKineticEnergy = dEkin.data();
    cudaGraph_t graph = nullptr;
    HALOEX_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    dEkin.zeroAsync(stream);
    resetFiniteCheck(bad.data(), stream);
    leapfrog(a, stream);
    accumulateKineticEnergy(dv.data(), n, a.mass, nullptr, dEkin.data(), stream);
    checkFinite(dx.data(), df.data(), n, bad.data(), stream);
    HALOEX_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    cudaGraphExec_t exec = nullptr;
    HALOEX_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    // The thermostat changes lambda in device memory between replays.
    std::vector<Vec3f> x = x0, v = v0;
    for (int replay = 0; replay < 3; ++replay) {
        const float lambda = 1.0f - 0.01f * replay;
        cuda::copyToDeviceNow(dLambda.data(), &lambda, sizeof(float));
        HALOEX_CUDA_CHECK(cudaGraphLaunch(exec, stream));
        HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
        for (int i = 0; i < n; ++i) {
            for (int d = 0; d < 3; ++d) {
                v[i][d] = lambda * v[i][d] + f[i][d] * (a.invMass * a.dt);
                x[i][d] = x[i][d] + v[i][d] * a.dt;
            }
        }
        SCOPED_TRACE(fmt::format("replay {}", replay));
        expectClose(download(dv, n), v, 1e-5, "velocities");
        expectClose(download(dx, n), x, 1e-5, "positions");
        EXPECT_EQ(download(bad, 1)[0], kAllFinite);
    }
    HALOEX_CUDA_CHECK(cudaGraphExecDestroy(exec));
    HALOEX_CUDA_CHECK(cudaGraphDestroy(graph));
}
