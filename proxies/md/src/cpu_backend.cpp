#include "haloex/md/cpu_backend.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

#include "haloex/core/error.hpp"
#include "haloex/md/force_oracle.hpp"
#include "haloex/md/step_arrays.hpp"

namespace haloex::md {
namespace {

class CpuBackend final : public RankBackend {
public:
    std::string description() const override { return "CPU reference"; }
    transport::MemorySpace memorySpace() const override { return transport::MemorySpace::Host; }

    void adoptPlan(CoordinateForceHalo& halo, runtime::World& world, const plan::ParticleHaloPlan& plan) override {
        HALOEX_ASSERT(halo.memorySpace() == transport::MemorySpace::Host, "the CPU backend needs host arrays");
        arrays_.adopt(halo, world, plan);
    }

    void setHome(CoordinateForceHalo&, std::span<const AtomRecord> home) override {
        Vec3f* x = arrays_.coordinates();
        velocities_.resize(home.size());
        globalIds_.resize(home.size());
        for (std::size_t i = 0; i < home.size(); ++i) {
            x[i] = static_cast<Vec3f>(home[i].position);
            velocities_[i] = static_cast<Vec3f>(home[i].velocity);
            globalIds_[i] = home[i].globalId;
        }
    }

    void prepare(CoordinateForceHalo& halo, const LocalStatics& statics, const BackendContext& context) override {
        statics_ = statics;
        context_ = context;
        numLocal_ = halo.plan().numLocal;
        numHome_ = halo.plan().numHome;
    }

    void getHome(CoordinateForceHalo&, std::vector<AtomRecord>& home) override {
        HALOEX_ASSERT(static_cast<int>(home.size()) == numHome_, "home atom count changed between searches");
        const Vec3f* x = arrays_.coordinates();
        for (int i = 0; i < numHome_; ++i) {
            home[i].position = static_cast<Vec3d>(x[i]);
            home[i].velocity = static_cast<Vec3d>(velocities_[i]);
        }
    }

    void runSteps(CoordinateForceHalo& halo, int count, bool energiesOnLast) override {
        for (int s = 0; s < count; ++s) {
            // As the GPU's timeline: the last step of the call, kept at
            // synchronize() unless the engine drops it (a search step's).
            sampling_ = s == count - 1;
            step(halo, energiesOnLast && s == count - 1);
        }
        sampling_ = false;
    }

    StepTimings timings() const override { return timings_; }
    void dropTimelineSample() override { pending_.reset(); }

    EnergyTerms energies() override { return energies_; }
    std::int64_t stepsRun() const override { return stepsRun_; }
    void setVelocityScale(double lambda) override { velocityScale_ = static_cast<float>(lambda); }
    void synchronize() override {
        if (!pending_) return;
        timings_.clock = "host";
        ++timings_.samples;
        timings_.localUs.push_back(pending_->localUs);
        timings_.nonlocalUs.push_back(pending_->exchangeUs);
        timings_.nonoverlapUs.push_back(pending_->exchangeUs);
        pending_.reset();
    }

private:
    void step(CoordinateForceHalo& halo, bool computeEnergies) {
        using Clock = std::chrono::steady_clock;
        const auto start = Clock::now();
        const ForceField& ff = *context_.forceField;
        halo.gatherCoordinates(context_.box, nullptr);
        const auto gathered = Clock::now();
        std::span<const Vec3f> x(arrays_.coordinates(), numLocal_);
        // A blown-up system (here or on a neighbour, through the halo) is not
        // handed to the force oracle, which refuses non-finite positions with
        // an internal message: the atom is recorded and the state frozen, and
        // the engine stops the run at its next check naming the atom and the
        // step. The exchanges still run: every rank makes the same calls.
        if (nonFiniteAtom_ < 0) findNonFiniteLocal(x);
        const bool blownUp = nonFiniteAtom_ >= 0;
        PairForces<float> pair;
        if (!blownUp) {
            pair =
                computeForcesRank<float>(x, statics_.charges, statics_.zoneMasks, context_.box, context_.periodic, ff);
        }
        Vec3f* f = arrays_.forces();
        if (blownUp) {
            std::fill(f, f + numLocal_, Vec3f{});
        } else {
            std::copy(pair.forces.begin(), pair.forces.end(), f);
        }
        const auto computed = Clock::now();
        halo.scatterAddForces(nullptr);
        const auto scattered = Clock::now();
        if (blownUp) {
            energies_.nonFiniteAtom = nonFiniteAtom_;
            energies_.nonFiniteStep = nonFiniteStep_;
            ++stepsRun_;
            return;
        }

        const float dt = static_cast<float>(context_.dt);
        const float invMass = static_cast<float>(1.0 / ff.mass);
        Vec3f* xw = arrays_.coordinates();
        double kineticBefore = 0.0, kineticAfter = 0.0;
        std::int64_t nonFinite = -1;
        for (int i = 0; i < numHome_; ++i) {
            if (nonFinite < 0 && !(isFinite(f[i]) && isFinite(xw[i]))) nonFinite = globalIds_[i];
            const Vec3f vOld = velocities_[i];
            // GROMACS's leapfrog with velocity rescaling: v' = lambda v + f/m dt.
            const Vec3f vNew = vOld * velocityScale_ + f[i] * (invMass * dt);
            velocities_[i] = vNew;
            xw[i] += vNew * dt;
            if (computeEnergies) {
                kineticBefore += norm2(static_cast<Vec3d>(vOld));
                kineticAfter += norm2(static_cast<Vec3d>(vNew));
            }
        }
        velocityScale_ = 1.0f;
        if (computeEnergies) {
            energies_ = {};
            energies_.lj = pair.ljEnergy;
            energies_.coulombPairs = pair.coulombEnergy;
            double sumQ2 = 0.0;
            for (int i = 0; i < numHome_; ++i) sumQ2 += double(statics_.charges[i]) * statics_.charges[i];
            energies_.coulombSelf = ff.selfEnergy(1.0) * sumQ2;
            energies_.kinetic = 0.25 * ff.mass * (kineticBefore + kineticAfter);
            energies_.virial = pair.virial;
        }
        if (nonFinite >= 0 && nonFiniteAtom_ < 0) {
            nonFiniteAtom_ = nonFinite;
            nonFiniteStep_ = stepsRun_;
        }
        energies_.nonFiniteAtom = nonFiniteAtom_;
        energies_.nonFiniteStep = nonFiniteStep_;
        ++stepsRun_;
        if (sampling_) {
            // Where this rank's step goes: its own compute, and its exchanges,
            // which hold the waits for a slower neighbour -- the imbalance shows
            // there, not in the wall time every rank shares.
            const auto us = [](auto a, auto b) { return std::chrono::duration<double, std::micro>(b - a).count(); };
            pending_ = HostSample{us(gathered, computed) + us(scattered, Clock::now()),
                                  us(start, gathered) + us(computed, scattered)};
        }
    }

    void findNonFiniteLocal(std::span<const Vec3f> x) {
        for (int i = 0; i < numLocal_; ++i) {
            if (!statics_.zoneMasks.empty() && (statics_.zoneMasks[i] & plan::kPaddingMask) != 0) continue;
            if (!isFinite(x[i])) {
                nonFiniteAtom_ = statics_.globalIds[i];
                nonFiniteStep_ = stepsRun_;
                return;
            }
        }
    }

    StepArrays arrays_;
    struct HostSample {
        double localUs = 0, exchangeUs = 0;
    };
    StepTimings timings_;
    std::optional<HostSample> pending_;  // the last step of the last runSteps, until synchronize()
    bool sampling_ = false;
    LocalStatics statics_;
    BackendContext context_;
    int numLocal_ = 0, numHome_ = 0;
    std::vector<Vec3f> velocities_;
    std::vector<std::int64_t> globalIds_;
    EnergyTerms energies_;
    float velocityScale_ = 1.0f;
    std::int64_t stepsRun_ = 0;
    std::int64_t nonFiniteAtom_ = -1, nonFiniteStep_ = -1;
};

}  // namespace

std::unique_ptr<RankBackend> makeCpuBackend() { return std::make_unique<CpuBackend>(); }

}  // namespace haloex::md
