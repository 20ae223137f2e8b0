#include "haloex/plan/box.hpp"

#include <cmath>
#include <fmt/format.h>

#include "haloex/core/error.hpp"

namespace haloex::plan {

void Box::validate() const {
    static constexpr const char* kNames = "xyz";
    for (int d = 0; d < 3; ++d) {
        if (!std::isfinite(length[d]) || length[d] <= 0.0) {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("box length along {} is {} nm; every box length must be a positive, finite number",
                                   kNames[d], length[d]));
        }
    }
}

Vec3d wrapIntoBox(const Vec3d& x, const Box& box, const char* what) {
    if (!isFinite(x)) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("{} has a non-finite coordinate ({}, {}, {}); check the input or the preceding step",
                               what, x.x, x.y, x.z));
    }
    Vec3d w = x;
    for (int d = 0; d < 3; ++d) {
        const double L = box.length[d];
        w[d] -= L * std::floor(w[d] / L);
        // floor() can leave exactly L for tiny negative inputs.
        if (w[d] >= L) w[d] -= L;
        if (w[d] < 0.0) w[d] = 0.0;
    }
    return w;
}

}  // namespace haloex::plan

namespace haloex::plan {

void wrapPositions(std::span<Vec3d> positions, const Box& box) {
    for (std::size_t i = 0; i < positions.size(); ++i) {
        if (!isFinite(positions[i])) {
            const std::string what = fmt::format("atom {}", i);
            wrapIntoBox(positions[i], box, what.c_str());  // throws with the atom named
        }
        positions[i] = wrapIntoBox(positions[i], box);
    }
}

}  // namespace haloex::plan
