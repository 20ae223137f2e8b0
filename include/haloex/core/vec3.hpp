#pragma once
// A small 3-vector usable on host and device. Vec3<float> has the layout of
// CUDA's float3 (12 bytes, no padding), so device arrays can be viewed as either.
#include <cmath>

#if defined(__CUDACC__)
#define HALOEX_HD __host__ __device__
#else
#define HALOEX_HD
#endif

namespace haloex {

template <class T>
struct Vec3 {
    T x{}, y{}, z{};

    HALOEX_HD constexpr T& operator[](int d) { return d == 0 ? x : (d == 1 ? y : z); }
    HALOEX_HD constexpr const T& operator[](int d) const { return d == 0 ? x : (d == 1 ? y : z); }

    template <class U>
    HALOEX_HD constexpr explicit operator Vec3<U>() const {
        return {static_cast<U>(x), static_cast<U>(y), static_cast<U>(z)};
    }
    HALOEX_HD constexpr Vec3& operator+=(const Vec3& o) {
        x += o.x;
        y += o.y;
        z += o.z;
        return *this;
    }
    HALOEX_HD constexpr Vec3& operator-=(const Vec3& o) {
        x -= o.x;
        y -= o.y;
        z -= o.z;
        return *this;
    }
    HALOEX_HD constexpr Vec3& operator*=(T s) {
        x *= s;
        y *= s;
        z *= s;
        return *this;
    }
    friend HALOEX_HD constexpr Vec3 operator+(Vec3 a, const Vec3& b) { return a += b; }
    friend HALOEX_HD constexpr Vec3 operator-(Vec3 a, const Vec3& b) { return a -= b; }
    friend HALOEX_HD constexpr Vec3 operator*(Vec3 a, T s) { return a *= s; }
    friend HALOEX_HD constexpr Vec3 operator*(T s, Vec3 a) { return a *= s; }
    friend HALOEX_HD constexpr Vec3 operator-(const Vec3& a) { return {-a.x, -a.y, -a.z}; }
    friend HALOEX_HD constexpr bool operator==(const Vec3& a, const Vec3& b) {
        return a.x == b.x && a.y == b.y && a.z == b.z;
    }
};

template <class T>
HALOEX_HD constexpr T dot(const Vec3<T>& a, const Vec3<T>& b) {
    return a.x * b.x + a.y * b.y + a.z * b.z;
}
template <class T>
HALOEX_HD constexpr T norm2(const Vec3<T>& a) {
    return dot(a, a);
}

template <class T>
inline bool isFinite(const Vec3<T>& a) {
    return std::isfinite(a.x) && std::isfinite(a.y) && std::isfinite(a.z);
}

using Vec3f = Vec3<float>;
using Vec3d = Vec3<double>;
static_assert(sizeof(Vec3f) == 12, "Vec3<float> must match float3");

}  // namespace haloex
