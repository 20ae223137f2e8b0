// haloex-plan: the halo plan the planner builds for a system and a rank grid,
// as JSON, without a GPU or MPI. It builds the lattice start haloex-md would
// (same atoms, seed and density), partitions it over the grid and runs the
// planner for every rank in this one process (buildParticlePlansInProcess).
// The scaling model (bench/model.py) reads the pulses and halo volumes from it.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "haloex/build_info.hpp"
#include "haloex/core/error.hpp"
#include "haloex/md/forcefield.hpp"
#include "haloex/md/system.hpp"
#include "haloex/plan/decomposition.hpp"
#include "haloex/plan/particle_plan.hpp"

namespace {

using namespace haloex;

struct PlanOptions {
    int atoms = 22500;
    int ranks = 0;
    std::string grid = "auto";
    double rc = 0.9;
    double rlist = 0.985;
    int alignment = 4;  // GPU transports: receive slots start at multiples of 4 atoms
    std::uint64_t seed = 2026;
    bool noPruneCorners = false;  // DecompositionSpec::pruneCorners off (the ablation)
    bool perRank = false;
};

std::string intList(const std::vector<int>& v) {
    std::string s = "[";
    for (std::size_t i = 0; i < v.size(); ++i) s += fmt::format("{}{}", i ? ", " : "", v[i]);
    return s + "]";
}

struct Stats {
    int max = 0;
    double mean = 0;
};

template <class F>
Stats statsOver(const std::vector<plan::ParticleHaloPlan>& plans, F value) {
    Stats s;
    for (const auto& p : plans) {
        const int v = value(p);
        s.max = std::max(s.max, v);
        s.mean += v;
    }
    s.mean /= std::max<std::size_t>(1, plans.size());
    return s;
}

void printPlan(const PlanOptions& o, const plan::Decomposition& dd, const plan::InProcessPlans& built) {
    const auto& plans = built.plans;
    const auto& spec = dd.spec();
    const int numPulses = dd.totalPulses();
    std::cout << "{\n";
    std::cout << fmt::format(" \"program\": \"haloex-plan\",\n \"atoms\": {},\n \"ranks\": {},\n", o.atoms,
                             dd.grid().size());
    std::cout << fmt::format(" \"grid\": \"{}\",\n", dd.grid().toString());
    std::cout << fmt::format(" \"box_nm\": [{:.6f}, {:.6f}, {:.6f}],\n", spec.box.length.x, spec.box.length.y,
                             spec.box.length.z);
    std::cout << fmt::format(" \"rc\": {},\n \"rlist\": {},\n \"alignment\": {},\n", spec.rc, spec.rlist, o.alignment);
    std::cout << fmt::format(" \"prune_corners\": {},\n", spec.pruneCorners);
    std::cout << fmt::format(" \"seed\": {},\n \"cell_width_nm\": [{:.6f}, {:.6f}, {:.6f}],\n", o.seed, dd.cellWidth(0),
                             dd.cellWidth(1), dd.cellWidth(2));
    std::cout << fmt::format(" \"pulses_per_dim\": [{}, {}, {}],\n \"pulses\": {},\n", dd.pulsesInDim(0),
                             dd.pulsesInDim(1), dd.pulsesInDim(2), numPulses);
    const Stats home = statsOver(plans, [](const auto& p) { return p.numHome; });
    const Stats halo = statsOver(plans, [](const auto& p) { return p.numHalo(); });
    const Stats peers = statsOver(plans, [](const auto& p) {
        std::set<int> s;
        for (const auto& q : p.pulses)
            if (q.sends()) s.insert(q.sendRank);
        return static_cast<int>(s.size());
    });
    std::cout << fmt::format(" \"home_atoms\": {{\"max\": {}, \"mean\": {:.1f}}},\n", home.max, home.mean);
    std::cout << fmt::format(" \"halo_atoms\": {{\"max\": {}, \"mean\": {:.1f}}},\n", halo.max, halo.mean);
    std::cout << fmt::format(" \"send_peers\": {{\"max\": {}, \"mean\": {:.2f}}},\n", peers.max, peers.mean);
    // Per pulse id (the same on every rank): what the largest and the mean rank send.
    std::cout << " \"pulse_summary\": [";
    for (int id = 0; id < numPulses; ++id) {
        const auto slot = dd.pulseOrder()[id];
        const Stats send = statsOver(plans, [id](const auto& p) { return p.pulses[id].sendCount(); });
        const Stats dep = statsOver(plans, [id](const auto& p) { return p.pulses[id].numDependent(); });
        std::set<int> waits;  // over every rank: an edge rank may have nothing to forward
        for (const auto& p : plans) waits.insert(p.pulses[id].waitsForward.begin(), p.pulses[id].waitsForward.end());
        std::cout << fmt::format(
            "{}\n  {{\"id\": {}, \"dim\": {}, \"stage\": {}, \"send_max\": {}, \"send_mean\": {:.1f}, "
            "\"dependent_max\": {}, \"dependent_mean\": {:.1f}, \"waits_forward\": {}}}",
            id ? "," : "", id, slot.dim, slot.stage, send.max, send.mean, dep.max, dep.mean,
            intList(std::vector<int>(waits.begin(), waits.end())));
    }
    std::cout << "\n ]";
    if (o.perRank) {
        std::cout << ",\n \"per_rank\": [";
        for (std::size_t r = 0; r < plans.size(); ++r) {
            const auto& p = plans[r];
            std::cout << fmt::format("{}\n  {{\"rank\": {}, \"home\": {}, \"halo\": {}, \"local\": {}, \"pulses\": [",
                                     r ? "," : "", p.rank, p.numHome, p.numHalo(), p.numLocal);
            for (std::size_t i = 0; i < p.pulses.size(); ++i) {
                const auto& q = p.pulses[i];
                std::cout << fmt::format(
                    "{}{{\"id\": {}, \"send_rank\": {}, \"recv_rank\": {}, \"send\": {}, \"independent\": {}, "
                    "\"recv\": {}, \"waits_forward\": {}}}",
                    i ? ", " : "", q.id, q.sendRank, q.recvRank, q.sendCount(), q.numIndependent, q.recvCount,
                    intList(q.waitsForward));
            }
            std::cout << "]}";
        }
        std::cout << "\n ]";
    }
    std::cout << "\n}\n";
}

int run(const PlanOptions& o) {
    md::ForceField ff;
    ff.rc = o.rc;
    const md::System system = md::makeLatticeSystem(o.atoms, o.seed, 300.0, ff);
    plan::DecompositionSpec spec;
    spec.box = system.box;
    spec.rc = o.rc;
    spec.rlist = o.rlist;
    spec.pruneCorners = !o.noPruneCorners;
    if (o.grid == "auto") {
        if (o.ranks < 1) throwError(ErrorKind::InvalidInput, "give --ranks N (N >= 1) or --grid NXxNYxNZ");
        spec.grid = plan::chooseRankGrid(o.ranks, spec.box, o.rc, o.rlist);
    } else {
        spec.grid = plan::parseRankGrid(o.grid);
        if (o.ranks > 0) plan::requireGridMatchesRanks(spec.grid, o.ranks);
    }
    const plan::Decomposition dd(spec);
    std::vector<Vec3d> positions = system.positions;
    plan::wrapPositions(positions, spec.box);
    const auto owners = plan::partitionAtoms(dd, positions);
    std::vector<std::vector<Vec3d>> home(owners.size());
    for (std::size_t r = 0; r < owners.size(); ++r) {
        home[r].reserve(owners[r].size());
        for (int i : owners[r]) home[r].push_back(positions[i]);
    }
    const plan::InProcessPlans built = plan::buildParticlePlansInProcess(dd, home, o.alignment);
    printPlan(o, dd, built);
    return 0;
}

}  // namespace

// What throws outside main's own try (CLI11's set-up, starting MPI) ends the
// program through std::terminate, with the exception's message: as intended.
// NOLINTNEXTLINE(bugprone-exception-escape)
int main(int argc, char** argv) {
    CLI::App app{
        "haloex-plan: the halo plan (pulses, halo volumes, dependencies) of haloex-md's lattice start on a rank "
        "grid, as JSON on stdout. CPU only: every rank's plan is built in this process."};
    PlanOptions o;
    app.add_option("--atoms", o.atoms, "Atoms of the lattice start (even, >= 1000; density 100/nm^3)")
        ->capture_default_str();
    // Bounded: 2^31 - 1 ranks gave a grid of negative sizes, a million ran
    // for minutes; no run of this proxy comes near 65 536 ranks.
    app.add_option("--ranks", o.ranks,
                   "Ranks (1 to 65536); with --grid auto the planner chooses the grid (smallest halo)")
        ->check(CLI::Range(1, 65536));
    app.add_option("--grid", o.grid, "Rank grid NXxNYxNZ, or auto")->capture_default_str();
    app.add_option("--rc", o.rc, "Interaction cutoff (nm)")->capture_default_str();
    app.add_option("--rlist", o.rlist, "Pair-list cutoff = halo distance (nm)")->capture_default_str();
    app.add_option("--alignment", o.alignment, "Receive slots start at multiples of this many atoms (GPU: 4)")
        ->check(CLI::Range(1, 1024))
        ->capture_default_str();
    app.add_option("--seed", o.seed, "Seed of the lattice start (haloex-md's default)")->capture_default_str();
    app.add_flag("--no-prune-corners", o.noPruneCorners,
                 "Plan without corner and edge pruning: every pulse sends the whole slab within rlist of the "
                 "receiver's face (default: an atom that arrived through another dimension's pulse only within "
                 "rlist of the receiver's home cell)");
    app.add_flag("--per-rank", o.perRank, "Also list every rank's pulses");
    app.set_version_flag(
        "--version", [] { return haloex::buildDescription("haloex-plan"); },
        "Print the version and the build (commit, CUDA, MPI, NCCL, NVSHMEM) and exit");
    CLI11_PARSE(app, argc, argv);
    try {
        return run(o);
    } catch (const std::exception& e) {
        std::cerr << "haloex-plan: " << e.what() << "\n";
        return 1;
    }
}
