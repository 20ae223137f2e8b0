// GridHalo's pack hook (halo/grid_halo.hpp: bindPackedSends, gatherPacked,
// packSends) in host memory on thread ranks: a packed gather, whose first
// batch's sends the caller wrote into the staging, leaves every field
// bitwise as the ordinary gather does -- several grids (faces only and with
// edges and corners, periodic, open and mixed, halo widths 1 and 2, a
// dimension with one rank), several element types, the reference and the
// staged backends, calls repeated with new values. GridHalo never writes the
// staging, keeps it where it is, and says what to do when it is misused.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <fmt/format.h>
#include <ostream>
#include <utility>
#include <string>
#include <vector>

#include "grid_case.hpp"
#include "haloex/core/error.hpp"
#include "haloex/core/vec3.hpp"
#include "haloex/halo/backend.hpp"
#include "haloex/halo/grid_halo.hpp"
#include "haloex/plan/grid_plan.hpp"
#include "haloex/runtime/world.hpp"

namespace {

using namespace haloex;
using plan::Int3;

using testsupport::GridCase;
using testsupport::specOf;

std::vector<GridCase> packedCases() {
    const std::array<bool, 3> P{true, true, true};
    const std::array<bool, 3> N{false, false, false};
    return {
        {"d1_periodic_h2_faces", {13, 1, 1}, {3, 1, 1}, 2, P, {2, 1, 0}, false},
        {"d1_open_h1_corners", {13, 1, 1}, {4, 1, 1}, 1, N, {2, 1, 0}, true},
        {"d2_periodic_h1_faces", {11, 7, 1}, {3, 2, 1}, 1, P, {2, 1, 0}, false},
        {"d2_periodic_h1_corners", {11, 7, 1}, {3, 2, 1}, 1, P, {2, 1, 0}, true},
        {"d2_open_h1_faces", {12, 8, 1}, {2, 2, 1}, 1, N, {2, 1, 0}, false},
        {"d2_periodicX_openY_h2_faces", {10, 9, 1}, {4, 2, 1}, 2, {true, false, true}, {2, 1, 0}, false},
        {"d2_periodicX_openY_h2_corners", {10, 9, 1}, {4, 2, 1}, 2, {true, false, true}, {2, 1, 0}, true},
        {"d2_selfX_periodic_h1_faces", {6, 9, 1}, {1, 3, 1}, 1, P, {2, 1, 0}, false},
        {"d3_mixed_h2_faces", {8, 7, 5}, {3, 2, 2}, 2, {true, false, true}, {2, 1, 0}, false},
        {"d3_open_h1_corners", {6, 5, 7}, {2, 1, 3}, 1, N, {2, 1, 0}, true},
    };
}

// A record moved as bytes (not component-wise), padding zeroed.
struct CellRecord {
    float rho;
    std::int16_t phase;
    double energy;
};

// Element e of a field in call `call` of rank `rank`: every element and call
// different, so a slot one off or a stale staging shows.
template <class T>
T valueOf(int rank, int e, int call);
template <>
double valueOf<double>(int rank, int e, int call) {
    return 0.5 + e + 1000.0 * rank + 1e6 * call;
}
template <>
std::int64_t valueOf<std::int64_t>(int rank, int e, int call) {
    return -(static_cast<std::int64_t>(e) + std::int64_t{100000} * rank + std::int64_t{10000000} * call);
}
template <>
Vec3f valueOf<Vec3f>(int rank, int e, int call) {
    return {static_cast<float>(e), static_cast<float>(rank), static_cast<float>(call) + 0.25f};
}
template <>
CellRecord valueOf<CellRecord>(int rank, int e, int call) {
    CellRecord r;
    std::memset(&r, 0, sizeof(r));
    r.rho = static_cast<float>(e) + 0.5f;
    r.phase = static_cast<std::int16_t>(rank * 7 + call);
    r.energy = -static_cast<double>(e) * 3.0 - call;
    return r;
}

transport::TransportOptions hostMemory() {
    transport::TransportOptions o;
    o.memorySpace = transport::MemorySpace::Host;
    return o;
}

// Fills the staging as the caller's kernel would: the first batch's sends.
template <class T>
void fillStaging(const PackedSends<T>& packed, const plan::GridHaloPlan& p, const std::vector<T>& field) {
    for (const PackedSendPulse& pulse : packed.pulses) {
        for (std::size_t k = 0; k < pulse.count; ++k) {
            packed.staging[pulse.offset + k] = field[static_cast<std::size_t>(p.pulses[pulse.pulse].sendIndices[k])];
        }
    }
}

// Three calls of gather and of gatherPacked on fields of T with new values
// each time; the first difference (or "") per rank.
template <class T>
std::string packedAgainstGather(const plan::GridHaloPlan& p, GridHalo& halo, int rank) {
    const PackedSends<T> packed = halo.bindPackedSends<T>();
    if (packed.staging == nullptr) return "no staging";
    if (packed.elements != halo.packedSendElements()) return "the staging's size";
    std::size_t listed = 0;
    for (const PackedSendPulse& pulse : packed.pulses) {
        const plan::Pulse& planned = p.pulses[pulse.pulse];
        const std::size_t sends = planned.sends() ? static_cast<std::size_t>(planned.sendCount()) : 0;
        if (pulse.offset != listed || pulse.count != sends) return fmt::format("pulse {}'s slots", pulse.pulse);
        for (std::size_t k = 0; k < pulse.count; ++k) {
            if (pulse.indices[k] != planned.sendIndices[k]) return fmt::format("pulse {}'s indices", pulse.pulse);
        }
        listed += pulse.count;
    }
    if (listed != packed.elements) return "the pulses do not cover the staging";
    const auto size = static_cast<std::size_t>(p.numLocal());
    for (int call = 0; call < 3; ++call) {
        std::vector<T> viaGather(size), viaPacked(size);
        for (std::size_t e = 0; e < size; ++e) viaGather[e] = valueOf<T>(rank, static_cast<int>(e), call);
        viaPacked = viaGather;
        fillStaging(packed, p, viaPacked);
        const std::vector<T> staged(packed.staging, packed.staging + packed.elements);
        halo.gather(viaGather.data());
        halo.gatherPacked(viaPacked.data());
        // The halo copies bytes: compared bitwise on purpose.
        // NOLINTNEXTLINE(bugprone-suspicious-memory-comparison)
        if (std::memcmp(viaGather.data(), viaPacked.data(), size * sizeof(T)) != 0) {
            for (std::size_t e = 0; e < size; ++e) {
                // NOLINTNEXTLINE(bugprone-suspicious-memory-comparison)
                if (std::memcmp(&viaGather[e], &viaPacked[e], sizeof(T)) != 0)
                    return fmt::format("call {}: local element {} differs", call, e);
            }
        }
        // NOLINTNEXTLINE(bugprone-suspicious-memory-comparison)
        if (std::memcmp(staged.data(), packed.staging, packed.elements * sizeof(T)) != 0)
            return fmt::format("call {}: GridHalo wrote the staging", call);
    }
    if (halo.bindPackedSends<T>().staging != packed.staging) return "binding again moved the staging";
    return {};
}

class GridHaloPacked : public ::testing::TestWithParam<GridCase> {};

TEST_P(GridHaloPacked, PackedGatherEqualsGatherBitwise) {
    const GridCase c = GetParam();
    const plan::GridSpec spec = specOf(c);
    const int n = spec.grid.size();
    for (const Backend backend : {Backend::Reference, Backend::Staged}) {
        SCOPED_TRACE(std::string(toString(backend)));
        std::vector<std::string> errors(static_cast<std::size_t>(n));
        runtime::runInProcess(n, [&](runtime::World& w) {
            const plan::GridHaloPlan p = plan::buildGridPlan(spec, w.rank());
            auto t = makeTransport(backend, w, hostMemory());
            GridHalo halo(*t, p);
            std::string& error = errors[static_cast<std::size_t>(w.rank())];
            for (const auto& [type, problem] :
                 {std::pair{"double", packedAgainstGather<double>(p, halo, w.rank())},
                  std::pair{"int64", packedAgainstGather<std::int64_t>(p, halo, w.rank())},
                  std::pair{"Vec3f", packedAgainstGather<Vec3f>(p, halo, w.rank())},
                  std::pair{"record", packedAgainstGather<CellRecord>(p, halo, w.rank())}}) {
                if (!problem.empty() && error.empty()) error = fmt::format("{}: {}", type, problem);
            }
        });
        for (int r = 0; r < n; ++r) EXPECT_EQ(errors[static_cast<std::size_t>(r)], "") << "rank " << r;
    }
}

// The first batch is every pulse of a faces-only plan; with edges and
// corners, the first dimension's stage-0 pulses only (the rest forward).
TEST_P(GridHaloPacked, TheListedPulsesAreTheFirstBatch) {
    const GridCase c = GetParam();
    const plan::GridSpec spec = specOf(c);
    runtime::runInProcess(1, [&](runtime::World& w) {
        const plan::GridHaloPlan p = plan::buildGridPlan(spec, 0);
        auto t = makeTransport(Backend::Reference, w, hostMemory());
        GridHalo halo(*t, p);
        std::vector<std::size_t> want;
        for (std::size_t q = 0; q < p.pulses.size(); ++q) {
            const bool first = !c.edgesAndCorners || (p.pulses[q].stage == 0 && p.pulses[q].dim == p.pulses[0].dim);
            if (first) want.push_back(q);
            if (!first) break;
        }
        std::vector<std::size_t> got;
        for (const PackedSendPulse& pulse : halo.packedPulses()) got.push_back(pulse.pulse);
        EXPECT_EQ(got, want);
    });
}

// packSends fills the staging as the caller would.
TEST_P(GridHaloPacked, PackSendsFillsTheStagingAsTheCallerWould) {
    const GridCase c = GetParam();
    const plan::GridSpec spec = specOf(c);
    const int n = spec.grid.size();
    std::vector<std::string> errors(static_cast<std::size_t>(n));
    runtime::runInProcess(n, [&](runtime::World& w) {
        const plan::GridHaloPlan p = plan::buildGridPlan(spec, w.rank());
        auto t = makeTransport(Backend::Reference, w, hostMemory());
        GridHalo halo(*t, p);
        const PackedSends<CellRecord> packed = halo.bindPackedSends<CellRecord>();
        std::vector<CellRecord> field(static_cast<std::size_t>(p.numLocal()));
        for (std::size_t e = 0; e < field.size(); ++e) field[e] = valueOf<CellRecord>(w.rank(), static_cast<int>(e), 5);
        halo.packSends(field.data());
        const std::vector<CellRecord> byHalo(packed.staging, packed.staging + packed.elements);
        fillStaging(packed, p, field);
        // NOLINTNEXTLINE(bugprone-suspicious-memory-comparison)
        if (std::memcmp(byHalo.data(), packed.staging, packed.elements * sizeof(CellRecord)) != 0)
            errors[static_cast<std::size_t>(w.rank())] = "packSends differs from the caller's fill";
    });
    for (int r = 0; r < n; ++r) EXPECT_EQ(errors[static_cast<std::size_t>(r)], "") << "rank " << r;
}

// What a packed gather sends is the staging, not the field: with sentinels
// in the staging, every halo cell a faces-only plan fills holds one (the
// slot's own), and no field value travels.
TEST(GridHaloPackedSends, TheStagingIsWhatTravels) {
    for (const GridCase& c : packedCases()) {
        if (c.edgesAndCorners) continue;  // later batches forward from the field
        SCOPED_TRACE(c.name);
        const plan::GridSpec spec = specOf(c);
        const int n = spec.grid.size();
        std::vector<plan::GridHaloPlan> plans;
        for (int r = 0; r < n; ++r) plans.push_back(plan::buildGridPlan(spec, r));
        // Sentinel of (rank, slot): negative, the field's values are not.
        const auto sentinel = [](int rank, std::size_t slot) { return -1.0 - static_cast<double>(slot) - 1e6 * rank; };
        std::vector<std::string> errors(static_cast<std::size_t>(n));
        runtime::runInProcess(n, [&](runtime::World& w) {
            const plan::GridHaloPlan& p = plans[static_cast<std::size_t>(w.rank())];
            auto t = makeTransport(Backend::Staged, w, hostMemory());
            GridHalo halo(*t, p);
            const PackedSends<double> packed = halo.bindPackedSends<double>();
            for (std::size_t k = 0; k < packed.elements; ++k) packed.staging[k] = sentinel(w.rank(), k);
            std::vector<double> u(static_cast<std::size_t>(p.numLocal()));
            for (std::size_t e = 0; e < u.size(); ++e) u[e] = static_cast<double>(e);
            halo.gatherPacked(u.data());
            std::string& error = errors[static_cast<std::size_t>(w.rank())];
            for (const plan::Pulse& pulse : p.pulses) {
                if (!pulse.receives()) continue;
                for (const int cell : pulse.recvIndices) {
                    if (u[static_cast<std::size_t>(cell)] >= 0.0 && error.empty())
                        error = fmt::format("pulse {}: halo cell {} holds a field value", pulse.id, cell);
                }
            }
        });
        for (int r = 0; r < n; ++r) EXPECT_EQ(errors[static_cast<std::size_t>(r)], "") << "rank " << r;
    }
}

INSTANTIATE_TEST_SUITE_P(Grids, GridHaloPacked, ::testing::ValuesIn(packedCases()),
                         [](const ::testing::TestParamInfo<GridCase>& i) { return i.param.name; });

// One rank of a periodic grid (it exchanges with itself): the misuse is
// refused before anything moves, with what to do.
template <class F>
void expectInvalidInput(F&& call, const std::vector<std::string>& phrases) {
    try {
        call();
        ADD_FAILURE() << "expected an InvalidInput error";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::InvalidInput) << e.what();
        for (const std::string& phrase : phrases) {
            EXPECT_NE(std::string(e.what()).find(phrase), std::string::npos)
                << "missing \"" << phrase << "\" in: " << e.what();
        }
    }
}

TEST(GridHaloPackedMisuse, RefusedWithWhatToDo) {
    plan::GridSpec spec;
    spec.cells = {6, 5, 1};
    spec.grid = plan::RankGrid({1, 1, 1});
    spec.haloWidth = 1;
    spec.periodic = {true, true, true};
    spec.edgesAndCorners = false;
    runtime::runInProcess(1, [&](runtime::World& w) {
        const plan::GridHaloPlan p = plan::buildGridPlan(spec, 0);
        auto t = makeTransport(Backend::Reference, w, hostMemory());
        GridHalo halo(*t, p);
        std::vector<double> u(static_cast<std::size_t>(p.numLocal()), 1.0);
        std::vector<float> f(u.size(), 1.0f);
        // Unbound.
        expectInvalidInput([&] { halo.gatherPacked(u.data()); },
                           {"gatherPacked: no send staging is bound for elements of 8 bytes (none is bound)",
                            "call bindPackedSends<T>()"});
        expectInvalidInput([&] { halo.packSends(u.data()); },
                           {"packSends: no send staging is bound for elements of 8 bytes"});
        // Bound for another element size.
        const PackedSends<double> packed = halo.bindPackedSends<double>();
        expectInvalidInput([&] { halo.gatherPacked(f.data()); },
                           {"no send staging is bound for elements of 4 bytes (bound: elements of 8 bytes)"});
        // A null field.
        expectInvalidInput([&] { halo.gatherPacked(static_cast<double*>(nullptr)); }, {"the array is null"});
        // The staging stays put whatever else the halo does.
        std::vector<Vec3d> wide(u.size());
        halo.gather(wide.data());
        halo.bindPackedSends<Vec3d>();
        EXPECT_EQ(halo.bindPackedSends<double>().staging, packed.staging);
        GridHalo moved(std::move(halo));
        EXPECT_EQ(moved.bindPackedSends<double>().staging, packed.staging);
        EXPECT_EQ(moved.packedPulses().data(), packed.pulses.data()) << "the pulses' list moves with the halo";
    });
}

}  // namespace
