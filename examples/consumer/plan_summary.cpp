// Prints the halo plan of every rank of a small decomposition, built in one
// process with the reference transport's planner: a minimal haloex client.
#include <haloex/plan/particle_plan.hpp>

#include <cstdio>
#include <random>
#include <vector>

int main() {
    using namespace haloex;
    plan::DecompositionSpec spec;
    spec.box = plan::Box{{4.0, 4.0, 4.0}};
    spec.grid = plan::RankGrid({2, 2, 1});
    spec.rc = 0.9;
    spec.rlist = 1.0;
    const plan::Decomposition dd(spec);

    std::mt19937 rng(1);
    std::uniform_real_distribution<double> u(0.0, 4.0);
    std::vector<Vec3d> atoms(1000);
    for (auto& a : atoms) a = {u(rng), u(rng), u(rng)};
    const auto owners = plan::partitionAtoms(dd, atoms);
    std::vector<std::vector<Vec3d>> home(owners.size());
    for (std::size_t r = 0; r < owners.size(); ++r)
        for (int i : owners[r]) home[r].push_back(atoms[i]);

    const auto plans = plan::buildParticlePlansInProcess(dd, home);
    int halo = 0;
    for (const auto& p : plans.plans) {
        std::printf("rank %d: %d home, %d halo atoms in %zu pulses\n", p.rank, p.numHome, p.numHalo(), p.pulses.size());
        halo += p.numHalo();
    }
    return halo > 0 ? 0 : 1;
}
