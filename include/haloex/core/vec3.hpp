#pragma once
/// @file
/// A small 3-vector usable on host and device. Vec3<float> has the layout of
/// CUDA's float3 (12 bytes, no padding), so device arrays can be viewed as either.
#include <cmath>

#if defined(__CUDACC__)
/// Marks a function callable on the host and, under nvcc, on the device.
#define HALOEX_HD __host__ __device__
#else
#define HALOEX_HD
#endif

namespace haloex {

/// Three components of type T (x, y, z), with the arithmetic an MD code needs.
template <class T>
struct Vec3 {
    T x{};  ///< first component
    T y{};  ///< second component
    T z{};  ///< third component

    /// Component `d` (0: x, 1: y, 2: z).
    HALOEX_HD constexpr T& operator[](int d) { return d == 0 ? x : (d == 1 ? y : z); }
    /// Component `d` (0: x, 1: y, 2: z).
    HALOEX_HD constexpr const T& operator[](int d) const { return d == 0 ? x : (d == 1 ? y : z); }

    /// The same vector in another precision (each component cast).
    template <class U>
    HALOEX_HD constexpr explicit operator Vec3<U>() const {
        return {static_cast<U>(x), static_cast<U>(y), static_cast<U>(z)};
    }
    /// Component-wise sum.
    HALOEX_HD constexpr Vec3& operator+=(const Vec3& o) {
        x += o.x;
        y += o.y;
        z += o.z;
        return *this;
    }
    /// Component-wise difference.
    HALOEX_HD constexpr Vec3& operator-=(const Vec3& o) {
        x -= o.x;
        y -= o.y;
        z -= o.z;
        return *this;
    }
    /// Every component times `s`.
    HALOEX_HD constexpr Vec3& operator*=(T s) {
        x *= s;
        y *= s;
        z *= s;
        return *this;
    }
    /// Component-wise sum.
    friend HALOEX_HD constexpr Vec3 operator+(Vec3 a, const Vec3& b) { return a += b; }
    /// Component-wise difference.
    friend HALOEX_HD constexpr Vec3 operator-(Vec3 a, const Vec3& b) { return a -= b; }
    /// Every component times `s`.
    friend HALOEX_HD constexpr Vec3 operator*(Vec3 a, T s) { return a *= s; }
    /// Every component times `s`.
    friend HALOEX_HD constexpr Vec3 operator*(T s, Vec3 a) { return a *= s; }
    /// Every component negated.
    friend HALOEX_HD constexpr Vec3 operator-(const Vec3& a) { return {-a.x, -a.y, -a.z}; }
    /// Equal component by component (bitwise for finite values).
    friend HALOEX_HD constexpr bool operator==(const Vec3& a, const Vec3& b) {
        return a.x == b.x && a.y == b.y && a.z == b.z;
    }
};

/// The scalar product.
template <class T>
HALOEX_HD constexpr T dot(const Vec3<T>& a, const Vec3<T>& b) {
    return a.x * b.x + a.y * b.y + a.z * b.z;
}
/// The squared length.
template <class T>
HALOEX_HD constexpr T norm2(const Vec3<T>& a) {
    return dot(a, a);
}

/// Whether every component is finite (host only).
template <class T>
inline bool isFinite(const Vec3<T>& a) {
    return std::isfinite(a.x) && std::isfinite(a.y) && std::isfinite(a.z);
}

using Vec3f = Vec3<float>;   ///< single precision: the layout of CUDA's float3
using Vec3d = Vec3<double>;  ///< double precision
static_assert(sizeof(Vec3f) == 12, "Vec3<float> must match float3");

}  // namespace haloex
