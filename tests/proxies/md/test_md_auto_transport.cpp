// haloex-md's --transport auto on the CPU: the engine's trial
// (Engine::startTrial/advanceTrial) runs real MD steps, searches included,
// and writes and prints nothing; selectBackend over such trials measures the
// candidate transports inside MD steps, and the run then goes ahead on the
// transport it hands back.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <vector>

#include "haloex/core/error.hpp"
#include "haloex/halo/auto_select.hpp"
#include "haloex/md/cpu_backend.hpp"
#include "haloex/md/engine.hpp"
#include "haloex/runtime/world.hpp"
#include "haloex/transport/reference.hpp"
#include "test_temp_dir.hpp"

namespace {

using namespace haloex;

// Every output a run can write, into `dir`.
md::MdOptions optionsWritingInto(const std::filesystem::path& dir) {
    md::MdOptions o;
    o.atoms = 1000;
    o.nstlist = 10;
    o.steps = 30;
    o.thermoEvery = 10;
    o.quiet = true;
    o.jsonFile = (dir / "run.json").string();
    o.logFile = (dir / "md.log").string();
    o.trajFile = (dir / "traj.gro").string();
    o.energyFile = (dir / "ener.xvg").string();
    o.checkpointFile = (dir / "state.cpt").string();
    o.checkpointEvery = 10;
    o.writeGromacsDir = (dir / "gromacs").string();
    return o;
}

// The CPU backend, remembering the largest halo of the plans it adopted.
class HaloWatchingBackend final : public md::RankBackend {
public:
    std::string description() const override { return inner_->description(); }
    transport::MemorySpace memorySpace() const override { return inner_->memorySpace(); }
    void adoptPlan(CoordinateForceHalo& h, runtime::World& w, const plan::ParticleHaloPlan& p) override {
        largestHalo = std::max(largestHalo, p.numLocal - p.numHome);
        inner_->adoptPlan(h, w, p);
    }
    void setHome(CoordinateForceHalo& h, std::span<const md::AtomRecord> home) override { inner_->setHome(h, home); }
    void prepare(CoordinateForceHalo& h, const md::LocalStatics& s, const md::BackendContext& c) override {
        inner_->prepare(h, s, c);
    }
    void getHome(CoordinateForceHalo& h, std::vector<md::AtomRecord>& home) override { inner_->getHome(h, home); }
    std::int64_t stepsRun() const override { return inner_->stepsRun(); }
    void runSteps(CoordinateForceHalo& h, int count, bool energies) override { inner_->runSteps(h, count, energies); }
    md::EnergyTerms energies() override { return inner_->energies(); }
    void setVelocityScale(double lambda) override { inner_->setVelocityScale(lambda); }
    void synchronize() override { inner_->synchronize(); }

    int largestHalo = 0;

private:
    std::unique_ptr<md::RankBackend> inner_ = md::makeCpuBackend();
};

TEST(MdTrial, AdvancesRealStepsAcrossSearchesAndWritesNothing) {
    const auto dir = haloex::testing::freshTestDir("md_trial");
    const md::MdOptions resolved = md::resolveOptions(optionsWritingInto(dir), 2, false);
    runtime::runInProcess(2, [&](runtime::World& world) {
        transport::ReferenceTransport transport(world);
        auto backend = std::make_unique<HaloWatchingBackend>();
        md::Engine engine(resolved, world, transport, *backend);
        EXPECT_THROW(engine.advanceTrial(1), Error) << "a trial starts with startTrial";
        engine.startTrial();
        EXPECT_EQ(backend->stepsRun(), 0) << "the set-up runs no step";
        engine.advanceTrial(25);  // searches at steps 0, 10 and 20
        EXPECT_EQ(backend->stepsRun(), 25);
        engine.advanceTrial(7);
        EXPECT_EQ(backend->stepsRun(), 32) << "a trial may run past --steps";
        EXPECT_GT(backend->largestHalo, 0) << "a halo was planned";
        EXPECT_THROW(engine.run(), Error) << "an Engine runs a trial or the run";
    });
    EXPECT_TRUE(std::filesystem::is_empty(dir))
        << "the trial wrote " << std::filesystem::directory_iterator(dir)->path();
}

// The application's trial (proxies/md/app/main.cpp): a CPU backend and an engine on
// the candidate's transport.
struct Trial {
    std::unique_ptr<md::RankBackend> backend = md::makeCpuBackend();
    md::Engine engine;
    Trial(const md::MdOptions& o, runtime::World& world, transport::BlockTransport& t) : engine(o, world, t, *backend) {
        engine.startTrial();
    }
};

TEST(MdAutoTransport, MeasuresInsideMdStepsThenTheRunGoesOnWithTheWinner) {
    clearAutoSelectionCache();
    md::MdOptions o;
    o.atoms = 1000;
    o.nstlist = 10;
    o.steps = 20;
    o.quiet = true;
    o.logFile = "none";
    const md::MdOptions resolved = md::resolveOptions(o, 2, false);
    std::vector<AutoRecord> records(2);
    std::vector<md::RunSummary> runs(2);
    runtime::runInProcess(2, [&](runtime::World& world) {
        AutoSelectOptions select;
        select.shapeKey = "md trial test";
        select.transport.memorySpace = transport::MemorySpace::Host;
        select.candidates = {Backend::Reference, Backend::Staged};
        select.warmupSteps = 2;
        select.stepsPerRepeat = 6;  // three repeats cross the searches at steps 10 and 20
        select.repeats = 3;
        AutoSelection s = selectBackend(world, select, [&](transport::BlockTransport& t, Backend) {
            auto trial = std::make_shared<Trial>(resolved, world, t);
            return RepresentativeSteps([trial](int steps) { trial->engine.advanceTrial(steps); });
        });
        auto backend = md::makeCpuBackend();
        md::Engine engine(resolved, world, *s.transport, *backend);
        runs[static_cast<std::size_t>(world.rank())] = engine.run();
        records[static_cast<std::size_t>(world.rank())] = s.record;
    });
    const AutoRecord& r = records[0];
    EXPECT_EQ(r.source, AutoSource::Measured);
    ASSERT_EQ(r.measured.size(), 2u);
    for (const AutoCandidateTime& m : r.measured) {
        EXPECT_GT(m.secondsPerStep, 0.0) << toString(m.backend);
        EXPECT_EQ(m.repeatSecondsPerStep.size(), 3u);
    }
    EXPECT_EQ(records[1].toJson(), r.toJson());
    EXPECT_EQ(runs[0].transport, toString(r.chosen)) << "the run used the chosen transport";
    EXPECT_EQ(runs[0].steps, 20);
    ASSERT_FALSE(runs[0].energies.empty());
    EXPECT_TRUE(std::isfinite(runs[0].energies.back().total));
    clearAutoSelectionCache();
}

}  // namespace
