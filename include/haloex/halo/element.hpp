#pragma once
/// @file
/// What the halo operations need to know about an element type T of a
/// user's per-atom (or per-cell) array.
///
/// gather moves any trivially copyable T as bytes. scatterAdd and the
/// periodic shift of gather must do arithmetic, so they need T to be an
/// array of `count` scalars of one arithmetic type, added component by
/// component (the same order, so the same bits, on every backend):
///   - arithmetic scalars: float, double, std::int32_t, std::int64_t,
///     std::uint32_t, std::uint64_t;
///   - structs with members x, y, z (and optionally w) of one of those types
///     and no padding: haloex::Vec3<float|double>, CUDA's float3, float4,
///     double3, double4, int4, ...;
///   - std::array<S, N> of one of those scalars;
///   - a type of your own: specialise haloex::ElementComponents, e.g.
///       template <> struct haloex::ElementComponents<MyForce> {
///           using Scalar = double;
///           static constexpr int count = 4;   // sizeof(MyForce) == 4 * sizeof(double)
///       };
/// The periodic shift (gather with PeriodicShift) adds to component `dim` of
/// a floating-point element with at least three components.
#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace haloex {

/// The scalar types the device kernels are instantiated for.
enum class ScalarKind : std::uint8_t { Float32, Float64, Int32, Int64, UInt32, UInt64 };

/// Whether S is one of the scalar types of ScalarKind.
template <class S>
inline constexpr bool isHaloScalar =
    std::is_same_v<S, float> || std::is_same_v<S, double> || std::is_same_v<S, std::int32_t> ||
    std::is_same_v<S, std::int64_t> || std::is_same_v<S, std::uint32_t> || std::is_same_v<S, std::uint64_t>;

/// The ScalarKind of S (a halo scalar; anything else does not compile).
template <class S>
constexpr ScalarKind scalarKindOf() {
    static_assert(isHaloScalar<S>, "halo scalars are float, double and 32/64-bit (un)signed integers");
    if constexpr (std::is_same_v<S, float>) return ScalarKind::Float32;
    else if constexpr (std::is_same_v<S, double>) return ScalarKind::Float64;
    else if constexpr (std::is_same_v<S, std::int32_t>) return ScalarKind::Int32;
    else if constexpr (std::is_same_v<S, std::int64_t>) return ScalarKind::Int64;
    else if constexpr (std::is_same_v<S, std::uint32_t>) return ScalarKind::UInt32;
    else return ScalarKind::UInt64;
}

// clang-format 14 puts the && after a requires-expression on a line of its
// own, at column 0: these concepts keep their layout by hand.
// clang-format off
namespace detail {
template <class T>
concept HasXYZ = requires(const T& t) {
    t.x;
    t.y;
    t.z;
}
&&std::is_same_v<std::remove_cvref_t<decltype(std::declval<T>().x)>,
                 std::remove_cvref_t<decltype(std::declval<T>().y)>>&&
    std::is_same_v<std::remove_cvref_t<decltype(std::declval<T>().x)>,
                   std::remove_cvref_t<decltype(std::declval<T>().z)>>;
template <class T>
concept HasW = requires(const T& t) {
    t.w;
};
}  // namespace detail
// clang-format on

/// Primary template: not an array of scalars (gather still works; scatterAdd
/// and the periodic shift do not compile, and say so).
template <class T>
struct ElementComponents {
    static constexpr bool known = false;  ///< no components known
};

/// A halo scalar: one component.
template <class T>
    requires isHaloScalar<T>
struct ElementComponents<T> {
    using Scalar = T;                ///< the component type
    static constexpr int count = 1;  ///< components per element
};

/// A struct with x, y, z of one scalar type (float3, Vec3<T>, ...): three.
template <class T>
    requires(!isHaloScalar<T> && detail::HasXYZ<T> && !detail::HasW<T>)
struct ElementComponents<T> {
    using Scalar = std::remove_cvref_t<decltype(std::declval<T>().x)>;  ///< the component type
    static constexpr int count = 3;                                     ///< components per element
};

/// A struct with x, y, z and w (float4, ...): four.
template <class T>
    requires(!isHaloScalar<T> && detail::HasXYZ<T> && detail::HasW<T>)
struct ElementComponents<T> {
    using Scalar = std::remove_cvref_t<decltype(std::declval<T>().x)>;  ///< the component type
    static constexpr int count = 4;                                     ///< components per element
};

/// std::array<S, N>: N components.
template <class S, std::size_t N>
struct ElementComponents<std::array<S, N>> {
    using Scalar = S;                                  ///< the component type
    static constexpr int count = static_cast<int>(N);  ///< components per element
};

// Laid out by hand (as detail::HasXYZ).
// clang-format off
/// T is an array of ElementComponents<T>::count halo scalars, without padding.
template <class T>
concept ComponentWise = requires {
    typename ElementComponents<T>::Scalar;
    ElementComponents<T>::count;
}
&&isHaloScalar<typename ElementComponents<T>::Scalar> &&
    sizeof(T) == ElementComponents<T>::count * sizeof(typename ElementComponents<T>::Scalar);

/// A coordinate: floating-point components, at least x, y, z.
template <class T>
concept CoordinateLike = ComponentWise<T> && std::is_floating_point_v<typename ElementComponents<T>::Scalar> &&
    (ElementComponents<T>::count >= 3);
// clang-format on

/// The run-time description the type-erased implementation works with.
struct ElementLayout {
    std::size_t bytes = 0;                    ///< sizeof(T)
    ScalarKind scalar = ScalarKind::Float32;  ///< the components' type
    int components = 0;                       ///< 0: not component-wise (gather only)
};

/// T's ElementLayout (T trivially copyable; components 0 unless ComponentWise<T>).
template <class T>
constexpr ElementLayout elementLayoutOf() {
    static_assert(std::is_trivially_copyable_v<T>, "halo elements must be trivially copyable");
    if constexpr (ComponentWise<T>) {
        return {sizeof(T), scalarKindOf<typename ElementComponents<T>::Scalar>(), ElementComponents<T>::count};
    } else {
        return {sizeof(T), ScalarKind::Float32, 0};
    }
}

}  // namespace haloex
