// A system that blows up between the engine's checks: the CPU backend must
// not hand the non-finite positions to the force oracle (whose internal
// "only padding atoms ... may" message reached users), but stop computing and
// let the engine report the atom and the step at its next check. The
// explosion is injected: a backend wrapper turns one coordinate into NaN
// after a given step, as an overflow would.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <string>

#include "haloex/core/error.hpp"
#include "haloex/md/cpu_backend.hpp"
#include "haloex/md/engine.hpp"
#include "haloex/runtime/world.hpp"
#include "haloex/transport/reference.hpp"

using namespace haloex;
using namespace haloex::md;

namespace {

// The home-atom parameter of RankBackend::getHome, taken from the interface
// so that the wrapper below follows it when it changes.
template <class>
struct SecondParameter;
template <class C, class R, class A, class B>
struct SecondParameter<R (C::*)(A, B)> {
    using type = B;
};
using HomeParameter = SecondParameter<decltype(&RankBackend::getHome)>::type;

class BlowUpAfter final : public RankBackend {
public:
    BlowUpAfter(std::unique_ptr<RankBackend> inner, std::int64_t afterStep, bool here)
        : inner_(std::move(inner)), afterStep_(afterStep), here_(here) {}

    std::string description() const override { return inner_->description(); }
    transport::MemorySpace memorySpace() const override { return inner_->memorySpace(); }
    void adoptPlan(CoordinateForceHalo& h, runtime::World& w, const plan::ParticleHaloPlan& p) override {
        inner_->adoptPlan(h, w, p);
    }
    void setHome(CoordinateForceHalo& h, std::span<const AtomRecord> home) override { inner_->setHome(h, home); }
    void prepare(CoordinateForceHalo& h, const LocalStatics& s, const BackendContext& c) override {
        inner_->prepare(h, s, c);
    }
    void getHome(CoordinateForceHalo& h, HomeParameter home) override { inner_->getHome(h, home); }
    std::int64_t stepsRun() const override { return inner_->stepsRun(); }
    EnergyTerms energies() override { return inner_->energies(); }
    void setVelocityScale(double lambda) override { inner_->setVelocityScale(lambda); }
    void synchronize() override { inner_->synchronize(); }

    void runSteps(CoordinateForceHalo& h, int count, bool energiesOnLast) override {
        for (int s = 0; s < count; ++s) {
            inner_->runSteps(h, 1, energiesOnLast && s == count - 1);
            if (here_ && inner_->stepsRun() == afterStep_ + 1 && h.plan().numHome > 0) {
                h.coordinates()[0].x = std::numeric_limits<float>::quiet_NaN();
            }
        }
    }

private:
    std::unique_ptr<RankBackend> inner_;
    std::int64_t afterStep_;
    bool here_;
};

}  // namespace

TEST(BlowUp, NonFinitePositionsBetweenChecksAreReportedWithTheAtomNotTheOraclesMessage) {
    MdOptions o;
    o.atoms = 2000;
    o.steps = 40;
    o.nstlist = 50;      // no search step between step 0 and the end
    o.thermoEvery = 20;  // energy steps 0, 20 and 39
    o.quiet = true;
    const MdOptions resolved = resolveOptions(o, 2, false);
    std::string message;
    try {
        runtime::runInProcess(2, [&](runtime::World& world) {
            transport::ReferenceTransport transport(world);
            BlowUpAfter backend(makeCpuBackend(), 5, world.rank() == 0);
            Engine engine(resolved, world, transport, backend);
            engine.run();
        });
        message = "the run went to the end";
    } catch (const Error& e) {
        message = e.what();
    }
    EXPECT_EQ(message.find("force oracle"), std::string::npos) << message;
    EXPECT_EQ(message.find("padding"), std::string::npos) << message;
    EXPECT_NE(message.find("non-finite force or position of atom"), std::string::npos) << message;
    EXPECT_NE(message.find("found at step 6"), std::string::npos) << message;
    EXPECT_NE(message.find("use a smaller --dt"), std::string::npos) << message;
}
