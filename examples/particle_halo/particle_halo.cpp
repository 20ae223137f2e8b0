// A user's own MD-like loop on haloex's halo API: the program owns its arrays
// (positions, velocities, forces as std::vector<Vec3d>), computes a toy
// pair force itself, and asks haloex only to move the halo:
//   gather(x, PeriodicShift{box})  fills the ghost positions (shifted images)
//   scatterAdd(f)                  sends the ghost forces home and adds them
// Ranks are threads of this process (the thread World); any backend works:
// host backends use the arrays directly, device backends get copies in
// CollectiveBuffers (a GPU code would keep its arrays there and run its
// kernels on them). At the first and the last step the forces are checked
// against a direct all-pairs sum on one rank.
//
//   particle_halo [--ranks N] [--backend reference|staged|ipc|nccl|nvshmem|auto]
//                 [--memory host|device] [--steps N] [--grid AxBxC]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "haloex/core/error.hpp"
#include "haloex/halo/backend.hpp"
#include "haloex/halo/collective_buffer.hpp"
#include "haloex/halo/particle_halo.hpp"
#include "haloex/plan/decomposition.hpp"
#include "haloex/runtime/plan_exchange.hpp"
#include "haloex/runtime/world.hpp"

namespace {

using haloex::Vec3d;

struct Settings {
    int ranks = 4;
    std::string backend = "reference";
    std::string memory = "host";
    int steps = 20;
    std::string grid;  // e.g. "2x2x1"; empty: haloex chooses for `ranks`
};

// The toy force: soft spheres, F = k (rc - r) / r * dx for r < rc.
constexpr double kStiffness = 50.0;  // kJ/mol/nm^2
constexpr double kCutoff = 0.5;      // nm
constexpr double kTimeStep = 0.001;  // ps (unit masses)

Vec3d pairForce(const Vec3d& dx) {
    const double r2 = haloex::norm2(dx);
    if (r2 >= kCutoff * kCutoff || r2 == 0.0) return {};
    const double r = std::sqrt(r2);
    return dx * (kStiffness * (kCutoff - r) / r);
}

// The user's force routine: every local pair the zone rule assigns to this
// rank, with Newton's third law on ghosts too (scatterAdd brings them home).
// Along decomposed dimensions the ghosts are shifted images already; along
// the others (one rank wide) the minimum image convention applies.
void computeForces(std::span<const Vec3d> x, std::span<Vec3d> f, const haloex::plan::ParticleHaloPlan& plan,
                   const haloex::plan::Decomposition& decomposition) {
    const Vec3d& box = decomposition.box().length;
    for (auto& v : f) v = Vec3d{};
    for (int i = 0; i < plan.numLocal; ++i) {
        for (int j = i + 1; j < plan.numLocal; ++j) {
            if (!haloex::plan::zonePairComputed(plan.zoneMask[i], plan.zoneMask[j])) continue;
            Vec3d dx = x[i] - x[j];
            for (int d = 0; d < 3; ++d) {
                if (!decomposition.grid().decomposed(d)) dx[d] -= box[d] * std::round(dx[d] / box[d]);
            }
            const Vec3d fij = pairForce(dx);
            f[i] += fij;
            f[j] -= fij;
        }
    }
}

// The check: every atom's force from all pairs of minimum images.
std::vector<Vec3d> directForces(const std::vector<Vec3d>& x, const Vec3d& box) {
    std::vector<Vec3d> f(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
        for (std::size_t j = i + 1; j < x.size(); ++j) {
            Vec3d dx = x[i] - x[j];
            for (int d = 0; d < 3; ++d) dx[d] -= box[d] * std::round(dx[d] / box[d]);
            const Vec3d fij = pairForce(dx);
            f[i] += fij;
            f[j] -= fij;
        }
    }
    return f;
}

// The halo operations on the user's host arrays: directly for host backends,
// through a copy in the backend's memory for device backends.
class UserArrays {
public:
    UserArrays(haloex::runtime::World& world, haloex::transport::BlockTransport& transport, std::size_t n)
        : device_(transport.memorySpace() == haloex::transport::MemorySpace::Device),
          x_(haloex::allocateCollective<Vec3d>(world, transport, n, "positions")),
          f_(haloex::allocateCollective<Vec3d>(world, transport, n, "forces")) {}

    void gatherPositions(haloex::ParticleHalo& halo, std::vector<Vec3d>& x, const haloex::plan::Box& box) {
        if (!device_) return halo.gather(x.data(), haloex::PeriodicShift{box});
        x_.copyFromHost(x.data(), x.size());
        halo.gather(x_.data(), haloex::PeriodicShift{box});
        x_.copyToHost(x.data(), x.size());
    }
    void scatterAddForces(haloex::ParticleHalo& halo, std::vector<Vec3d>& f) {
        if (!device_) return halo.scatterAdd(f.data());
        f_.copyFromHost(f.data(), f.size());
        halo.scatterAdd(f_.data());
        f_.copyToHost(f.data(), f.size());
    }

private:
    bool device_;
    haloex::CollectiveBuffer<Vec3d> x_, f_;
};

Settings parse(int argc, char** argv) {
    Settings s;
    for (int a = 1; a < argc; ++a) {
        const std::string_view arg = argv[a];
        const auto value = [&]() -> std::string {
            if (a + 1 >= argc) haloex::throwError(haloex::ErrorKind::InvalidInput, std::string(arg) + " needs a value");
            return argv[++a];
        };
        if (arg == "--ranks") s.ranks = std::stoi(value());
        else if (arg == "--backend") s.backend = value();
        else if (arg == "--memory") s.memory = value();
        else if (arg == "--steps") s.steps = std::stoi(value());
        else if (arg == "--grid") s.grid = value();
        else haloex::throwError(haloex::ErrorKind::InvalidInput, "unknown option " + std::string(arg));
    }
    return s;
}

}  // namespace

int main(int argc, char** argv) try {
    const Settings settings = parse(argc, argv);
    const haloex::Backend backend = haloex::parseBackend(settings.backend);
    if (const std::string why = haloex::unavailableReason(backend); !why.empty()) {
        std::printf("backend %s is not in this build: %s\n", settings.backend.c_str(), why.c_str());
        return 77;  // ctest: skipped
    }
    if (settings.memory == "device") {
        if (const std::string why = haloex::deviceUnavailableReason(); !why.empty()) {
            std::printf("device memory cannot be used here: %s\n", why.c_str());
            return 77;
        }
    }

    // The system: atoms on a jittered lattice in a periodic box.
    haloex::plan::DecompositionSpec spec;
    spec.box.length = {3.0, 2.4, 2.4};
    spec.rc = kCutoff;
    spec.rlist = kCutoff + 0.1;  // a Verlet buffer: atoms may move a little before a new plan is needed
    spec.grid = settings.grid.empty() ? haloex::plan::chooseRankGrid(settings.ranks, spec.box, spec.rc, spec.rlist)
                                      : haloex::plan::parseRankGrid(settings.grid);
    if (spec.grid.size() != settings.ranks) {
        haloex::throwError(haloex::ErrorKind::InvalidInput, "--grid " + settings.grid + " does not have --ranks " +
                                                                std::to_string(settings.ranks) + " cells");
    }
    const haloex::plan::Decomposition decomposition(spec);
    std::vector<Vec3d> all;
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> jitter(-0.05, 0.05);
    for (double x = 0.1; x < 3.0; x += 0.3)
        for (double y = 0.1; y < 2.4; y += 0.3)
            for (double z = 0.1; z < 2.4; z += 0.3) all.push_back({x + jitter(rng), y + jitter(rng), z + jitter(rng)});
    haloex::plan::wrapPositions(all, spec.box);
    const auto owned = haloex::plan::partitionAtoms(decomposition, all);

    std::vector<double> worstError(static_cast<std::size_t>(settings.ranks), 0.0);
    haloex::runtime::runInProcess(settings.ranks, [&](haloex::runtime::World& world) {
        const int rank = world.rank();
        // The user's own arrays: home atoms first, ghost slots after them.
        std::vector<int> ids = owned[static_cast<std::size_t>(rank)];
        std::vector<Vec3d> home;
        for (int id : ids) home.push_back(all[static_cast<std::size_t>(id)]);
        const auto built = haloex::runtime::buildParticlePlan(decomposition, home, world);
        const auto& plan = built.plan;

        haloex::transport::TransportOptions options;
        options.memorySpace =
            settings.memory == "device" ? haloex::transport::MemorySpace::Device : haloex::transport::MemorySpace::Host;
        options.allowSharedGpus = true;  // thread ranks share the process's GPU
        auto transport = haloex::makeTransport(backend, world, options);
        haloex::ParticleHalo halo(*transport, plan);
        UserArrays arrays(world, *transport, static_cast<std::size_t>(plan.numLocal));

        const auto n = static_cast<std::size_t>(plan.numLocal);
        std::vector<Vec3d> x(n), v(n), f(n);
        std::copy(home.begin(), home.end(), x.begin());

        const auto checkForces = [&] {
            // Everyone's positions and home forces, by global id, summed over the ranks.
            std::vector<double> packed(6 * all.size(), 0.0);
            for (int i = 0; i < plan.numHome; ++i) {
                for (int d = 0; d < 3; ++d) {
                    packed[6 * ids[i] + d] = x[i][d];
                    packed[6 * ids[i] + 3 + d] = f[i][d];
                }
            }
            world.allReduce(packed, haloex::runtime::ReduceOp::Sum);
            std::vector<Vec3d> positions(all.size());
            for (std::size_t g = 0; g < all.size(); ++g)
                positions[g] = {packed[6 * g], packed[6 * g + 1], packed[6 * g + 2]};
            const auto direct = directForces(positions, spec.box.length);
            for (std::size_t g = 0; g < all.size(); ++g) {
                for (int d = 0; d < 3; ++d) {
                    const double err = std::abs(packed[6 * g + 3 + d] - direct[g][d]);
                    worstError[rank] = std::max(worstError[rank], err / std::max(1.0, std::abs(direct[g][d])));
                }
            }
        };

        for (int step = 0; step < settings.steps; ++step) {
            arrays.gatherPositions(halo, x, spec.box);  // ghosts: the owners' positions, shifted
            computeForces(x, f, plan, decomposition);   // the user's own kernel
            arrays.scatterAddForces(halo, f);           // ghost forces home, added
            if (step == 0 || step == settings.steps - 1) checkForces();
            for (int i = 0; i < plan.numHome; ++i) {  // the user's own integrator
                v[i] += f[i] * kTimeStep;
                x[i] += v[i] * kTimeStep;
            }
        }
    });

    double worst = 0.0;
    for (double e : worstError) worst = std::max(worst, e);
    std::printf("%zu atoms on %d ranks (grid %s), backend %s in %s memory, %d steps: worst force error %.2e\n",
                all.size(), settings.ranks, spec.grid.toString().c_str(), settings.backend.c_str(),
                settings.memory.c_str(), settings.steps, worst);
    if (worst > 1e-9) {
        std::printf("FAILED: the halo forces differ from the direct sum\n");
        return 1;
    }
    std::printf("forces match the direct sum\n");
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "particle_halo: %s\n", e.what());
    return 1;
}
