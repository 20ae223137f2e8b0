#pragma once
// Checks a particle transport against the in-process reference (docs/architecture.md#layers)
// on a random system. Every process builds the whole system and the expected
// results of every rank with the reference transport on threads, so a
// transport running over any World (MPI, threads) can compare its own rank's
// results bitwise. Shared by the mpi and gpu suites.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fmt/format.h>
#include <functional>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "haloex/halo/collective_buffer.hpp"
#include "haloex/halo/coordinate_force_halo.hpp"
#include "haloex/halo/particle_halo.hpp"
#include "haloex/plan/decomposition.hpp"
#include "haloex/plan/particle_plan.hpp"
#include "haloex/runtime/world.hpp"
#include "haloex/transport/reference.hpp"

namespace haloex::testsupport {

// ---- the random system ----------------------------------------------------------

struct Scenario {
    std::string grid;  // "2x2x1"
    int numAtoms = 1500;
    std::uint64_t seed = 20250921;
};

// Decompositions for a rank count: one pulse per dimension, two or three
// pulses along x (forwarding), and 2- and 3-dimensional grids.
inline std::vector<Scenario> scenariosForRanks(int numRanks) {
    switch (numRanks) {
        case 1: return {{"1x1x1"}};
        case 2: return {{"2x1x1"}, {"1x1x2"}};
        case 3: return {{"3x1x1"}};
        case 4: return {{"4x1x1"}, {"2x2x1"}, {"1x2x2"}};
        case 6: return {{"3x2x1"}};
        case 8: return {{"2x2x2"}, {"8x1x1"}, {"4x2x1"}};
        default: return {};
    }
}

// Box 4.0 x 3.2 x 3.0 nm, rc 1.0, rlist 1.2: x cells of 1.0 nm (4 ranks) need
// two pulses, of 0.5 nm (8 ranks) three.
inline plan::Decomposition makeDecomposition(const Scenario& s) {
    plan::DecompositionSpec spec;
    spec.box.length = {4.0, 3.2, 3.0};
    spec.grid = plan::parseRankGrid(s.grid);
    spec.rc = 1.0;
    spec.rlist = 1.2;
    return plan::Decomposition(spec);
}

inline std::vector<std::vector<Vec3d>> randomHomePositions(const plan::Decomposition& d, const Scenario& s) {
    std::mt19937_64 rng(s.seed);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    std::vector<Vec3d> all(static_cast<std::size_t>(s.numAtoms));
    for (auto& x : all) {
        for (int k = 0; k < 3; ++k) x[k] = unit(rng) * d.box().length[k];
    }
    plan::wrapPositions(all, d.box());
    const auto byRank = plan::partitionAtoms(d, all);
    std::vector<std::vector<Vec3d>> home(byRank.size());
    for (std::size_t r = 0; r < byRank.size(); ++r) {
        for (int i : byRank[r]) home[r].push_back(all[static_cast<std::size_t>(i)]);
    }
    return home;
}

// ---- per-rank fields ------------------------------------------------------------

// An element size that is not a multiple of 4 bytes (byte-wise pack path).
struct Odd3 {
    std::uint8_t b[3];
};

struct RankFields {
    std::vector<Vec3f> x;           // coordinates: home set, halo a sentinel
    std::vector<Vec3f> f;           // forces on every local atom
    std::vector<std::int32_t> ids;  // a 4-byte per-atom field (home: id, halo: -1)
    std::vector<Odd3> tags;         // a 3-byte per-atom field
};

inline constexpr float kHaloSentinel = -7777.0f;

inline std::uint64_t splitmix64(std::uint64_t v) {
    v += 0x9e3779b97f4a7c15ull;
    v = (v ^ (v >> 30)) * 0xbf58476d1ce4e5b9ull;
    v = (v ^ (v >> 27)) * 0x94d049bb133111ebull;
    return v ^ (v >> 31);
}

// Deterministic pseudo-random value in [-1, 1) for (rank, atom, component).
inline float hashedFloat(int rank, int atom, int component) {
    const std::uint64_t h = splitmix64((static_cast<std::uint64_t>(rank) << 40) ^
                                       (static_cast<std::uint64_t>(atom) << 2) ^ static_cast<std::uint64_t>(component));
    return static_cast<float>(static_cast<double>(h >> 40) / static_cast<double>(1ull << 23) - 1.0);
}

inline RankFields initialFields(const plan::ParticleHaloPlan& plan, const std::vector<Vec3d>& localPositions) {
    const auto n = static_cast<std::size_t>(plan.numLocal);
    RankFields in;
    in.x.assign(n, Vec3f{kHaloSentinel, kHaloSentinel, kHaloSentinel});
    in.f.resize(n);
    in.ids.assign(n, -1);
    in.tags.assign(n, Odd3{{0xEE, 0xEE, 0xEE}});
    for (int i = 0; i < plan.numLocal; ++i) {
        const auto k = static_cast<std::size_t>(i);
        if (i < plan.numHome) {
            in.x[k] = static_cast<Vec3f>(localPositions[k]);
            in.ids[k] = (plan.rank << 20) | i;
            in.tags[k] = Odd3{{static_cast<std::uint8_t>(plan.rank), static_cast<std::uint8_t>(i & 0xFF),
                               static_cast<std::uint8_t>((i >> 8) & 0xFF)}};
        }
        in.f[k] = Vec3f{hashedFloat(plan.rank, i, 0), hashedFloat(plan.rank, i, 1), hashedFloat(plan.rank, i, 2)};
    }
    return in;
}

// ---- memory of the transport's space --------------------------------------------

struct MemoryOps {
    transport::StreamHandle stream = nullptr;
    std::function<void*(std::size_t)> allocate;
    std::function<void(void*)> release;
    std::function<void(void* dst, const void* src, std::size_t bytes)> copy;  // synchronous, any direction
    std::function<void()> synchronize;                                        // waits for `stream`
};

inline MemoryOps hostMemory() {
    MemoryOps m;
    m.allocate = [](std::size_t bytes) { return static_cast<void*>(new std::byte[std::max<std::size_t>(bytes, 1)]); };
    m.release = [](void* p) { delete[] static_cast<std::byte*>(p); };
    m.copy = [](void* dst, const void* src, std::size_t bytes) {
        if (bytes) std::memcpy(dst, src, bytes);
    };
    m.synchronize = [] {};
    return m;
}

// A caller-owned array in the transport's memory space.
class SpaceArray {
public:
    SpaceArray(const MemoryOps& m, std::size_t bytes) : m_(m), p_(m.allocate(bytes)) {}
    SpaceArray(const SpaceArray&) = delete;
    SpaceArray& operator=(const SpaceArray&) = delete;
    ~SpaceArray() { m_.release(p_); }
    void* get() const { return p_; }

private:
    const MemoryOps& m_;
    void* p_;
};

template <class T>
void upload(const MemoryOps& m, void* dst, const std::vector<T>& src) {
    m.copy(dst, src.data(), src.size() * sizeof(T));
}
template <class T>
std::vector<T> download(const MemoryOps& m, const void* src, std::size_t count) {
    std::vector<T> out(count);
    m.copy(out.data(), src, count * sizeof(T));
    return out;
}

// Runs a transport through `steps` rounds of forward, a gather of two more
// per-atom fields, set forces, reverse on this rank's fields -- the MD step's
// exchange (CoordinateForceHalo, the backend's fast path where it has one) on
// arrays from the collective allocator, the other fields through ParticleHalo
// on plain arrays -- and returns what it produced in the last round.
// Collective (every rank of the transport's world).
//
// `afterHostWrites` runs once the host has written this rank's coordinates
// (halo slots included: sentinels) and before the forward that reads them;
// pass the world's barrier for transports whose kernels store into the
// peers' arrays (nvshmem), or a fast peer's forward lands before a slow
// rank's host copy and is overwritten. An MD step never writes halo slots
// from the host; only this check does.
//
// Forces: clearForces zeroes the home atoms at once; halo slots may be
// zeroed by the next forward instead (nvshmem: the peers pull them until
// then), so they are checked after it, from the second round on.
struct RunResult {
    RankFields out;
    std::vector<Vec3f> homeForcesAfterClear;        // last round
    std::vector<Vec3f> forcesAfterClearAndForward;  // last round's forward; empty with one round
    transport::TransportCounters counters;
};

// The caller's arrays and halos of one transport, kept across plans (a new
// plan that needs more room grows the arrays, as an MD run's search steps do).
struct TransportRun {
    TransportRun(transport::BlockTransport& t, runtime::World& w) : transport(t), world(w), halo(t) {}
    transport::BlockTransport& transport;
    runtime::World& world;
    CoordinateForceHalo halo;
    std::optional<CollectiveBuffer<Vec3f>> x, f;
};

inline RunResult runTransport(TransportRun& run, const plan::ParticleHaloPlan& plan, const RankFields& in,
                              const plan::Box& box, const MemoryOps& m, int steps = 2,
                              const std::function<void()>& afterHostWrites = {}) {
    const auto n = static_cast<std::size_t>(plan.numLocal);
    if (!run.x) {
        run.x.emplace(allocateCollective<Vec3f>(run.world, run.transport, n, "the test's coordinates"));
        run.f.emplace(allocateCollective<Vec3f>(run.world, run.transport, n, "the test's forces"));
    }
    run.x->resize(n);
    run.f->resize(n);
    run.halo.setPlan(plan, *run.x, *run.f);
    ParticleHalo fields(run.transport, plan);
    RunResult r;
    SpaceArray ids(m, n * sizeof(std::int32_t));
    SpaceArray tags(m, n * sizeof(Odd3));
    Vec3f* x = run.x->data();
    Vec3f* f = run.f->data();
    for (int step = 0; step < steps; ++step) {
        upload(m, x, in.x);
        if (afterHostWrites) afterHostWrites();
        run.halo.gatherCoordinates(box, m.stream);
        m.synchronize();
        r.out.x = download<Vec3f>(m, x, n);
        if (step > 0) r.forcesAfterClearAndForward = download<Vec3f>(m, f, n);

        upload(m, ids.get(), in.ids);
        fields.gather(static_cast<std::int32_t*>(ids.get()), m.stream);
        upload(m, tags.get(), in.tags);
        fields.gather(static_cast<Odd3*>(tags.get()), m.stream);
        m.synchronize();
        r.out.ids = download<std::int32_t>(m, ids.get(), n);
        r.out.tags = download<Odd3>(m, tags.get(), n);

        upload(m, f, in.f);
        run.halo.scatterAddForces(m.stream);
        m.synchronize();
        r.out.f = download<Vec3f>(m, f, n);
        run.halo.clearForces(m.stream);
        m.synchronize();
        r.homeForcesAfterClear = download<Vec3f>(m, f, static_cast<std::size_t>(plan.numHome));
    }
    r.counters = run.halo.counters();
    return r;
}

inline RunResult runTransport(transport::BlockTransport& t, runtime::World& w, const plan::ParticleHaloPlan& plan,
                              const RankFields& in, const plan::Box& box, const MemoryOps& m, int steps = 2,
                              const std::function<void()>& afterHostWrites = {}) {
    TransportRun run(t, w);
    return runTransport(run, plan, in, box, m, steps, afterHostWrites);
}

// ---- expected results ----------------------------------------------------------

struct Expected {
    std::vector<plan::ParticleHaloPlan> plans;
    std::vector<std::vector<Vec3d>> localPositions;
    std::vector<RankFields> inputs;
    std::vector<RankFields> outputs;
};

// The reference transport on in-process ranks (threads), for every rank.
// `alignment`: receive slots start at multiples of it (nvshmem needs 4).
inline Expected referenceResults(const plan::Decomposition& d, const Scenario& s, int alignment = 1) {
    const auto home = randomHomePositions(d, s);
    plan::InProcessPlans built = plan::buildParticlePlansInProcess(d, home, alignment);
    Expected e;
    e.plans = std::move(built.plans);
    e.localPositions = std::move(built.localPositions);
    const int n = d.grid().size();
    e.inputs.resize(static_cast<std::size_t>(n));
    e.outputs.resize(static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r) {
        e.inputs[static_cast<std::size_t>(r)] =
            initialFields(e.plans[static_cast<std::size_t>(r)], e.localPositions[static_cast<std::size_t>(r)]);
    }
    // The oracle's own typed exchanges (host_exchange.hpp's pulse loops), not
    // the halo API that the transports under test go through.
    runtime::runInProcess(n, [&](runtime::World& w) {
        const auto r = static_cast<std::size_t>(w.rank());
        transport::ReferenceTransport t(w);
        t.setPlan(e.plans[r]);
        RankFields out = e.inputs[r];
        t.forwardPositions(std::span<Vec3f>(out.x), d.box());
        t.forward(std::span<std::int32_t>(out.ids));
        t.forward(std::span<Odd3>(out.tags));
        t.reverseAdd(std::span<Vec3f>(out.f));
        e.outputs[r] = std::move(out);
    });
    return e;
}

// ---- comparisons (empty string: equal) -----------------------------------------

inline std::string comparePlans(const plan::ParticleHaloPlan& got, const plan::ParticleHaloPlan& want) {
    if (got.rank != want.rank || got.numHome != want.numHome || got.numLocal != want.numLocal ||
        got.pulses.size() != want.pulses.size()) {
        return fmt::format("plan of rank {}: {} home / {} local / {} pulses, expected rank {}: {} / {} / {}", got.rank,
                           got.numHome, got.numLocal, got.pulses.size(), want.rank, want.numHome, want.numLocal,
                           want.pulses.size());
    }
    if (got.zoneMask != want.zoneMask) return fmt::format("rank {}: zone masks differ", got.rank);
    for (std::size_t p = 0; p < got.pulses.size(); ++p) {
        const plan::Pulse& a = got.pulses[p];
        const plan::Pulse& b = want.pulses[p];
        const bool same = a.id == b.id && a.dim == b.dim && a.stage == b.stage && a.sendRank == b.sendRank &&
                          a.recvRank == b.recvRank && a.shiftSign == b.shiftSign && a.sendIndices == b.sendIndices &&
                          a.numIndependent == b.numIndependent && a.recvCount == b.recvCount &&
                          a.recvOffset == b.recvOffset && a.recvCapacity == b.recvCapacity &&
                          a.remoteRecvOffset == b.remoteRecvOffset && a.waitsForward == b.waitsForward &&
                          a.waitsReverse == b.waitsReverse;
        if (!same) return fmt::format("rank {}: pulse {} differs from the in-process plan", got.rank, p);
    }
    return {};
}

// Entries whose zone mask is kPaddingMask are alignment padding, not atoms:
// a transport may write anything there (nvshmem's bulk copies move whole
// 16-byte chunks of a receive slot), so they are skipped. same(got, want, i)
// decides an element; `how` names the comparison in the message.
template <class T, class Same>
std::string compareEach(const char* what, const char* how, int rank, const std::vector<T>& got,
                        const std::vector<T>& want, const std::vector<plan::ZoneMask>& zoneMask, Same same) {
    if (got.size() != want.size()) {
        return fmt::format("rank {}: {} has {} elements, expected {}", rank, what, got.size(), want.size());
    }
    int mismatches = 0;
    std::string first;
    for (std::size_t i = 0; i < got.size(); ++i) {
        if (i < zoneMask.size() && (zoneMask[i] & plan::kPaddingMask)) continue;
        if (!same(got[i], want[i])) {
            if (mismatches++ == 0) first = fmt::format("first at local atom {}", i);
        }
    }
    if (mismatches == 0) return {};
    return fmt::format("rank {}: {} differs from the reference{} in {} of {} atoms ({})", rank, what, how, mismatches,
                       got.size(), first);
}

template <class T>
std::string compareBitwise(const char* what, int rank, const std::vector<T>& got, const std::vector<T>& want,
                           const std::vector<plan::ZoneMask>& zoneMask = {}) {
    return compareEach(what, "", rank, got, want, zoneMask,
                       // Bitwise on purpose (the transports copy bytes); T has no padding.
                       // NOLINTNEXTLINE(bugprone-suspicious-memory-comparison)
                       [](const T& a, const T& b) { return std::memcmp(&a, &b, sizeof(T)) == 0; });
}

// Forces within float tolerance: |got - want| <= tolerance * max(1, |want|)
// per component. For transports whose reverse exchange adds the pulses into
// an owner concurrently (nvshmem's atomics), so the order of the additions
// -- and the last bits -- may differ from the reference's.
inline std::string compareClose(const char* what, int rank, const std::vector<Vec3f>& got,
                                const std::vector<Vec3f>& want, const std::vector<plan::ZoneMask>& zoneMask,
                                double tolerance) {
    const std::string how = fmt::format(" beyond {:g}", tolerance);
    return compareEach(what, how.c_str(), rank, got, want, zoneMask, [tolerance](const Vec3f& a, const Vec3f& b) {
        for (int d = 0; d < 3; ++d) {
            if (!(std::abs(double(a[d]) - double(b[d])) <= tolerance * std::max(1.0, std::abs(double(b[d]))))) {
                return false;
            }
        }
        return true;
    });
}

inline std::string describeVec(const Vec3f& v) { return fmt::format("({}, {}, {})", v.x, v.y, v.z); }

// Coordinates, both typed fields and forces bitwise (padding skipped, see
// compareBitwise); home forces zero after clearForces, all forces zero after
// clearForces and the next forward.
// forceTolerance 0: forces bitwise too; > 0: forces within that relative
// tolerance (compareClose). Coordinates and typed fields are always bitwise.
inline std::string compareResults(const RunResult& got, const RankFields& want, int rank,
                                  const std::vector<plan::ZoneMask>& zoneMask = {}, double forceTolerance = 0.0) {
    std::string all;
    const auto add = [&](const std::string& s) {
        if (!s.empty()) all += (all.empty() ? "" : "; ") + s;
    };
    add(compareBitwise("forwarded coordinates", rank, got.out.x, want.x, zoneMask));
    add(compareBitwise("forwarded 4-byte ids", rank, got.out.ids, want.ids, zoneMask));
    add(compareBitwise("forwarded 3-byte tags", rank, got.out.tags, want.tags, zoneMask));
    add(forceTolerance > 0.0
            ? compareClose("reverse-accumulated forces", rank, got.out.f, want.f, zoneMask, forceTolerance)
            : compareBitwise("reverse-accumulated forces", rank, got.out.f, want.f, zoneMask));
    const std::vector<Vec3f> zeros(want.f.size(), Vec3f{});
    const std::vector<Vec3f> homeZeros(got.homeForcesAfterClear.size(), Vec3f{});
    add(compareBitwise("home forces after clearForces", rank, got.homeForcesAfterClear, homeZeros));
    if (!got.forcesAfterClearAndForward.empty()) {
        add(compareBitwise("forces after clearForces and the next forward", rank, got.forcesAfterClearAndForward, zeros,
                           zoneMask));
    }
    return all;
}

}  // namespace haloex::testsupport
