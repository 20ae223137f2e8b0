// Conformance of the typed halo operations (halo/particle_halo.hpp) over
// every backend this build has: gather (with the periodic shift for
// coordinates) and scatterAdd on the user's own arrays -- held in
// CollectiveBuffers, so NVSHMEM's symmetric memory is exercised too -- must
// reproduce the reference backend bitwise, for several element types (3, 12,
// 16, 24 and 80 bytes; float, double, int32 and int64 components). The
// scatterAdd inputs are integers (also in floats), so the sums are exact in
// any order. The same for structured-grid fields (GridHalo on a 3D grid,
// periodic and open dimensions, self-exchange where a dimension has one
// rank; with edges and corners, and faces only, whose pulses all travel in
// one exchangeBlocks call). Ranks are threads of this process, or MPI ranks when ctest
// starts the *_np2/_np4/_np8 variants through mpi_gpu_launch; nvshmem runs
// only there (one PE per process). Device cases skip without a GPU; the
// staged backend in host memory runs anywhere.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <array>
#include <algorithm>
#include <cstdint>
#include <optional>
#include <functional>
#include <iostream>
#include <utility>
#include <memory>
#include <string>
#include <vector>

#include "haloex/config.hpp"
#include "haloex/core/error.hpp"
#include "haloex/halo/backend.hpp"
#include "haloex/halo/collective_buffer.hpp"
#include "haloex/halo/grid_halo.hpp"
#include "haloex/halo/particle_halo.hpp"
#include "haloex/plan/grid_plan.hpp"
#include "haloex/runtime/world.hpp"
#include "device_test_ranks.hpp"
#include "transport_check.hpp"

#if HALOEX_HAVE_CUDA
#include "haloex/cuda/device_buffer.hpp"
#include "haloex/cuda/device_select.hpp"
#endif

using namespace haloex;

namespace {

using testsupport::expectNoMismatches;
using testsupport::mpiWorld;
using testsupport::noGpuReason;

// ---- element types -----------------------------------------------------------------

struct Position4 {  // float4-like: x, y, z shifted, w carried
    float x, y, z, w;
};
struct Big {  // 80 bytes: far above the old 16-byte cap
    double v[9];
    std::int64_t k;
};
using Odd3 = testsupport::Odd3;
#if HALOEX_HAVE_CUDA
// CUDA's vector types are recognised as they are (halo/element.hpp).
static_assert(CoordinateLike<float3> && CoordinateLike<float4> && CoordinateLike<double3> && ComponentWise<int4>);
#endif
using Int3 = std::array<std::int32_t, 3>;

struct Fields {
    // gathered
    std::vector<Vec3f> xf;
    std::vector<Vec3d> xd;
    std::vector<Position4> x4;
    std::vector<std::int64_t> ids;
    std::vector<Odd3> tags;
    std::vector<Big> big;
    // scatter-added
    std::vector<Vec3f> f3;
    std::vector<double> fd;
    std::vector<std::int64_t> fi;
    std::vector<Int3> i3;
};

// An integer in [-1000, 1000] for (rank, atom, component).
int hashedInt(int rank, int atom, int component) {
    const std::uint64_t h =
        testsupport::splitmix64((static_cast<std::uint64_t>(rank) << 40) ^ (static_cast<std::uint64_t>(atom) << 3) ^
                                static_cast<std::uint64_t>(component));
    return static_cast<int>(h % 2001) - 1000;
}

Fields inputFields(const plan::ParticleHaloPlan& plan, const std::vector<Vec3d>& local) {
    const auto n = static_cast<std::size_t>(plan.numLocal);
    const float s = testsupport::kHaloSentinel;
    Fields in;
    in.xf.assign(n, Vec3f{s, s, s});
    in.xd.assign(n, Vec3d{s, s, s});
    in.x4.assign(n, Position4{s, s, s, s});
    in.ids.assign(n, -1);
    in.tags.assign(n, Odd3{{0xEE, 0xEE, 0xEE}});
    in.big.assign(n, Big{{s, s, s, s, s, s, s, s, s}, -1});
    in.f3.resize(n);
    in.fd.resize(n);
    in.fi.resize(n);
    in.i3.resize(n);
    const int r = plan.rank;
    for (int i = 0; i < plan.numLocal; ++i) {
        const auto k = static_cast<std::size_t>(i);
        if (i < plan.numHome) {
            in.xd[k] = local[k];
            in.xf[k] = static_cast<Vec3f>(local[k]);
            in.x4[k] = Position4{in.xf[k].x, in.xf[k].y, in.xf[k].z, static_cast<float>(i)};
            in.ids[k] = (std::int64_t{r} << 40) | i;
            in.tags[k] = Odd3{{static_cast<std::uint8_t>(r), static_cast<std::uint8_t>(i), 0x5A}};
            for (int c = 0; c < 9; ++c) in.big[k].v[c] = hashedInt(r, i, c) * 0.125;
            in.big[k].k = -in.ids[k];
        }
        in.f3[k] = Vec3f{static_cast<float>(hashedInt(r, i, 0)), static_cast<float>(hashedInt(r, i, 1)),
                         static_cast<float>(hashedInt(r, i, 2))};
        in.fd[k] = hashedInt(r, i, 3);
        in.fi[k] = hashedInt(r, i, 4) - (std::int64_t{1} << 45);
        in.i3[k] = Int3{hashedInt(r, i, 5), hashedInt(r, i, 6), hashedInt(r, i, 7)};
    }
    return in;
}

// ---- where the arrays live -----------------------------------------------------------

// Runs `op(pointer, stream)` on a copy of `v` in the halo's memory space (a
// CollectiveBuffer for the transport) and copies the result back into `v`.
// Collective (the buffer).
template <class T, class Op>
void applyInSpace(runtime::World& world, const transport::BlockTransport& t, std::vector<T>& v,
                  transport::StreamHandle stream, Op op) {
    auto buffer = allocateCollective<T>(world, t, v.size(), "a test field");
    buffer.copyFromHost(v.data(), v.size(), 0, stream);
    op(buffer.data(), stream);
    buffer.copyToHost(v.data(), v.size(), 0, stream);
}

// Every operation once, on this rank's fields.
Fields runHalo(runtime::World& world, transport::BlockTransport& t, const plan::ParticleHaloPlan& plan,
               const Fields& in, const plan::Box& box, transport::StreamHandle stream) {
    ParticleHalo halo(t, plan);
    Fields out = in;
    const PeriodicShift shift{box};
    const auto gather = [&](auto& v) {
        applyInSpace(world, t, v, stream, [&](auto* p, transport::StreamHandle s) { halo.gather(p, s); });
    };
    const auto gatherShifted = [&](auto& v) {
        applyInSpace(world, t, v, stream, [&](auto* p, transport::StreamHandle s) { halo.gather(p, shift, s); });
    };
    const auto scatterAdd = [&](auto& v) {
        applyInSpace(world, t, v, stream, [&](auto* p, transport::StreamHandle s) { halo.scatterAdd(p, s); });
    };
    gatherShifted(out.xf);
    gatherShifted(out.xd);
    gatherShifted(out.x4);
    gather(out.ids);
    gather(out.tags);
    gather(out.big);
    scatterAdd(out.f3);
    scatterAdd(out.fd);
    scatterAdd(out.fi);
    scatterAdd(out.i3);
    return out;
}

// Adds one comparison's finding (empty: none) to a rank's mismatch list.
void appendMismatch(std::string& all, const std::string& found) {
    if (!found.empty()) all += (all.empty() ? "" : "; ") + found;
}

std::string compareFields(const Fields& got, const Fields& want, int rank, const std::vector<plan::ZoneMask>& zones) {
    std::string all;
    const auto add = [&](const std::string& s) { appendMismatch(all, s); };
    add(testsupport::compareBitwise("gathered Vec3f coordinates", rank, got.xf, want.xf, zones));
    add(testsupport::compareBitwise("gathered Vec3d coordinates", rank, got.xd, want.xd, zones));
    add(testsupport::compareBitwise("gathered float4-like coordinates", rank, got.x4, want.x4, zones));
    add(testsupport::compareBitwise("gathered int64 ids", rank, got.ids, want.ids, zones));
    add(testsupport::compareBitwise("gathered 3-byte tags", rank, got.tags, want.tags, zones));
    add(testsupport::compareBitwise("gathered 80-byte records", rank, got.big, want.big, zones));
    add(testsupport::compareBitwise("scatter-added Vec3f", rank, got.f3, want.f3, zones));
    add(testsupport::compareBitwise("scatter-added double", rank, got.fd, want.fd, zones));
    add(testsupport::compareBitwise("scatter-added int64", rank, got.fi, want.fi, zones));
    add(testsupport::compareBitwise("scatter-added int32[3]", rank, got.i3, want.i3, zones));
    return all;
}

// ---- the reference ----------------------------------------------------------------------

struct Expected {
    std::vector<plan::ParticleHaloPlan> plans;
    std::vector<Fields> inputs, outputs;
};

Expected haloReference(const plan::Decomposition& d, const testsupport::Scenario& s, int alignment) {
    const auto home = testsupport::randomHomePositions(d, s);
    plan::InProcessPlans built = plan::buildParticlePlansInProcess(d, home, alignment);
    Expected e;
    e.plans = std::move(built.plans);
    const int n = d.grid().size();
    e.inputs.resize(static_cast<std::size_t>(n));
    e.outputs.resize(static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r) {
        e.inputs[static_cast<std::size_t>(r)] =
            inputFields(e.plans[static_cast<std::size_t>(r)], built.localPositions[static_cast<std::size_t>(r)]);
    }
    runtime::runInProcess(n, [&](runtime::World& w) {
        const auto r = static_cast<std::size_t>(w.rank());
        transport::TransportOptions host;
        host.memorySpace = transport::MemorySpace::Host;
        auto t = makeTransport(Backend::Reference, w, host);
        e.outputs[r] = runHalo(w, *t, e.plans[r], e.inputs[r], d.box(), nullptr);
    });
    return e;
}

// ---- the cases ------------------------------------------------------------------------

struct HaloCase {
    Backend backend;
    transport::MemorySpace space;
    std::string label() const {
        std::string name(toString(backend));
        std::replace(name.begin(), name.end(), '-', '_');  // test names are identifiers
        return name + (space == transport::MemorySpace::Host ? "_host" : "_device");
    }
};
void PrintTo(const HaloCase& c, std::ostream* os) { *os << c.label(); }

// From the registry: a backend added to the build is tested without a line
// here. Reference is the oracle.
std::vector<HaloCase> haloCases() {
    std::vector<HaloCase> cases;
    for (Backend b : availableBackends()) {
        if (b == Backend::Reference) continue;
        if (b == Backend::Staged) cases.push_back({b, transport::MemorySpace::Host});
        cases.push_back({b, transport::MemorySpace::Device});
    }
    return cases;
}

std::string cannotRunHere(const HaloCase& c) {
    if (c.space == transport::MemorySpace::Device) {
        if (std::string why = noGpuReason(); !why.empty()) return why;
    }
    if ((c.backend == Backend::Nvshmem || c.backend == Backend::NcclDevice) && !mpiWorld()) {
        return std::string(toString(c.backend)) +
               " needs one process per rank: it runs in the MPI variants (ctest -R test_particle_halo_device_np)";
    }
    return {};
}

// NCCL's refusal of ranks sharing a GPU: from the nccl transport (an NCCL
// error) or from the registry for nccl-device (invalid input, with the reason).
bool isSharedGpuRefusal(const Error& e) {
    return (e.kind() == ErrorKind::Nccl || e.kind() == ErrorKind::InvalidInput) &&
           std::string(e.what()).find("refuses two ranks on one GPU") != std::string::npos;
}

// The configurations a test ran and those refused, with the reasons: a test
// whose every configuration was refused compared nothing, and skips with them.
struct Tally {
    int ran = 0;
    std::string refused;
    void refuse(const std::string& what, const std::string& why) {
        refused += fmt::format("{} skipped: {}\n", what, why);
    }
};

// Runs `body` on this job's ranks; NCCL's refusal of ranks sharing a GPU
// comes back as the reason (the caller skips that configuration with it).
std::optional<std::string> runOnRanks(runtime::World* mpi, int numRanks,
                                      const std::function<void(runtime::World&)>& body) {
    return testsupport::runOnRanks(mpi, numRanks, body, isSharedGpuRefusal);
}

std::string runRank(runtime::World& world, const HaloCase& c, const plan::Box& box, const Expected& expected) {
    const auto r = static_cast<std::size_t>(world.rank());
    transport::TransportOptions options;
    options.memorySpace = c.space;
    options.allowSharedGpus = true;
    if (c.space == transport::MemorySpace::Host) {
        auto t = makeTransport(c.backend, world, options);
        const Fields got = runHalo(world, *t, expected.plans[r], expected.inputs[r], box, nullptr);
        return compareFields(got, expected.outputs[r], world.rank(), expected.plans[r].zoneMask);
    }
#if HALOEX_HAVE_CUDA
    cuda::selectDevice(world, /*allowSharedGpus=*/true);
    cuda::Stream stream;
    auto t = makeTransport(c.backend, world, options);
    const Fields got = runHalo(world, *t, expected.plans[r], expected.inputs[r], box, stream.get());
    return compareFields(got, expected.outputs[r], world.rank(), expected.plans[r].zoneMask);
#else
    (void)box;
    return "device memory without CUDA";
#endif
}

class ParticleHaloBackend : public ::testing::TestWithParam<HaloCase> {};

TEST_P(ParticleHaloBackend, GatherAndScatterAddMatchTheReferenceBitwise) {
    const HaloCase& c = GetParam();
    if (const std::string why = cannotRunHere(c); !why.empty()) GTEST_SKIP() << why;
    runtime::World* mpi = mpiWorld();
    const std::vector<int> rankCounts = mpi ? std::vector<int>{mpi->size()} : std::vector<int>{1, 2, 4};
    // nvshmem's bulk-copy transport wants receive slots aligned to 4 atoms.
    const int alignment = c.backend == Backend::Nvshmem ? 4 : 1;
    Tally tally;
    for (int numRanks : rankCounts) {
        const auto scenarios = testsupport::scenariosForRanks(numRanks);
        ASSERT_FALSE(scenarios.empty()) << "no decomposition scenario for " << numRanks << " ranks";
        for (const auto& s : scenarios) {
            SCOPED_TRACE(fmt::format("{} on grid {} ({})", c.label(), s.grid, mpi ? "MPI ranks" : "thread ranks"));
            const plan::Decomposition d = testsupport::makeDecomposition(s);
            const Expected expected = haloReference(d, s, alignment);
            std::vector<std::string> mismatches(static_cast<std::size_t>(numRanks));
            const auto refused = runOnRanks(mpi, numRanks, [&](runtime::World& w) {
                mismatches[static_cast<std::size_t>(w.rank())] = runRank(w, c, d.box(), expected);
            });
            if (refused) {
                tally.refuse(fmt::format("{} on {} ranks", s.grid, numRanks), *refused);
                continue;
            }
            ++tally.ran;
            expectNoMismatches(mismatches, mpi);
        }
    }
    if (tally.ran == 0) GTEST_SKIP() << tally.refused;
    std::cout << tally.refused;
}

// ---- structured grids -------------------------------------------------------------------

struct GridFields {
    std::vector<double> u;            // gathered
    std::vector<Odd3> tags;           // gathered, 3 bytes
    std::vector<std::int64_t> count;  // scatter-added
    std::vector<Vec3f> flux;          // scatter-added, integer-valued floats
};

GridFields gridInputs(const plan::GridHaloPlan& p) {
    const auto n = static_cast<std::size_t>(p.numLocal());
    GridFields in;
    in.u.resize(n);
    in.tags.resize(n);
    in.count.resize(n);
    in.flux.resize(n);
    for (int i = 0; i < p.numLocal(); ++i) {
        const auto k = static_cast<std::size_t>(i);
        in.u[k] = hashedInt(p.rank, i, 0) * 0.25;
        in.tags[k] = Odd3{{static_cast<std::uint8_t>(p.rank), static_cast<std::uint8_t>(i), 0x3C}};
        in.count[k] = hashedInt(p.rank, i, 1);
        in.flux[k] = Vec3f{static_cast<float>(hashedInt(p.rank, i, 2)), static_cast<float>(hashedInt(p.rank, i, 3)),
                           static_cast<float>(hashedInt(p.rank, i, 4))};
    }
    return in;
}

GridFields runGridHalo(runtime::World& world, transport::BlockTransport& t, const plan::GridHaloPlan& p,
                       const GridFields& in, transport::StreamHandle stream) {
    GridHalo halo(t, p);
    GridFields out = in;
    const auto gather = [&](auto& v) {
        applyInSpace(world, t, v, stream, [&](auto* ptr, transport::StreamHandle s) { halo.gather(ptr, s); });
    };
    const auto scatterAdd = [&](auto& v) {
        applyInSpace(world, t, v, stream, [&](auto* ptr, transport::StreamHandle s) { halo.scatterAdd(ptr, s); });
    };
    gather(out.u);
    gather(out.tags);
    scatterAdd(out.count);
    scatterAdd(out.flux);
    return out;
}

// A 3D grid with halo width 2, periodic along x and z, open along y; the
// rank grid for `ranks` (a dimension with one rank exchanges with itself).
plan::GridSpec gridSpecFor(int ranks) {
    plan::GridSpec spec;
    spec.cells = {12, 10, 8};
    spec.grid = plan::RankGrid(ranks == 8   ? plan::Int3{2, 2, 2}
                               : ranks == 4 ? plan::Int3{2, 2, 1}
                                            : plan::Int3{ranks, 1, 1});
    spec.haloWidth = 2;
    spec.periodic = {true, false, true};
    return spec;
}

TEST_P(ParticleHaloBackend, GridGatherAndScatterAddMatchTheReferenceBitwise) {
    const HaloCase& c = GetParam();
    if (const std::string why = cannotRunHere(c); !why.empty()) GTEST_SKIP() << why;
    runtime::World* mpi = mpiWorld();
    const std::vector<int> rankCounts = mpi ? std::vector<int>{mpi->size()} : std::vector<int>{1, 2, 4};
    Tally tally;
    // With edges and corners (a batch per dimension), and faces only (every pulse in one batch).
    std::vector<std::pair<int, bool>> runs;
    for (int n : rankCounts) {
        for (const bool edgesAndCorners : {true, false}) runs.emplace_back(n, edgesAndCorners);
    }
    for (const auto& [numRanks, edgesAndCorners] : runs) {
        plan::GridSpec spec = gridSpecFor(numRanks);
        spec.edgesAndCorners = edgesAndCorners;
        SCOPED_TRACE(fmt::format("{} on rank grid {}{}", c.label(), spec.grid.toString(),
                                 edgesAndCorners ? "" : ", faces only"));
        std::vector<plan::GridHaloPlan> plans;
        std::vector<GridFields> inputs, expected(static_cast<std::size_t>(numRanks));
        for (int r = 0; r < numRanks; ++r) {
            plans.push_back(plan::buildGridPlan(spec, r));
            inputs.push_back(gridInputs(plans.back()));
        }
        runtime::runInProcess(numRanks, [&](runtime::World& w) {
            const auto r = static_cast<std::size_t>(w.rank());
            transport::TransportOptions host;
            host.memorySpace = transport::MemorySpace::Host;
            auto t = makeTransport(Backend::Reference, w, host);
            expected[r] = runGridHalo(w, *t, plans[r], inputs[r], nullptr);
        });
        std::vector<std::string> mismatches(static_cast<std::size_t>(numRanks));
        const auto body = [&](runtime::World& w) {
            const auto r = static_cast<std::size_t>(w.rank());
            transport::TransportOptions options;
            options.memorySpace = c.space;
            options.allowSharedGpus = true;
            transport::StreamHandle stream = nullptr;
#if HALOEX_HAVE_CUDA
            std::unique_ptr<cuda::Stream> owned;
            if (c.space == transport::MemorySpace::Device) {
                cuda::selectDevice(w, true);
                owned = std::make_unique<cuda::Stream>();
                stream = owned->get();
            }
#endif
            auto t = makeTransport(c.backend, w, options);
            const GridFields got = runGridHalo(w, *t, plans[r], inputs[r], stream);
            const std::vector<plan::ZoneMask> all;  // no padding in grids
            std::string m;
            const auto add = [&](const std::string& s) { appendMismatch(m, s); };
            add(testsupport::compareBitwise("gathered double", w.rank(), got.u, expected[r].u, all));
            add(testsupport::compareBitwise("gathered 3-byte tags", w.rank(), got.tags, expected[r].tags, all));
            add(testsupport::compareBitwise("scatter-added int64", w.rank(), got.count, expected[r].count, all));
            add(testsupport::compareBitwise("scatter-added Vec3f", w.rank(), got.flux, expected[r].flux, all));
            mismatches[r] = m;
        };
        if (const auto refused = runOnRanks(mpi, numRanks, body)) {
            tally.refuse(spec.grid.toString(), *refused);
            continue;
        }
        ++tally.ran;
        expectNoMismatches(mismatches, mpi);
    }
    if (tally.ran == 0) GTEST_SKIP() << tally.refused;
    std::cout << tally.refused;
}

// Grid gathers one after another with no host wait between them: ipc's
// landing buffer halves (by call parity) wrap around several times while the
// unpacks of earlier calls, which read them in place, are still queued; one
// gather moves to a second stream and back (ordered by events, so NCCL sees
// its calls in order); a wider element type grows the landing buffer in
// between. Every field must match the reference bitwise.
struct BackToBackFields {
    std::vector<std::vector<double>> u;  // gathered one after another
    std::vector<Vec3d> wide;             // gathered between them (grows the buffers)
};

BackToBackFields backToBackInputs(const plan::GridHaloPlan& p, int fields) {
    const auto n = static_cast<std::size_t>(p.numLocal());
    BackToBackFields in;
    in.u.assign(static_cast<std::size_t>(fields), std::vector<double>(n));
    in.wide.resize(n);
    for (int i = 0; i < p.numLocal(); ++i) {
        const auto k = static_cast<std::size_t>(i);
        for (int f = 0; f < fields; ++f) in.u[static_cast<std::size_t>(f)][k] = hashedInt(p.rank, i, 10 + f) * 0.5;
        in.wide[k] =
            Vec3d{hashedInt(p.rank, i, 5) * 0.25, hashedInt(p.rank, i, 6) * 0.25, hashedInt(p.rank, i, 7) * 1.0};
    }
    return in;
}

// Both back-to-back tests' plans, inputs and the reference's ordinary
// gathers of every field (and of the wide one, where `gatherWide`), in turn.
struct BackToBackReference {
    std::vector<plan::GridHaloPlan> plans;
    std::vector<BackToBackFields> inputs, expected;
};

BackToBackReference backToBackReference(const plan::GridSpec& spec, int numRanks, int fields, bool gatherWide) {
    BackToBackReference ref;
    ref.expected.resize(static_cast<std::size_t>(numRanks));
    for (int r = 0; r < numRanks; ++r) {
        ref.plans.push_back(plan::buildGridPlan(spec, r));
        ref.inputs.push_back(backToBackInputs(ref.plans.back(), fields));
    }
    runtime::runInProcess(numRanks, [&](runtime::World& w) {
        const auto r = static_cast<std::size_t>(w.rank());
        transport::TransportOptions host;
        host.memorySpace = transport::MemorySpace::Host;
        auto t = makeTransport(Backend::Reference, w, host);
        GridHalo halo(*t, ref.plans[r]);
        ref.expected[r] = ref.inputs[r];
        for (auto& u : ref.expected[r].u) halo.gather(u.data());
        if (gatherWide) halo.gather(ref.expected[r].wide.data());
    });
    return ref;
}

// Every gathered field of `got` against the reference's, named by `nameOf(f)`.
template <class NameOf>
std::string compareBackToBack(const BackToBackFields& got, const BackToBackFields& want, int rank, NameOf nameOf) {
    std::string m;
    const std::vector<plan::ZoneMask> all;  // no padding in grids
    for (std::size_t f = 0; f < got.u.size(); ++f) {
        const std::string what = nameOf(static_cast<int>(f));
        appendMismatch(m, testsupport::compareBitwise(what.c_str(), rank, got.u[f], want.u[f], all));
    }
    return m;
}

TEST_P(ParticleHaloBackend, GridGathersBackToBackMatchTheReferenceBitwise) {
    const HaloCase& c = GetParam();
    if (c.space != transport::MemorySpace::Device) GTEST_SKIP() << "device memory only (gathers queued on streams)";
    if (const std::string why = cannotRunHere(c); !why.empty()) GTEST_SKIP() << why;
#if HALOEX_HAVE_CUDA
    constexpr int kFields = 7;
    constexpr int kOtherStream = 3;  // this field's gather runs on the second stream
    constexpr int kWideAfter = 4;    // the wide field is gathered after this one
    runtime::World* mpi = mpiWorld();
    const std::vector<int> rankCounts = mpi ? std::vector<int>{mpi->size()} : std::vector<int>{1, 2, 4};
    Tally tally;
    for (const int numRanks : rankCounts) {
        for (const bool edgesAndCorners : {false, true}) {
            plan::GridSpec spec = gridSpecFor(numRanks);
            spec.edgesAndCorners = edgesAndCorners;
            SCOPED_TRACE(fmt::format("{} on rank grid {}{}", c.label(), spec.grid.toString(),
                                     edgesAndCorners ? "" : ", faces only"));
            const BackToBackReference ref = backToBackReference(spec, numRanks, kFields, /*gatherWide=*/true);
            const auto& plans = ref.plans;
            const auto& inputs = ref.inputs;
            const auto& expected = ref.expected;
            std::vector<std::string> mismatches(static_cast<std::size_t>(numRanks));
            const auto body = [&](runtime::World& w) {
                const auto r = static_cast<std::size_t>(w.rank());
                cuda::selectDevice(w, true);
                transport::TransportOptions options;
                options.memorySpace = c.space;
                options.allowSharedGpus = true;
                auto t = makeTransport(c.backend, w, options);
                cuda::Stream first, second;
                cuda::Event firstDone, secondDone;
                std::vector<CollectiveBuffer<double>> u;
                for (int f = 0; f < kFields; ++f) {
                    u.push_back(allocateCollective<double>(w, *t, inputs[r].u[0].size(), "a back-to-back field"));
                    u.back().copyFromHost(inputs[r].u[static_cast<std::size_t>(f)].data(), inputs[r].u[0].size(), 0,
                                          first.get());
                }
                auto wide = allocateCollective<Vec3d>(w, *t, inputs[r].wide.size(), "a wide field");
                wide.copyFromHost(inputs[r].wide.data(), inputs[r].wide.size(), 0, first.get());
                GridHalo halo(*t, plans[r]);
                for (int f = 0; f < kFields; ++f) {
                    if (f == kOtherStream) {
                        firstDone.record(first);
                        firstDone.waitOn(second);
                        halo.gather(u[static_cast<std::size_t>(f)].data(), second.get());
                        secondDone.record(second);
                        secondDone.waitOn(first);
                    } else {
                        halo.gather(u[static_cast<std::size_t>(f)].data(), first.get());
                    }
                    if (f == kWideAfter) halo.gather(wide.data(), first.get());
                }
                BackToBackFields got = inputs[r];
                for (int f = 0; f < kFields; ++f) {
                    u[static_cast<std::size_t>(f)].copyToHost(got.u[static_cast<std::size_t>(f)].data(),
                                                              got.u[0].size(), 0, first.get());
                }
                wide.copyToHost(got.wide.data(), got.wide.size(), 0, first.get());
                t->checkForFailure();
                std::string m = compareBackToBack(got, expected[r], w.rank(),
                                                  [](int f) { return fmt::format("back-to-back field {}", f); });
                appendMismatch(m, testsupport::compareBitwise("wide field", w.rank(), got.wide, expected[r].wide,
                                                              std::vector<plan::ZoneMask>{}));
                mismatches[r] = m;
            };
            if (const auto refused = runOnRanks(mpi, numRanks, body)) {
                tally.refuse(spec.grid.toString(), *refused);
                continue;
            }
            ++tally.ran;
            expectNoMismatches(mismatches, mpi);
        }
    }
    if (tally.ran == 0) GTEST_SKIP() << tally.refused;
    std::cout << tally.refused;
#endif
}

// The pack hook on the device (GridHalo::bindPackedSends, gatherPacked):
// fields gathered back to back, packed and ordinary ones alternating (ipc
// moves both through the same bound pattern), the staging rewritten for every
// packed one on the stream of its gather (one of them on a second stream,
// joined by events); every field must match the reference's ordinary gather
// bitwise, and GridHalo must leave the staging as the caller wrote it.
TEST_P(ParticleHaloBackend, GridPackedGathersMatchTheReferenceBitwise) {
    const HaloCase& c = GetParam();
    if (c.space != transport::MemorySpace::Device) {
        GTEST_SKIP() << "device memory only (host memory: test_grid_halo_packed)";
    }
    if (const std::string why = cannotRunHere(c); !why.empty()) GTEST_SKIP() << why;
#if HALOEX_HAVE_CUDA
    constexpr int kFields = 6;
    constexpr int kOtherStream = 4;  // a packed gather on the second stream
    runtime::World* mpi = mpiWorld();
    const std::vector<int> rankCounts = mpi ? std::vector<int>{mpi->size()} : std::vector<int>{1, 2, 4};
    Tally tally;
    for (const int numRanks : rankCounts) {
        for (const bool edgesAndCorners : {false, true}) {
            plan::GridSpec spec = gridSpecFor(numRanks);
            spec.edgesAndCorners = edgesAndCorners;
            SCOPED_TRACE(fmt::format("{} on rank grid {}{}", c.label(), spec.grid.toString(),
                                     edgesAndCorners ? "" : ", faces only"));
            const BackToBackReference ref = backToBackReference(spec, numRanks, kFields, /*gatherWide=*/false);
            const auto& plans = ref.plans;
            const auto& inputs = ref.inputs;
            const auto& expected = ref.expected;
            std::vector<std::string> mismatches(static_cast<std::size_t>(numRanks));
            const auto body = [&](runtime::World& w) {
                const auto r = static_cast<std::size_t>(w.rank());
                cuda::selectDevice(w, true);
                transport::TransportOptions options;
                options.memorySpace = c.space;
                options.allowSharedGpus = true;
                auto t = makeTransport(c.backend, w, options);
                cuda::Stream first, second;
                cuda::Event firstDone, secondDone;
                const std::size_t n = inputs[r].u[0].size();
                std::vector<CollectiveBuffer<double>> u;
                for (int f = 0; f < kFields; ++f) {
                    u.push_back(allocateCollective<double>(w, *t, n, "a packed-gather field"));
                    u.back().copyFromHost(inputs[r].u[static_cast<std::size_t>(f)].data(), n, 0, first.get());
                }
                GridHalo halo(*t, plans[r]);
                const PackedSends<double> packed = halo.bindPackedSends<double>();
                // What the caller's kernel would write, per field (kept alive until the end).
                std::vector<std::vector<double>> stagings(kFields, std::vector<double>(packed.elements));
                for (int f = 0; f < kFields; ++f) {
                    for (const PackedSendPulse& pulse : packed.pulses) {
                        const plan::Pulse& planned = plans[r].pulses[pulse.pulse];
                        for (std::size_t k = 0; k < pulse.count; ++k) {
                            stagings[static_cast<std::size_t>(f)][pulse.offset + k] =
                                inputs[r]
                                    .u[static_cast<std::size_t>(f)][static_cast<std::size_t>(planned.sendIndices[k])];
                        }
                    }
                }
                const std::size_t stagingBytes = packed.elements * sizeof(double);
                for (int f = 0; f < kFields; ++f) {
                    const auto fi = static_cast<std::size_t>(f);
                    if (f % 2 == 1) {
                        halo.gather(u[fi].data(), first.get());
                        continue;
                    }
                    cuda::Stream& on = f == kOtherStream ? second : first;
                    if (f == kOtherStream) {
                        firstDone.record(first);
                        firstDone.waitOn(second);
                    }
                    HALOEX_CUDA_CHECK(cudaMemcpyAsync(packed.staging, stagings[fi].data(), stagingBytes,
                                                      cudaMemcpyHostToDevice, on.get()));
                    halo.gatherPacked(u[fi].data(), on.get());
                    if (f == kOtherStream) {
                        secondDone.record(second);
                        secondDone.waitOn(first);
                    }
                }
                BackToBackFields got = inputs[r];
                for (int f = 0; f < kFields; ++f) {
                    u[static_cast<std::size_t>(f)].copyToHost(got.u[static_cast<std::size_t>(f)].data(), n, 0,
                                                              first.get());
                }
                std::vector<double> stagingAfter(packed.elements);
                HALOEX_CUDA_CHECK(cudaMemcpyAsync(stagingAfter.data(), packed.staging, stagingBytes,
                                                  cudaMemcpyDeviceToHost, first.get()));
                HALOEX_CUDA_CHECK(cudaStreamSynchronize(first.get()));
                t->checkForFailure();
                std::string m = compareBackToBack(got, expected[r], w.rank(), [](int f) {
                    return fmt::format("{} field {}", f % 2 ? "gathered" : "packed-gathered", f);
                });
                const int lastPacked = (kFields - 1) / 2 * 2;
                if (stagingAfter != stagings[static_cast<std::size_t>(lastPacked)]) {
                    appendMismatch(m, "GridHalo wrote the staging");
                }
                mismatches[r] = m;
            };
            if (const auto refused = runOnRanks(mpi, numRanks, body)) {
                tally.refuse(spec.grid.toString(), *refused);
                continue;
            }
            ++tally.ran;
            expectNoMismatches(mismatches, mpi);
        }
    }
    if (tally.ran == 0) GTEST_SKIP() << tally.refused;
    std::cout << tally.refused;
#endif
}

INSTANTIATE_TEST_SUITE_P(Backends, ParticleHaloBackend, ::testing::ValuesIn(haloCases()),
                         [](const ::testing::TestParamInfo<HaloCase>& p) { return p.param.label(); });

TEST(CollectiveBufferDevice, MaximumOverRanksInTheBackendsMemory) {
    if (const std::string why = noGpuReason(); !why.empty()) GTEST_SKIP() << why;
#if HALOEX_HAVE_CUDA
    runtime::World* mpi = mpiWorld();
    const auto body = [](runtime::World& w, Backend backend) {
        cuda::selectDevice(w, true);
        const std::size_t mine = 1000 + 100 * static_cast<std::size_t>(w.rank());
        const std::size_t largest = 1000 + 100 * static_cast<std::size_t>(w.size() - 1);
        auto b = allocateCollective<double>(w, backend, transport::MemorySpace::Device, mine, "a device test array");
        EXPECT_EQ(b.capacity(), largest);
        std::vector<double> host(mine);
        for (std::size_t i = 0; i < mine; ++i) host[i] = static_cast<double>(w.rank() * 100000 + i);
        HALOEX_CUDA_CHECK(cudaMemcpy(b.data(), host.data(), mine * sizeof(double), cudaMemcpyHostToDevice));
        b.resize(largest + 1);  // every rank grows, geometrically, keeping the contents
        EXPECT_GE(b.capacity(), largest + largest / 2);
        std::vector<double> back(mine);
        HALOEX_CUDA_CHECK(cudaMemcpy(back.data(), b.data(), mine * sizeof(double), cudaMemcpyDeviceToHost));
        EXPECT_EQ(back, host) << "rank " << w.rank();
    };
    if (mpi) {
        for (Backend b : availableBackends()) {
            if (b == Backend::Reference) continue;
            // Windows need the backend's communicator (NCCL refuses ranks sharing a GPU).
            const bool window = collectiveMemoryFor(b, transport::MemorySpace::Device) == CollectiveMemory::NcclWindow;
            if (const std::string why = window ? unavailableReason(b, *mpi) : ""; !why.empty()) {
                if (mpi->rank() == 0) std::cout << toString(b) << " not checked: " << why << "\n";
                continue;
            }
            body(*mpi, b);
        }
    } else {
        runtime::runInProcess(2, [&](runtime::World& w) { body(w, Backend::Staged); });
    }
#endif
}

}  // namespace
