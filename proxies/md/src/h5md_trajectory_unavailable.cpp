// Built without HDF5: no H5MD trajectories. haloex-md refuses --traj *.h5
// with this reason while it resolves its options (resolveOptions), before
// anything runs or is written.
#include <fmt/format.h>

#include "haloex/core/error.hpp"
#include "haloex/md/h5md_trajectory.hpp"

namespace haloex::md {

struct H5mdTrajectory::Impl {
    std::string path;
};

bool h5mdAvailable() { return false; }

std::string h5mdUnavailableReason() {
    return "this haloex-md was built without HDF5, so it cannot write H5MD (haloex-md --version says so). Install "
           "the HDF5 C library (Debian: apt-get install libhdf5-dev; scripts/setup.sh does) and configure again, or "
           "write a .gro trajectory (--traj NAME.gro)";
}

H5mdTrajectory::H5mdTrajectory(const std::string& path, const std::string& role, Mode, std::int64_t) {
    throwError(ErrorKind::InvalidInput, fmt::format("{} {}: {}", role, path, h5mdUnavailableReason()));
}

H5mdTrajectory::~H5mdTrajectory() = default;

// Never reached: the constructor always throws.
const std::string& H5mdTrajectory::path() const { return impl_->path; }
std::int64_t H5mdTrajectory::atoms() const { return 0; }
std::int64_t H5mdTrajectory::frames() const { return 0; }
std::int64_t H5mdTrajectory::stepOf(std::int64_t) const { return -1; }
std::uint64_t H5mdTrajectory::positionBytes() const { return 0; }
std::uint64_t H5mdTrajectory::positionTailChecksum(std::uint64_t, std::uint64_t) const { return 0; }
void H5mdTrajectory::append(std::int64_t, double, const std::array<double, 3>&, std::span<const Vec3d>) {}
void H5mdTrajectory::truncateFrames(std::int64_t) {}

}  // namespace haloex::md
