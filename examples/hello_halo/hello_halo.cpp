// The particle gather a newcomer writes first: atoms on a lattice in a periodic box, 4 thread
// ranks (or mpirun's); each rank's ghosts are its neighbours' atoms, shifted across the edges.
#include <cmath>
#include <cstdio>
#include <haloex/halo/backend.hpp>
#include <haloex/halo/particle_halo.hpp>
#include <haloex/runtime/launched_world.hpp>
#include <haloex/runtime/plan_exchange.hpp>
#include <vector>
using namespace haloex;

void hello(runtime::World& world) {
    plan::DecompositionSpec spec;
    spec.box.length = {4.0, 4.0, 4.0};
    spec.rc = 0.8, spec.rlist = 1.0;
    spec.grid = plan::chooseRankGrid(world.size(), spec.box, spec.rc, spec.rlist);
    const plan::Decomposition decomposition(spec);
    std::vector<Vec3d> lattice, x;  // 8 x 8 x 8 sites, 0.5 nm apart
    for (int i = 0; i < 512; ++i) lattice.push_back(Vec3d{i % 8 + 0.5, i / 8 % 8 + 0.5, i / 64 + 0.5} * 0.5);
    const auto owned = plan::partitionAtoms(decomposition, lattice);  // atom ids, by rank
    for (int i : owned[world.rank()]) x.push_back(lattice[i]);
    const plan::ParticleHaloPlan plan = runtime::buildParticlePlan(decomposition, x, world).plan;
    auto transport = makeTransport(Backend::Auto, world);  // host memory: reference or staged
    ParticleHalo halo(*transport, plan);
    x.resize(plan.numLocal);  // home atoms, then the ghost slots
    halo.gather(x.data(), PeriodicShift{spec.box});
    int offLattice = 0;
    for (int g = plan.numHome; g < plan.numLocal; ++g) {
        const Vec3d w = plan::wrapIntoBox(x[g], spec.box) * 2.0 - Vec3d{0.5, 0.5, 0.5};
        offLattice += w[0] != std::round(w[0]) || w[1] != std::round(w[1]) || w[2] != std::round(w[2]);
    }
    std::printf("rank %d of %d (%s): %d home atoms, %d ghosts, %d off the lattice\n", world.rank(), world.size(),
                transport->name().c_str(), plan.numHome, plan.numLocal - plan.numHome, offLattice);
}

int main() {
    const auto launched = runtime::startLaunchedWorld();  // mpirun's world, or none
    if (launched) hello(launched->world());
    else runtime::runInProcess(4, hello);
}
