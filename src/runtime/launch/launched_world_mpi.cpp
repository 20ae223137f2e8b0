// startLaunchedWorld() of a build with MPI (haloex_launch over haloex_mpi).
#include "haloex/runtime/launched_world.hpp"
#include "haloex/runtime/mpi_world.hpp"

namespace haloex::runtime {
namespace {

class MpiLaunchedWorld final : public LaunchedWorld {
public:
    World& world() override { return world_; }

private:
    MpiSession session_;  // first in, last out: the world needs MPI
    MpiWorld world_;
};

}  // namespace

std::unique_ptr<LaunchedWorld> startLaunchedWorld() {
    if (!launchedByMpiLauncher()) return nullptr;
    return std::make_unique<MpiLaunchedWorld>();
}

}  // namespace haloex::runtime
