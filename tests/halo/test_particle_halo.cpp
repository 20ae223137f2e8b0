// The typed halo operations on user arrays (halo/particle_halo.hpp) with the
// reference backend on thread ranks, against a direct computation: every
// ghost is traced to its owner by position (the plan builder's local
// positions minus whole box lengths), so gather must deliver the owner's
// value (plus the periodic shift for coordinates) and scatterAdd must give
// every owner its own value plus the value of each of its ghost copies.
// Also: the backend registry and the collective allocator in host memory.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <iostream>
#include <utility>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fmt/format.h>
#include <limits>
#include <string>
#include <vector>

#include "haloex/core/error.hpp"
#include "haloex/halo/backend.hpp"
#include "haloex/halo/collective_buffer.hpp"
#include "haloex/halo/particle_halo.hpp"
#include "haloex/transport/reference.hpp"
#include "test_plan_scenario.hpp"

// A user's own component-wise type, declared to the library.
struct Stress {
    double xx, yy, zz, xy;
};
template <>
struct haloex::ElementComponents<Stress> {
    using Scalar = double;
    static constexpr int count = 4;
};

namespace {

using namespace haloex;
using haloex::testing::PlanCase;
using haloex::testing::Scenario;

// A float4-like coordinate (x, y, z shifted; w carried along).
struct Position4 {
    float x, y, z, w;
};
// A mixed record with internal padding: gather moves it as bytes.
struct Record {
    double charge;
    std::int32_t type;
    char tag[3];
};
// 3 bytes: neither 4-byte words nor components.
struct Odd3 {
    std::uint8_t b[3];
};

static_assert(CoordinateLike<Vec3f> && CoordinateLike<Vec3d> && CoordinateLike<Position4>);
static_assert(ComponentWise<Stress> && ComponentWise<std::array<std::uint32_t, 2>> && ComponentWise<std::int64_t>);
static_assert(!ComponentWise<Record> && !ComponentWise<Odd3> && !CoordinateLike<std::int64_t>);

// Where every local atom of every rank comes from.
struct Origins {
    std::vector<std::vector<int>> owner;         // global atom id, -1 for padding
    std::vector<std::vector<plan::Int3>> image;  // whole box lengths added on the way
};

Origins traceOrigins(const Scenario& s) {
    Origins o;
    const Vec3d L = s.dd.box().length;
    for (int r = 0; r < s.numRanks(); ++r) {
        const auto& plan = s.plan(r);
        const auto& local = s.local(r);
        o.owner.emplace_back(static_cast<std::size_t>(plan.numLocal), -1);
        o.image.emplace_back(static_cast<std::size_t>(plan.numLocal), plan::Int3{0, 0, 0});
        for (int i = 0; i < plan.numLocal; ++i) {
            if (plan.zoneMask[static_cast<std::size_t>(i)] & plan::kPaddingMask) continue;
            if (i < plan.numHome) {
                o.owner[r][i] = s.homeIds[r][static_cast<std::size_t>(i)];
                continue;
            }
            // The only atom (they are >= 0.1 nm apart) at this position modulo the box.
            for (std::size_t g = 0; g < s.positions.size(); ++g) {
                const plan::Int3 k = haloex::testing::imageShift(local[i], s.positions[g], L);
                double d2 = 0.0;
                for (int d = 0; d < 3; ++d) {
                    const double dx = local[i][d] - k[d] * L[d] - s.positions[g][d];
                    d2 += dx * dx;
                }
                if (d2 < 1e-12) {
                    o.owner[r][i] = static_cast<int>(g);
                    o.image[r][i] = k;
                    break;
                }
            }
            EXPECT_GE(o.owner[r][i], 0) << "rank " << r << ": no atom matches local atom " << i;
        }
    }
    return o;
}

// Runs `body(world, halo)` on every rank with a reference transport bound to its plan.
template <class Body>
void onEveryRank(const Scenario& s, Body body) {
    runtime::runInProcess(s.numRanks(), [&](runtime::World& w) {
        transport::TransportOptions host;
        host.memorySpace = transport::MemorySpace::Host;
        auto t = makeTransport(Backend::Reference, w, host);
        ParticleHalo halo(*t, s.plan(w.rank()));
        body(w, halo);
    });
}

// Per-atom values of the owner (global id g), of several types.
double chargeOf(int g) { return 0.25 * g - 3.0; }
std::int64_t idOf(int g) { return (std::int64_t{1} << 40) + 977 * static_cast<std::int64_t>(g); }
Odd3 tagOf(int g) { return Odd3{{static_cast<std::uint8_t>(g), static_cast<std::uint8_t>(g >> 8), 0x5A}}; }
Record recordOf(int g) {
    Record r;
    std::memset(&r, 0, sizeof(r));
    r.charge = chargeOf(g);
    r.type = g % 7;
    r.tag[0] = 'a';
    r.tag[1] = static_cast<char>('a' + g % 26);
    r.tag[2] = 'z';
    return r;
}

constexpr int kGhostSentinel = -99;

class ParticleHaloCase : public ::testing::TestWithParam<PlanCase> {};

TEST_P(ParticleHaloCase, GatherDeliversTheOwnersValuesWithShifts) {
    const Scenario s = haloex::testing::buildScenario(GetParam());
    const Origins origins = traceOrigins(s);
    const Vec3d L = s.dd.box().length;
    std::vector<std::string> errors(static_cast<std::size_t>(s.numRanks()));
    onEveryRank(s, [&](runtime::World& w, ParticleHalo& halo) {
        const int r = w.rank();
        const auto& plan = s.plan(r);
        const auto n = static_cast<std::size_t>(plan.numLocal);
        ASSERT_EQ(halo.numLocal(), plan.numLocal);
        std::vector<Vec3d> xd(n, Vec3d{kGhostSentinel, kGhostSentinel, kGhostSentinel});
        std::vector<Vec3f> xf(n, Vec3f{kGhostSentinel, kGhostSentinel, kGhostSentinel});
        std::vector<Position4> x4(n, Position4{kGhostSentinel, kGhostSentinel, kGhostSentinel, kGhostSentinel});
        std::vector<std::int64_t> ids(n, kGhostSentinel);
        std::vector<Odd3> tags(n, Odd3{{0xEE, 0xEE, 0xEE}});
        std::vector<Record> records(n, recordOf(1'000'000));
        for (int i = 0; i < plan.numHome; ++i) {
            const int g = origins.owner[r][i];
            const Vec3d& x = s.positions[static_cast<std::size_t>(g)];
            xd[i] = x;
            xf[i] = static_cast<Vec3f>(x);
            x4[i] = Position4{xf[i].x, xf[i].y, xf[i].z, static_cast<float>(chargeOf(g))};
            ids[i] = idOf(g);
            tags[i] = tagOf(g);
            records[i] = recordOf(g);
        }
        const PeriodicShift shift{s.dd.box()};
        halo.gather(xd.data(), shift);
        halo.gather(xf.data(), shift);
        halo.gather(x4.data(), shift);
        halo.gather(ids.data());
        halo.gather(tags.data());
        halo.gather(records.data());

        int bad = 0;
        std::string first;
        const auto check = [&](bool ok, int i, const char* what) {
            if (ok) return;
            if (bad++ == 0) first = fmt::format("local atom {} ({}): {}", i, i < plan.numHome ? "home" : "ghost", what);
        };
        for (int i = 0; i < plan.numLocal; ++i) {
            const int g = origins.owner[r][i];
            if (g < 0) continue;  // padding
            const Vec3d& x = s.positions[static_cast<std::size_t>(g)];
            const plan::Int3 k = origins.image[r][i];
            Vec3d wantD = x;
            Vec3f wantF = static_cast<Vec3f>(x);
            for (int d = 0; d < 3; ++d) {
                // One shifted pulse per dimension at most: one rounding each.
                if (k[d] != 0) {
                    wantD[d] = x[d] + k[d] * L[d];
                    wantF[d] = static_cast<float>(x[d]) + static_cast<float>(k[d] * L[d]);
                }
            }
            // Bitwise on purpose: the shift must be exactly x + k L.
            // NOLINTNEXTLINE(bugprone-suspicious-memory-comparison)
            check(std::memcmp(&xd[i], &wantD, sizeof(Vec3d)) == 0, i, "Vec3d position");
            // NOLINTNEXTLINE(bugprone-suspicious-memory-comparison)
            check(std::memcmp(&xf[i], &wantF, sizeof(Vec3f)) == 0, i, "Vec3f position");
            check(x4[i].x == wantF.x && x4[i].y == wantF.y && x4[i].z == wantF.z &&
                      x4[i].w == static_cast<float>(chargeOf(g)),
                  i, "float4-like position (w unshifted)");
            check(ids[i] == idOf(g), i, "int64 id");
            const Odd3 tag = tagOf(g);
            check(std::memcmp(&tags[i], &tag, sizeof(Odd3)) == 0, i, "3-byte tag");
            const Record want = recordOf(g);
            check(records[i].charge == want.charge && records[i].type == want.type &&
                      std::memcmp(records[i].tag, want.tag, 3) == 0,
                  i, "padded record");
        }
        if (bad) errors[r] = fmt::format("{} mismatches, first {}", bad, first);
    });
    for (int r = 0; r < s.numRanks(); ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

TEST_P(ParticleHaloCase, ScatterAddSumsEveryGhostCopyIntoItsOwner) {
    const Scenario s = haloex::testing::buildScenario(GetParam());
    const Origins origins = traceOrigins(s);
    // A ghost's contribution: integer-valued, so sums are exact in any order.
    const auto ghostValue = [](int rank, int i) { return static_cast<double>((rank + 1) * 1000 + i % 997); };
    const auto ownValue = [](int g) { return static_cast<double>(7 * g + 1); };
    std::vector<double> wantHome(s.positions.size(), 0.0);
    for (std::size_t g = 0; g < s.positions.size(); ++g) wantHome[g] = ownValue(static_cast<int>(g));
    for (int r = 0; r < s.numRanks(); ++r) {
        for (int i = s.plan(r).numHome; i < s.plan(r).numLocal; ++i) {
            const int g = origins.owner[r][i];
            if (g >= 0) wantHome[static_cast<std::size_t>(g)] += ghostValue(r, i);
        }
    }

    std::vector<std::string> errors(static_cast<std::size_t>(s.numRanks()));
    onEveryRank(s, [&](runtime::World& w, ParticleHalo& halo) {
        const int r = w.rank();
        const auto& plan = s.plan(r);
        const auto n = static_cast<std::size_t>(plan.numLocal);
        std::vector<double> fd(n);
        std::vector<std::int64_t> fi(n);
        std::vector<Vec3f> f3(n);
        std::vector<Stress> stress(n);
        std::vector<std::array<std::uint32_t, 2>> counts(n);
        for (int i = 0; i < plan.numLocal; ++i) {
            const int g = origins.owner[r][i];
            // Padding gets a value too: it must never reach an owner.
            const double v = i < plan.numHome ? ownValue(g) : (g >= 0 ? ghostValue(r, i) : 1e9);
            fd[i] = v;
            fi[i] = static_cast<std::int64_t>(v) - (std::int64_t{1} << 50);  // negative, wide
            f3[i] = Vec3f{static_cast<float>(v), -static_cast<float>(v), 2.0f * static_cast<float>(v)};
            stress[i] = Stress{v, 2 * v, 3 * v, -v};
            counts[i] = {static_cast<std::uint32_t>(v), 1u};
        }
        halo.scatterAdd(fd.data());
        halo.scatterAdd(fi.data());
        halo.scatterAdd(f3.data());
        halo.scatterAdd(stress.data());
        halo.scatterAdd(counts.data());

        int bad = 0;
        std::string first;
        for (int i = 0; i < plan.numHome; ++i) {
            const int g = origins.owner[r][i];
            const double want = wantHome[static_cast<std::size_t>(g)];
            // Copies of g (the owner's entry and each ghost): the count component sums ones.
            int copies = 1;
            for (int q = 0; q < s.numRanks(); ++q) {
                for (int j = s.plan(q).numHome; j < s.plan(q).numLocal; ++j) copies += origins.owner[q][j] == g;
            }
            const bool ok =
                fd[i] == want && fi[i] == static_cast<std::int64_t>(want) - copies * (std::int64_t{1} << 50) &&
                f3[i] == Vec3f{static_cast<float>(want), -static_cast<float>(want), 2.0f * static_cast<float>(want)} &&
                stress[i].xx == want && stress[i].yy == 2 * want && stress[i].zz == 3 * want && stress[i].xy == -want &&
                counts[i][0] == static_cast<std::uint32_t>(want) && counts[i][1] == static_cast<std::uint32_t>(copies);
            if (!ok && bad++ == 0) {
                first = fmt::format("home atom {} (global {}): double {} want {}, {} copies, counted {}", i, g, fd[i],
                                    want, copies, counts[i][1]);
            }
        }
        if (bad) errors[r] = fmt::format("{} mismatches, first {}", bad, first);
    });
    for (int r = 0; r < s.numRanks(); ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

// The plan cases of up to 8 ranks (the thread world runs them as threads).
std::vector<PlanCase> upToEightRanks() {
    std::vector<PlanCase> out;
    for (const PlanCase& c : haloex::testing::planCases()) {
        if (c.grid[0] * c.grid[1] * c.grid[2] <= 8) out.push_back(c);
    }
    return out;
}

INSTANTIATE_TEST_SUITE_P(Plans, ParticleHaloCase, ::testing::ValuesIn(upToEightRanks()), haloex::testing::caseName);

TEST(ParticleHalo, SetPlanBindsTheNewPartitioning) {
    const Scenario a = haloex::testing::buildScenario(haloex::testing::planCases()[1]);  // g2x1x1
    PlanCase other = haloex::testing::planCases()[1];
    other.seed = 99;
    other.density = 20.0;
    const Scenario b = haloex::testing::buildScenario(other);
    runtime::runInProcess(2, [&](runtime::World& w) {
        const int r = w.rank();
        ASSERT_NE(a.plan(r).numLocal, b.plan(r).numLocal) << "the test needs plans of different sizes";
        transport::ReferenceTransport t(w);
        ParticleHalo halo(t, a.plan(r));
        EXPECT_EQ(halo.numLocal(), a.plan(r).numLocal);
        halo.setPlan(b.plan(r));
        EXPECT_EQ(halo.numLocal(), b.plan(r).numLocal);
        // The new plan's halo entries get their owners' values.
        std::vector<double> v(static_cast<std::size_t>(b.plan(r).numLocal), -1.0);
        for (int i = 0; i < b.plan(r).numHome; ++i) v[static_cast<std::size_t>(i)] = b.homeIds[r][i];
        halo.gather(v.data());
        for (int i = 0; i < b.plan(r).numLocal; ++i) {
            if (b.localIds[r][i] >= 0) {
                EXPECT_EQ(v[static_cast<std::size_t>(i)], b.localIds[r][i]) << "local " << i;
            }
        }
    });
}

TEST(ParticleHalo, TypeErasedScatterAddNeedsComponents) {
    const Scenario s = haloex::testing::buildScenario(haloex::testing::planCases()[1]);
    onEveryRank(s, [&](runtime::World&, ParticleHalo& halo) {
        std::vector<Odd3> v(static_cast<std::size_t>(halo.numLocal()));
        try {
            halo.scatterAddLayout(v.data(), elementLayoutOf<Odd3>(), nullptr);
            ADD_FAILURE() << "scatterAdd of a type without components must be refused";
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
            EXPECT_NE(std::string(e.what()).find("component-wise"), std::string::npos) << e.what();
        }
        // A layout that does not describe its type (3 doubles in 16 bytes) is refused too.
        std::vector<std::array<double, 2>> w(static_cast<std::size_t>(halo.numLocal()));
        ElementLayout wrong = elementLayoutOf<std::array<double, 2>>();
        wrong.components = 3;
        EXPECT_THROW(halo.scatterAddLayout(w.data(), wrong, nullptr), Error);
        const plan::Box box{{4.0, 3.0, 3.0}};
        EXPECT_THROW(halo.gatherLayout(w.data(), wrong, &box, nullptr), Error) << "the shift needs the layout right";
    });
}

// ---- the backend registry ------------------------------------------------------

TEST(Backends, NamesRoundTripAndUnknownNamesAreExplained) {
    for (Backend b : {Backend::Reference, Backend::Staged, Backend::Ipc, Backend::Nccl, Backend::Nvshmem,
                      Backend::NcclDevice, Backend::Auto}) {
        EXPECT_EQ(backendFromString(toString(b)), b);
    }
    EXPECT_FALSE(backendFromString("mpi").has_value());
    try {
        parseBackend("mpi");
        ADD_FAILURE() << "an unknown backend name must throw";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
        EXPECT_NE(std::string(e.what()).find("nvshmem"), std::string::npos) << "lists the known names: " << e.what();
    }
}

TEST(Backends, AvailableOnesHaveNoReasonTheOthersSayWhy) {
    const auto available = availableBackends();
    ASSERT_GE(available.size(), 2u);
    EXPECT_EQ(available[0], Backend::Reference);
    EXPECT_EQ(available[1], Backend::Staged);
    EXPECT_EQ(knownBackends().size(), 6u);
    for (Backend b : knownBackends()) {
        const bool listed = std::find(available.begin(), available.end(), b) != available.end();
        const std::string why = unavailableReason(b);
        EXPECT_EQ(why.empty(), listed) << toString(b);
        if (!listed) {
            std::cout << "  " << toString(b) << " is not in this build: " << why << "\n";
            EXPECT_THROW(makeTransport(b, runtime::singleRankWorld()), Error);
        }
    }
    EXPECT_EQ(unavailableReason(Backend::Auto), "");
}

TEST(Backends, NcclDeviceIsTheFusedTransportOverNcclWindows) {
    EXPECT_EQ(toString(Backend::NcclDevice), "nccl-device");
    const auto known = knownBackends();
    EXPECT_EQ(known.back(), Backend::NcclDevice) << "listed after the factory's transports";
    const std::string why = unavailableReason(Backend::NcclDevice);
    if (!why.empty()) std::cout << "  nccl-device is not in this build: " << why << "\n";
    // A single rank in host memory, or without a GPU: refused with a reason
    // (the build's, the memory space's, or the device API's), never made.
    try {
        makeTransport(Backend::NcclDevice, runtime::singleRankWorld());
        ADD_FAILURE() << "nccl-device made a transport without a GPU or in host memory";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::InvalidInput) << e.what();
        EXPECT_NE(std::string(e.what()).find("nccl-device"), std::string::npos) << e.what();
    }
    // The job-level reason starts with the build's, then a CPU run's.
    if (!why.empty()) {
        EXPECT_EQ(unavailableReason(Backend::NcclDevice, runtime::singleRankWorld()), why);
    }
}

TEST(Backends, TheMemorySpaceDefaultsToTheBackends) {
    using transport::MemorySpace;
    EXPECT_EQ(defaultMemorySpace(Backend::Reference), MemorySpace::Host);
    EXPECT_EQ(defaultMemorySpace(Backend::Staged), MemorySpace::Host);
    for (Backend b : {Backend::Ipc, Backend::Nccl, Backend::Nvshmem, Backend::NcclDevice}) {
        EXPECT_EQ(defaultMemorySpace(b), MemorySpace::Device) << toString(b);
    }
    // Options without a memory space: the backend's own (Auto: host memory).
    EXPECT_EQ(makeTransport(Backend::Reference, runtime::singleRankWorld())->memorySpace(), MemorySpace::Host);
    EXPECT_EQ(makeTransport(Backend::Staged, runtime::singleRankWorld())->memorySpace(), MemorySpace::Host);
    EXPECT_EQ(makeTransport(Backend::Auto, runtime::singleRankWorld())->name(), "staged");
    runtime::runInProcess(2,
                          [](runtime::World& w) { EXPECT_EQ(makeTransport(Backend::Auto, w)->name(), "reference"); });
}

TEST(Backends, AutoKeepsTheProxysRule) {
    using transport::MemorySpace;
    EXPECT_EQ(resolveAuto(Backend::Auto, runtime::singleRankWorld(), MemorySpace::Device), Backend::Staged);
    EXPECT_EQ(resolveAuto(Backend::Nccl, runtime::singleRankWorld(), MemorySpace::Device), Backend::Nccl);
    runtime::runInProcess(2, [](runtime::World& w) {
        EXPECT_EQ(resolveAuto(Backend::Auto, w, MemorySpace::Host), Backend::Reference);
        transport::TransportOptions host;
        host.memorySpace = MemorySpace::Host;
        EXPECT_EQ(makeTransport(Backend::Auto, w, host)->name(), "reference");
    });
}

// ---- the collective allocator in host memory -------------------------------------

TEST(CollectiveBuffer, EveryRankGetsTheLargestRequestAndGrowthKeepsTheContents) {
    runtime::runInProcess(4, [](runtime::World& w) {
        const std::size_t mine = 100 + 37 * static_cast<std::size_t>(w.rank());  // rank 3 asks most: 211
        auto buffer =
            allocateCollective<std::int64_t>(w, Backend::Reference, transport::MemorySpace::Host, mine, "test ids");
        EXPECT_EQ(buffer.memory(), CollectiveMemory::Host);
        EXPECT_EQ(buffer.size(), mine);
        EXPECT_EQ(buffer.capacity(), 211u) << "rank " << w.rank();
        for (std::size_t i = 0; i < mine; ++i)
            buffer.data()[i] = static_cast<std::int64_t>(1000 * static_cast<std::size_t>(w.rank()) + i);
        // Within the capacity: no reallocation on any rank.
        const std::int64_t* before = buffer.data();
        buffer.resize(w.rank() == 0 ? 211 : 5);
        EXPECT_EQ(buffer.data(), before);
        // One rank needs one more: all grow, geometrically, contents kept.
        buffer.resize(w.rank() == 2 ? 212 : mine);
        EXPECT_GE(buffer.capacity(), 211u + 211u / 2) << "rank " << w.rank();
        for (std::size_t i = 0; i < mine; ++i) {
            ASSERT_EQ(buffer.data()[i], static_cast<std::int64_t>(1000 * static_cast<std::size_t>(w.rank()) + i))
                << "rank " << w.rank();
        }
    });
}

// resizeTogether sizes several buffers by one reduction as resize() each
// would: every rank's capacity is the largest count (grown geometrically),
// each rank keeps its own size and the contents.
TEST(CollectiveBuffer, ResizedTogetherAsOneByOne) {
    runtime::runInProcess(3, [](runtime::World& w) {
        const auto rank = static_cast<std::size_t>(w.rank());
        auto x = allocateCollective<double>(w, Backend::Reference, transport::MemorySpace::Host, 10, "test x");
        auto f = allocateCollective<float>(w, Backend::Reference, transport::MemorySpace::Host, 10, "test f");
        for (std::size_t i = 0; i < 10; ++i) {
            x.data()[i] = static_cast<double>(100 * rank + i);
            f.data()[i] = static_cast<float>(i);
        }
        const std::size_t mine = 40 + 25 * rank;  // rank 2 asks most: 90
        resizeTogether(w, mine, x, f);
        EXPECT_EQ(x.size(), mine);
        EXPECT_EQ(f.size(), mine);
        EXPECT_EQ(x.capacity(), 90u) << "rank " << rank;
        EXPECT_EQ(f.capacity(), 90u) << "rank " << rank;
        for (std::size_t i = 0; i < 10; ++i) {
            ASSERT_EQ(x.data()[i], static_cast<double>(100 * rank + i)) << "rank " << rank;
            ASSERT_EQ(f.data()[i], static_cast<float>(i)) << "rank " << rank;
        }
        // Within the capacity on every rank: nothing moves.
        const double* before = x.data();
        resizeTogether(w, rank == 0 ? 90 : 1, x, f);
        EXPECT_EQ(x.data(), before);
        EXPECT_EQ(x.size(), rank == 0 ? 90u : 1u);
        // One rank needs more: both grow on every rank, contents kept.
        resizeTogether(w, rank == 1 ? 91 : 5, x, f);
        EXPECT_GE(x.capacity(), 90u + 45u) << "rank " << rank;
        EXPECT_EQ(f.capacity(), x.capacity()) << "rank " << rank;
        for (std::size_t i = 0; i < 5; ++i) ASSERT_EQ(x.data()[i], static_cast<double>(100 * rank + i));
    });
}

TEST(CollectiveBuffer, RefusesMemoryTheBackendDoesNotUse) {
    EXPECT_EQ(collectiveMemoryFor(Backend::Staged, transport::MemorySpace::Host), CollectiveMemory::Host);
    for (auto [backend, space] : {std::pair{Backend::Reference, transport::MemorySpace::Device},
                                  std::pair{Backend::Auto, transport::MemorySpace::Host}}) {
        try {
            collectiveMemoryFor(backend, space);
            ADD_FAILURE() << toString(backend) << " must be refused";
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::InvalidInput) << e.what();
        }
    }
    for (Backend b : {Backend::Ipc, Backend::Nccl, Backend::Nvshmem}) {
        if (!unavailableReason(b).empty()) {
            EXPECT_THROW(collectiveMemoryFor(b, transport::MemorySpace::Device), Error) << toString(b);
            continue;
        }
        EXPECT_EQ(collectiveMemoryFor(b, transport::MemorySpace::Device),
                  b == Backend::Nvshmem ? CollectiveMemory::NvshmemSymmetric : CollectiveMemory::Device);
        EXPECT_THROW(collectiveMemoryFor(b, transport::MemorySpace::Host), Error) << toString(b);
    }
}

}  // namespace
