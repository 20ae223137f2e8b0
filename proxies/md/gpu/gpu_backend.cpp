// The GPU backend of haloex-md (docs/md-engine.md#the-step-on-a-gpu): one rank's step as a device
// schedule. Local non-bonded forces on the local stream overlap the halo
// exchange and the non-local forces on a high-priority stream; the update
// waits for both. No host synchronisation inside a step; with a transport that
// allows it the whole step is one CUDA graph launch.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fmt/format.h>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "haloex/core/error.hpp"
#include "haloex/detail/core/environment_switch.hpp"
#include "haloex/detail/core/nvtx.hpp"
#include "haloex/detail/cuda/api_sync_counter.hpp"
#include "haloex/detail/cuda/graph_capture.hpp"
#include "haloex/cuda/check.hpp"
#include "haloex/cuda/device_buffer.hpp"
#include "haloex/cuda/device_select.hpp"
#include "haloex/md/gpu/cell_order.hpp"
#include "haloex/md/gpu/integrate.hpp"
#include "haloex/md/gpu/nonbonded.hpp"
#include "haloex/md/gpu_backend.hpp"
#include "haloex/md/step_arrays.hpp"
#include "haloex/particles/device_plan_builder.hpp"
#include "haloex/particles/migration.hpp"
#include "haloex/particles/particle_store.hpp"

namespace haloex::md {
namespace {

// Events that delimit one step's device timeline (docs/architecture.md#what-the-timings-mean).
struct TimelineEvents {
    cuda::Event localStart{true}, localEnd{true}, nonlocalStart{true}, nonlocalEnd{true};
    cuda::Event forwardEnd{true}, nonlocalForceEnd{true}, stepEnd{true};
};

// Fields of the device-resident home atoms after the positions.
enum HomeField : int { kVelocity = 1, kType = 2, kGlobalId = 3 };

// Receive slots of device plans start at multiples of 4 atoms (16-byte bulk
// copies of the nvshmem transport's TMA path).
constexpr int kDeviceAlignment = 4;

using Clock = std::chrono::steady_clock;

class GpuBackend final : public RankBackend {
public:
    explicit GpuBackend(const GpuBackendOptions& options)
        : options_(options), local_(0), nonlocal_(cuda::Stream::highestPriority()) {
        int device = 0;
        HALOEX_CUDA_CHECK(cudaGetDevice(&device));
        cudaDeviceProp prop{};
        HALOEX_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
        description_ = fmt::format("GPU {}: {}", device, prop.name);
        if (options.countApiSyncs) apiSyncCounter_ = std::make_unique<cuda::ApiSyncCounter>();
        energies_.allocate(gpu::kNumEnergies + 1);
        firstBadHost_.allocate(1);
        scaleHost_.allocate(1);
        kinetic_.resize(1);
        firstBad_.resize(1);
        scale_.resize(1);
    }

    ~GpuBackend() override {
        destroyGraphs();
        if (std::uncaught_exceptions() == 0) cudaDeviceSynchronize();
    }

    std::string description() const override { return description_; }
    transport::MemorySpace memorySpace() const override { return transport::MemorySpace::Device; }

    void adoptPlan(CoordinateForceHalo& halo, runtime::World& world, const plan::ParticleHaloPlan& plan) override {
        HALOEX_ASSERT(halo.memorySpace() == transport::MemorySpace::Device, "the GPU backend needs device arrays");
        arrays_.adopt(halo, world, plan);
    }

    void setHome(CoordinateForceHalo&, std::span<const AtomRecord> home) override {
        deviceResident_ = false;
        numHome_ = static_cast<int>(home.size());
        std::vector<Vec3f> x(home.size()), v(home.size());
        globalIds_.resize(home.size());
        for (std::size_t i = 0; i < home.size(); ++i) {
            x[i] = static_cast<Vec3f>(home[i].position);
            v[i] = static_cast<Vec3f>(home[i].velocity);
            globalIds_[i] = home[i].globalId;
        }
        velocities_.resize(std::max<std::size_t>(1, home.size()));
        // On our (non-blocking) stream, so later work on it is ordered after the copies.
        if (!home.empty()) {
            HALOEX_CUDA_CHECK(cudaMemcpyAsync(arrays_.coordinates(), x.data(), x.size() * sizeof(Vec3f),
                                              cudaMemcpyHostToDevice, local_.get()));
            HALOEX_CUDA_CHECK(cudaMemcpyAsync(velocities_.data(), v.data(), v.size() * sizeof(Vec3f),
                                              cudaMemcpyHostToDevice, local_.get()));
            HALOEX_CUDA_CHECK(cudaStreamSynchronize(local_.get()));
        }
    }

    void prepare(CoordinateForceHalo& halo, const LocalStatics& statics, const BackendContext& context) override {
        const auto& plan = halo.plan();
        numLocal_ = plan.numLocal;
        HALOEX_ASSERT(numHome_ == plan.numHome, "setHome and the plan disagree on the home count");
        charges_.resize(std::max(1, numLocal_));
        masks_.resize(std::max(1, numLocal_));
        HALOEX_CUDA_CHECK(cudaMemcpyAsync(charges_.data(), statics.charges.data(), numLocal_ * sizeof(float),
                                          cudaMemcpyHostToDevice, local_.get()));
        HALOEX_CUDA_CHECK(cudaMemcpyAsync(masks_.data(), statics.zoneMasks.data(), numLocal_ * sizeof(std::uint8_t),
                                          cudaMemcpyHostToDevice, local_.get()));
        HALOEX_CUDA_CHECK(cudaStreamSynchronize(local_.get()));
        buildLists(halo, charges_.data(), masks_.data(), context);
        markGraphsStale(halo);
    }

    bool canSearchOnDevice(const CoordinateForceHalo& halo) const override {
        return halo.memorySpace() == transport::MemorySpace::Device;
    }

    void loadHome(std::span<const AtomRecord> home) override {
        const auto n = home.size();
        std::vector<Vec3f> x(n), v(n);
        std::vector<std::int32_t> types(n);
        std::vector<std::int64_t> ids(n);
        for (std::size_t i = 0; i < n; ++i) {
            x[i] = static_cast<Vec3f>(home[i].position);
            v[i] = static_cast<Vec3f>(home[i].velocity);
            types[i] = home[i].type;
            ids[i] = home[i].globalId;
        }
        home_.upload(static_cast<int>(n), {x.data(), v.data(), types.data(), ids.data()});
        numHome_ = static_cast<int>(n);
        deviceResident_ = true;
    }

    DeviceSearchReport searchOnDevice(CoordinateForceHalo& halo, const plan::Decomposition& decomposition,
                                      runtime::World& world, const BackendContext& context) override {
        HALOEX_ASSERT(deviceResident_, "searchOnDevice before loadHome");
        DeviceSearchReport report;
        cudaStream_t stream = local_.get();
        NvtxParts ranges;  // named as the phases below (docs/md-engine.md, "Search steps")
        ranges.next("migrate");
        auto t = Clock::now();
        const auto phase = [&](const char* name) {
            const auto now = Clock::now();
            report.phasesMs[name] += 1e3 * std::chrono::duration<double>(now - t).count();
            t = now;
        };
        // From the second search on the home positions are the coordinate
        // array's first numHome (home_ is bound to it at the end of every
        // search): the steps moved them there, migration wraps them there and
        // writes its next set back there, so nothing is copied in or out.
        // The first search allocates the arrays before any exchange, with
        // room for what migration may bring (NVSHMEM sizes its heap then).
        arrays_.allocateOnce(halo, world, 2 * static_cast<std::size_t>(home_.size()) + 1024);
        transport::BlockTransport& blocks = halo.transport();
        // Completed after the list build, which synchronises the stream: its
        // checks and the id fingerprint then cost no host round trip of their own.
        particles::MigrationStats migrated = migrator_.beginMigration(home_, decomposition, world, blocks, stream);
        numHome_ = migrated.particles;
        phase("migrate");
        if (context.sortAtoms && numHome_ > 1) {
            // Before the plan, whose index maps then walk the sorted atoms.
            ranges.next("cell order");
            home_.reorder(cellOrder_.compute(home_.positions(), numHome_, stream), stream);
            phase("cell order");
        }

        ranges.next("plan");
        homeCharges_.resize(std::max(1, numHome_));
        gpu::chargesOfTypes(home_.fieldAs<std::int32_t>(kType), numHome_,
                            static_cast<float>(context.forceField->charge), homeCharges_.data(), stream);
        const particles::DeviceField carried[] = {{homeCharges_.data(), sizeof(float)}};
        const plan::ParticleHaloPlan& plan = planBuilder_.build(decomposition, home_.positions(), numHome_, carried,
                                                                kDeviceAlignment, world, blocks, stream);
        phase("plan");
        ranges.next("transport set-up");
        // Bound positions are in the coordinate array (a growth below keeps
        // them: home_ is bound again after it); others are copied there.
        const bool positionsInArrays = home_.positionsIn(arrays_.coordinates());
        arrays_.adopt(halo, world, plan);
        phase("transport set-up");
        ranges.next("positions");
        if (numHome_ > 0 && !positionsInArrays) {
            HALOEX_CUDA_CHECK(cudaMemcpyAsync(arrays_.coordinates(), home_.positions(), numHome_ * sizeof(Vec3f),
                                              cudaMemcpyDeviceToDevice, stream));
            HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));  // before home_ lets its own array go
        }
        home_.bindPositions(arrays_.coordinates(), static_cast<int>(arrays_.capacity()));
        numLocal_ = plan.numLocal;
        phase("positions");
        ranges.next("pair search");
        // The migration's checks and id fingerprint are read after the list
        // build's one synchronisation (on one rank nothing before it waits).
        // A non-finite position makes both refuse: the migration's message
        // names the atom by its global id, so it goes first.
        try {
            buildLists(halo, static_cast<const float*>(planBuilder_.localField(0)), planBuilder_.localZoneMasks(),
                       context);
        } catch (...) {
            migrator_.completeMigration(migrated, home_, world.rank());
            throw;
        }
        migrator_.completeMigration(migrated, home_, world.rank());
        report.idSum = migrated.idSum;
        report.idSquareSum = migrated.idSquareSum;
        phase("pair search");
        report.phasePartsMs = {{"migrate", migrator_.partsMs()},
                               {"plan", planBuilder_.partsMs()},
                               {"pair search", nonbonded_->buildPartsMs()}};
        markGraphsStale(halo);
        report.numHome = numHome_;
        return report;
    }

    void getHome(CoordinateForceHalo&, std::vector<AtomRecord>& home) override {
        synchronize();
        const auto n = static_cast<std::size_t>(numHome_);
        std::vector<Vec3f> x(n), v(n);
        if (n > 0) {
            HALOEX_CUDA_CHECK(cudaMemcpyAsync(x.data(), arrays_.coordinates(), n * sizeof(Vec3f),
                                              cudaMemcpyDeviceToHost, local_.get()));
            HALOEX_CUDA_CHECK(
                cudaMemcpyAsync(v.data(), velocities(), n * sizeof(Vec3f), cudaMemcpyDeviceToHost, local_.get()));
            HALOEX_CUDA_CHECK(cudaStreamSynchronize(local_.get()));
        }
        if (deviceResident_) {
            // Ids and types travel with the atoms on the device.
            std::vector<std::int32_t> types(n);
            std::vector<std::int64_t> ids(n);
            if (n > 0) {
                HALOEX_CUDA_CHECK(
                    cudaMemcpy(types.data(), home_.field(kType), n * sizeof(std::int32_t), cudaMemcpyDeviceToHost));
                HALOEX_CUDA_CHECK(
                    cudaMemcpy(ids.data(), home_.field(kGlobalId), n * sizeof(std::int64_t), cudaMemcpyDeviceToHost));
            }
            home.resize(n);
            for (std::size_t i = 0; i < n; ++i) {
                home[i].type = types[i];
                home[i].globalId = ids[i];
            }
        }
        HALOEX_ASSERT(home.size() == n, "home atom count changed between searches");
        for (std::size_t i = 0; i < n; ++i) {
            home[i].position = static_cast<Vec3d>(x[i]);
            home[i].velocity = static_cast<Vec3d>(v[i]);
        }
    }

    std::int64_t stepsRun() const override { return stepsRun_; }
    std::int64_t stepsInMultiStepGraphs() const override { return stepsInMultiStepGraphs_; }

    void runSteps(CoordinateForceHalo& halo, int count, bool energiesOnLast) override {
        // The call's last step runs alone: an energy step has its own graph,
        // and a timed one records the timeline's events (below).
        const int lastStepApart = energiesOnLast || options_.timing ? 1 : 0;
        for (int s = 0; s < count; ++s) {
            const bool energies = energiesOnLast && s == count - 1;
            const bool scaled = pendingScale_.has_value();
            // The timeline is sampled from the last step before the host
            // waits (synchronize): only that step records its events. Each
            // event is a graph node on the step's critical path (the
            // kernels around it cannot follow one another directly). The
            // energy graph is captured with them (an energy step is always
            // a call's last); a normal last step is enqueued directly, with
            // them.
            const bool timed = options_.timing && s == count - 1;
            if (scaled) {
                *scaleHost_.data() = static_cast<float>(*pendingScale_);
                HALOEX_CUDA_CHECK(cudaMemcpyAsync(scale_.data(), scaleHost_.data(), sizeof(float),
                                                  cudaMemcpyHostToDevice, local_.get()));
                pendingScale_.reset();
            }
            if (refreshBehindStep_) {
                // The first step after a search: enqueued directly, and the
                // normal step's graph captured, updated and uploaded while
                // the GPU runs it (the GPU would wait for them otherwise).
                const NvtxRange range(energies ? "MD step, energies" : "MD step");
                enqueueStep(halo, energies, scaled, timed);
                refreshBehindStep_ = false;
                refreshGraph(normalGraph_, halo, false);
                // The next launch uploads the graph; HALOEX_GRAPH_UPLOAD=1
                // uploads it here on the other stream, beside this step (the
                // next launch on local_ waits for it). Off by default: it
                // measured no faster, and compute-sanitizer crashed inside
                // this call on an H100 (docs/results.md, Known problems).
                if (graphUploadBehindStep_) HALOEX_CUDA_CHECK(cudaGraphUpload(normalGraph_.exec, nonlocal_.get()));
            } else if (const int run = multiStepRun(count - s - lastStepApart, /*queuedThisCall=*/s);
                       useGraphs_ && !scaled && !energies && run > 1) {
                // --steps-per-graph: `run` normal steps in one launch.
                if (multiGraph_.stale) refreshGraph(multiGraph_, halo, false, run);
                const NvtxRange range("MD steps (CUDA graph of several)");
                HALOEX_CUDA_CHECK(cudaGraphLaunch(multiGraph_.exec, local_.get()));
                s += run - 1;
                stepsRun_ += run - 1;
                stepsInMultiStepGraphs_ += run;
            } else if (useGraphs_ && !scaled && (energies || !timed)) {
                StepGraph& graph = energies ? energyGraph_ : normalGraph_;
                if (graph.stale) refreshGraph(graph, halo, energies);
                // One range for the whole step: its phases are nodes of the
                // graph (nsys --cuda-graph-trace=node shows them).
                const NvtxRange range(energies ? "MD step, energies (CUDA graph)" : "MD step (CUDA graph)");
                HALOEX_CUDA_CHECK(cudaGraphLaunch(graph.exec, local_.get()));
            } else {
                const NvtxRange range(energies ? "MD step, energies" : "MD step");
                enqueueStep(halo, energies, scaled, timed);
            }
            ++stepsRun_;
            timelinePending_ = true;
        }
    }

    // How many normal steps the next launch may take as one graph of
    // several (--steps-per-graph): stepsPerGraph_ when that many normal steps
    // remain and the graph is current or may be captured now, else 1. After
    // a search the graph is captured again, but only once kMultiGraphLead
    // steps of this call are queued (`queuedThisCall`: the GPU is busy with
    // them), so the GPU runs them while the host captures. (The first step
    // after a search is runSteps' branch before this one.)
    int multiStepRun(int normalStepsLeft, int queuedThisCall) const {
        if (stepsPerGraph_ <= 1 || normalStepsLeft < stepsPerGraph_) return 1;
        if (multiGraph_.stale && queuedThisCall < kMultiGraphLead) return 1;
        return stepsPerGraph_;
    }

    EnergyTerms energies() override {
        synchronize();
        EnergyTerms e;
        HALOEX_CUDA_CHECK(cudaMemcpyAsync(energies_.data(), nonbonded_->deviceEnergies(),
                                          gpu::kNumEnergies * sizeof(double), cudaMemcpyDeviceToHost, local_.get()));
        HALOEX_CUDA_CHECK(cudaMemcpyAsync(energies_.data() + gpu::kNumEnergies, kinetic_.data(), sizeof(double),
                                          cudaMemcpyDeviceToHost, local_.get()));
        HALOEX_CUDA_CHECK(
            cudaMemcpyAsync(firstBadHost_.data(), firstBad_.data(), sizeof(int), cudaMemcpyDeviceToHost, local_.get()));
        HALOEX_CUDA_CHECK(cudaStreamSynchronize(local_.get()));
        e.lj = energies_[gpu::kEnergyLj];
        e.coulombPairs = energies_[gpu::kEnergyCoulomb];
        e.virial = energies_[gpu::kEnergyVirial];
        e.kinetic = energies_[gpu::kNumEnergies];
        // Every atom carries +q or -q.
        e.coulombSelf = numHome_ * context_.forceField->selfEnergy(context_.forceField->charge);
        const int bad = *firstBadHost_.data();
        if (bad != gpu::kAllFinite && nonFiniteAtom_ < 0 && bad >= 0 && bad < numHome_) {
            nonFiniteAtom_ = globalIdOf(bad);
            nonFiniteStep_ = stepsRun_ - 1;
        }
        e.nonFiniteAtom = nonFiniteAtom_;
        e.nonFiniteStep = nonFiniteStep_;
        return e;
    }

    void setVelocityScale(double lambda) override {
        if (lambda != 1.0) pendingScale_ = lambda;
    }

    void synchronize() override {
        HALOEX_CUDA_CHECK(cudaStreamSynchronize(local_.get()));
        HALOEX_CUDA_CHECK(cudaStreamSynchronize(nonlocal_.get()));
        if (timelinePending_ && options_.timing) sampleTimeline();
        timelinePending_ = false;
    }

    void dropTimelineSample() override { timelinePending_ = false; }
    StepTimings timings() const override { return timings_; }
    bool graphsActive() const override { return useGraphs_; }
    std::map<std::string, int> stepGraphNodes() const override { return normalGraphNodes_; }
    std::vector<std::string> exchangeNotes() const override {
        if (!haloExchange_) return {};
        return {forwardFirst_ ? "the forward exchange's kernel is launched first; the local force kernel starts once "
                                "its blocks have begun (HALOEX_FORWARD_FIRST=0: the local kernel first)"
                              : "the local force kernel is launched before the forward exchange",
                homeStores_ ? "the update stores the next forward's home entries into the receivers, the forward "
                              "moves only the forwarded ones (HALOEX_HOME_STORES=0: the forward stores them all); " +
                                  homeSignalsNote()
                            : "the forward stores the home entries itself (" + noHomeStoresReason_ + ")",
                (haloCopied_ ? std::string("the forward copies the halo positions into the non-local kernel's "
                                           "slots: no gather kernel (HALOEX_FORWARD_COPY=1)")
                             : "a gather kernel puts the halo positions into the non-local kernel's slots (" +
                                   noHaloCopyReason_ + ")") +
                    "; " +
                    (haloForcesTaken_
                         ? std::string("the reverse takes the halo forces from those slots: no scatter "
                                       "kernel (HALOEX_REVERSE_RECORDS=1)")
                         : "a scatter kernel adds the halo forces from those slots (" + noForceRecordsReason_ + ")")};
    }
    // Who signals the receivers of the pulses that send home atoms alone.
    std::string homeSignalsNote() const {
        if (homeStores_->numSignals > 0) {
            return fmt::format("the update's last block also signals the receivers of the {} pulse(s) that send home "
                               "atoms alone (HALOEX_HOME_SIGNALS=1; unset or 0: the forward signals them)",
                               homeStores_->numSignals);
        }
        return homeSignalsRequested() ? "the forward signals every receiver (no pulse sends home atoms alone, or the "
                                        "exchange signals per block)"
                                      : "the forward signals every receiver (HALOEX_HOME_SIGNALS=1: the update's last "
                                        "block signals those of the pulses that send home atoms alone)";
    }
    void countApiSyncs(bool on) override {
        if (apiSyncCounter_) apiSyncCounter_->setCounting(on);
    }
    bool apiSyncsCounted() const override { return apiSyncCounter_ != nullptr; }
    std::map<std::string, std::int64_t> apiSyncs() const override {
        return apiSyncCounter_ ? apiSyncCounter_->byFunction() : std::map<std::string, std::int64_t>{};
    }

private:
    // One MD step, enqueued on the two streams.
    // timed: record the timeline's events (the step runSteps samples).
    void enqueueStep(CoordinateForceHalo& halo, bool energies, bool scaled, bool timed) {
        cudaStream_t local = local_.get(), nonlocal = nonlocal_.get();
        const bool parts = timed && options_.timelineParts;
        if (energies) {
            nonbonded_->clearEnergies(local);
            HALOEX_CUDA_CHECK(cudaMemsetAsync(kinetic_.data(), 0, sizeof(double), local));
            gpu::resetFiniteCheck(firstBad_.data(), local);
        }
        Vec3f* x = arrays_.coordinates();
        Vec3f* f = arrays_.forces();
        // --fuse-update: the local force kernel alone, then one kernel for the
        // home atoms' forces, leapfrog and the next step's gather.
        const bool fused = context_.fuseUpdate;
        if (halo.plan().pulses.empty()) {
            // One rank: no halo, so no non-local work and no second stream.
            enqueueLocalForces(x, f, energies, fused, timed, local);
            if (fused) {
                const NvtxRange range("scatter + leapfrog + gather");
                nonbonded_->updateLocal(leapfrogArgs(energies, scaled), f, energies ? firstBad_.data() : nullptr,
                                        local);
            } else {
                update(halo, energies, scaled);
            }
            if (parts) events_.stepEnd.recordTimestamp(local);
            haloInLastStep_ = false;
            return;
        }
        haloInLastStep_ = true;
        stepStart_.record(local);
        stepStart_.waitOn(nonlocal);

        // Forward first where the exchange signals its kernel's launch
        // (nvshmem's fused forward; HALOEX_FORWARD_FIRST=0 turns it off): the
        // local kernel then waits for the exchange kernel's blocks to begin,
        // so that its own first wave cannot hold the SMs they need. Else
        // local first -- home-home forces need nothing from the peers, and
        // enqueued before the exchange a transport which blocks the host (ipc,
        // staged wait for their pack kernels) cannot delay the local kernel's
        // launch: the order GROMACS and the paper use.
        if (!forwardFirst_) enqueueLocalForces(x, f, energies, fused, timed, local);

        // Non-local, overlapping the above on the high-priority stream: halo
        // coordinates in, non-local forces, halo forces out.
        if (timed) events_.nonlocalStart.recordTimestamp(nonlocal);
        {
            NvtxParts ranges;
            ranges.next("forward x (halo)");
            // The last update stored the home entries already (homeStores_),
            // except before the first step after a search; a captured step
            // always follows an update (markGraphsStale).
            if (fused && homeStores_ && (capturing_ || !forwardNeedsHomeEntries_)) {
                if (homeStores_->numSignals > 0) {
                    halo.gatherCoordinatesAfterHomeSignals(context_.box, nonlocal);
                } else {
                    halo.gatherCoordinatesAfterHomeStores(context_.box, nonlocal);
                }
            } else {
                halo.gatherCoordinates(context_.box, nonlocal);
            }
            if (forwardFirst_) {
                HALOEX_CUDA_CHECK(cudaStreamWaitEvent(local, forwardLaunched_.get(), 0));
                enqueueLocalForces(x, f, energies, fused, timed, local, /*afterForwardLaunched=*/true);
            }
            if (parts) events_.forwardEnd.recordTimestamp(nonlocal);
            ranges.next("non-local non-bonded F");
            if (fused) {
                // The home clusters' positions and forces stay in slot
                // order for updateHome: the halo's alone move here, where
                // the exchange does not move them itself (haloCopied_,
                // haloForcesTaken_).
                nonbonded_->computeNonlocalHalo(x, f, energies, nonlocal);
            } else {
                nonbonded_->computeNonlocal(x, f, energies, nonlocal);
            }
            if (parts) events_.nonlocalForceEnd.recordTimestamp(nonlocal);
            ranges.next("reverse f (halo)");
            halo.scatterAddForces(nonlocal);
        }
        if (timed) events_.nonlocalEnd.recordTimestamp(nonlocal);
        nonlocalDone_.record(nonlocal);

        // Update once all forces are home.
        nonlocalDone_.waitOn(local);
        if (fused) {
            // With a halo the fused update also sums what the non-local
            // scatter and the reverse exchange added (Nonbonded::updateHome).
            NvtxParts ranges;
            ranges.next("force sum + leapfrog + gather");
            nonbonded_->updateHome(leapfrogArgs(energies, scaled), f, energies ? firstBad_.data() : nullptr, local,
                                   homeStores_ ? &*homeStores_ : nullptr);
            if (homeStores_ && !capturing_) forwardNeedsHomeEntries_ = false;
            // The update zeroed the home forces; the halo's, where the
            // transport needs them cleared here (not nvshmem, nccl-device).
            ranges.next("clear halo forces");
            halo.clearHaloForces(local);
        } else {
            update(halo, energies, scaled);
        }
        if (parts) events_.stepEnd.recordTimestamp(local);
    }

    // The local list's forces, timed and named as the step's local part:
    // with the fused update the force kernel alone (the positions are in slot
    // order already), else gather, kernel and scatter into f.
    void enqueueLocalForces(const Vec3f* x, Vec3f* f, bool energies, bool fused, bool timed, cudaStream_t local,
                            bool afterForwardLaunched = false) {
        if (timed) events_.localStart.recordTimestamp(local);
        {
            const NvtxRange range("local non-bonded F");
            if (fused) {
                nonbonded_->computeLocalForces(energies, local, afterForwardLaunched);
            } else {
                nonbonded_->computeLocal(x, f, energies, local, afterForwardLaunched);
            }
        }
        if (timed) events_.localEnd.recordTimestamp(local);
    }

    void update(CoordinateForceHalo& halo, bool energies, bool scaled) {
        cudaStream_t local = local_.get();
        NvtxParts ranges;
        ranges.next("leapfrog");
        if (energies) gpu::checkFinite(arrays_.coordinates(), arrays_.forces(), numHome_, firstBad_.data(), local);
        if (numHome_ > 0) gpu::leapfrog(leapfrogArgs(energies, scaled), local);
        ranges.next("clear forces");
        halo.clearForces(local);
    }

    // What a captured step launches, by node type (stepGraphNodes).
    static std::map<std::string, int> nodesByType(cudaGraph_t graph) {
        std::size_t count = 0;
        HALOEX_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &count));
        std::vector<cudaGraphNode_t> nodes(count);
        HALOEX_CUDA_CHECK(cudaGraphGetNodes(graph, nodes.data(), &count));
        std::map<std::string, int> byType;
        for (cudaGraphNode_t node : nodes) {
            cudaGraphNodeType type{};
            HALOEX_CUDA_CHECK(cudaGraphNodeGetType(node, &type));
            switch (type) {
                case cudaGraphNodeTypeKernel: ++byType["kernel"]; break;
                case cudaGraphNodeTypeMemset: ++byType["memset"]; break;
                case cudaGraphNodeTypeMemcpy: ++byType["memcpy"]; break;
                case cudaGraphNodeTypeEventRecord: ++byType["event record"]; break;
                case cudaGraphNodeTypeWaitEvent: ++byType["event wait"]; break;
                default: ++byType["other"]; break;
            }
        }
        return byType;
    }

    gpu::LeapfrogArgs leapfrogArgs(bool energies, bool scaled) {
        gpu::LeapfrogArgs args;
        args.x = arrays_.coordinates();
        args.v = velocities();
        args.f = arrays_.forces();
        args.numAtoms = numHome_;
        args.dt = static_cast<float>(context_.dt);
        args.mass = static_cast<float>(context_.forceField->mass);
        args.invMass = 1.0f / args.mass;
        args.velocityScale = scaled ? scale_.data() : nullptr;
        args.averageKineticEnergy = energies ? kinetic_.data() : nullptr;
        return args;
    }

    // A step graph: instantiated once, then updated in place after every
    // search (cudaGraphExecUpdate: same kernels, new sizes and pointers);
    // instantiated again only when the update is refused (e.g. a list that
    // became empty removes a kernel).
    struct StepGraph {
        cudaGraphExec_t exec = nullptr;
        bool stale = true;
    };

    // `steps` normal steps in one graph (--steps-per-graph), else one step.
    void refreshGraph(StepGraph& step, CoordinateForceHalo& halo, bool energies, int steps = 1) {
        // Only the energy step's graph records the timeline (see runSteps).
        capturing_ = true;
        cudaGraph_t graph = cuda::captureGraph(local_.get(), [&] {
            for (int k = 0; k < steps; ++k) enqueueStep(halo, energies, false, /*timed=*/energies && options_.timing);
        });
        capturing_ = false;
        if (!energies && steps == 1) normalGraphNodes_ = nodesByType(graph);
        // Instantiated keeping the captured stream priorities: without the
        // flag every node runs at the launch stream's (normal) priority, and
        // the non-local chain queues behind the thousands of local
        // non-bonded blocks.
        if (cuda::updateOrInstantiate(step.exec, graph, cudaGraphInstantiateFlagUseNodePriority)) {
            ++graphUpdates_;
        } else {
            ++graphInstantiations_;
        }
        step.stale = false;
    }

    // After the lists changed: the step graphs must be captured again. The
    // first time (the start-up's search) both are instantiated at once, so
    // that no step pays for it; after that the normal step's is updated
    // behind the next step (which runs without a graph), the energy step's
    // when it is needed.
    void markGraphsStale(CoordinateForceHalo& halo) {
        normalGraph_.stale = energyGraph_.stale = multiGraph_.stale = true;
        if (!useGraphs_) return;
        if (normalGraph_.exec == nullptr) {
            refreshGraph(normalGraph_, halo, false);
            refreshGraph(energyGraph_, halo, true);
            // A captured step's forward takes the home entries from the update
            // before it, which the first step after a search has not had.
            if (!homeStores_) return;
        }
        refreshBehindStep_ = true;
    }

    void destroyGraphs() {
        for (StepGraph* g : {&normalGraph_, &energyGraph_, &multiGraph_}) {
            if (g->exec) cudaGraphExecDestroy(g->exec);
            g->exec = nullptr;
            g->stale = true;
        }
    }

    Vec3f* velocities() { return deviceResident_ ? home_.fieldAs<Vec3f>(kVelocity) : velocities_.data(); }

    std::int64_t globalIdOf(int homeIndex) {
        if (!deviceResident_) return globalIds_[static_cast<std::size_t>(homeIndex)];
        std::int64_t id = -1;
        HALOEX_CUDA_CHECK(
            cudaMemcpy(&id, home_.fieldAs<std::int64_t>(kGlobalId) + homeIndex, sizeof(id), cudaMemcpyDeviceToHost));
        return id;
    }

    // The pair lists from the positions now in the coordinate array (home
    // and, after this call's forward exchange, halo), the local atoms'
    // charges and zone masks (device arrays of numLocal_).
    void buildLists(CoordinateForceHalo& halo, const float* dCharges, const std::uint8_t* dMasks,
                    const BackendContext& context) {
        context_ = context;
        const auto& plan = halo.plan();
        // Dynamic pruning: every step's non-bonded calls re-prune one part of
        // their list on the device (captured into the step graph).
        gpu::NonbondedOptions nbOptions;
        nbOptions.rlistInner = context.pruneParts > 0 ? context.rlistInner : 0.0;
        nbOptions.pruneParts = std::max(1, context.pruneParts);
        nbOptions.searchGraph = context.useGraphs;  // --cuda-graphs 0: no graph anywhere (profilers, debugging)
        if (!nonbonded_ || nonbonded_->rlist() != context.rlist || nonbonded_->rlistInner() != nbOptions.rlistInner ||
            (nbOptions.rlistInner > 0.0 && nonbonded_->pruneParts() != nbOptions.pruneParts)) {
            nonbonded_ = std::make_unique<gpu::Nonbonded>(*context.forceField, context.rlist, nbOptions);
        }
        // The forward's kernel before the local one (enqueueStep), where the
        // exchange can signal its launch (nvshmem's fused forward);
        // HALOEX_FORWARD_FIRST=0 keeps the local kernel first. Set before this
        // search's first forward: the transport may have served another
        // backend before this one (the automatic choice's trial runs).
        forwardFirst_ =
            forwardFirstRequested() && !plan.pulses.empty() && halo.signalForwardLaunched(forwardLaunched_.get());
        if (!forwardFirst_) halo.signalForwardLaunched(nullptr);
        // The fused update stores the home entries of the next forward itself
        // where the exchange lets it (HALOEX_HOME_STORES=0 turns it off);
        // the forward below and the first step's take them themselves.
        homeStores_.reset();
        haloExchange_ = !plan.pulses.empty();
        if (!homeStoresRequested()) {  // read on every run: a bad value is refused with one rank too
            noHomeStoresReason_ = "HALOEX_HOME_STORES=0";
        } else if (!context.fuseUpdate) {
            noHomeStoresReason_ = "they need the fused update";
        } else if (haloExchange_) {
            homeStores_ = halo.homeCoordinateStores(context.box);
            noHomeStoresReason_ = "the transport offers no home stores: it has no load/store path to every receiver";
        }
        // With HALOEX_HOME_SIGNALS=1 the update also signals the receivers
        // that need nothing else, where the table lets it; by default (0:
        // slower on one GPU under MPS, docs/results.md) the forward does.
        if (!homeSignalsRequested() && homeStores_) homeStores_->numSignals = 0;
        forwardNeedsHomeEntries_ = true;
        // Halo positions for the search (every rank takes part), without
        // the last lists' records (the build writes every slot).
        if (haloExchange_) {
            halo.copyReceivedCoordinates({});
            halo.addHaloForcesFromRecords({});
        }
        haloCopied_ = haloForcesTaken_ = false;
        halo.clearForces(local_.get());
        halo.gatherCoordinates(context.box, local_.get());
        nonbonded_->build(arrays_.coordinates(), dCharges, dMasks, numHome_, numLocal_, context.box, context.periodic,
                          local_.get());  // synchronises the stream
        // A forward without its reverse: complete the pair so the transports'
        // ordering contract (forward, reverse alternate) holds. The forces are
        // zero; the reverse only advances the exchange state. Nothing waits
        // for it: the next step (or its graph) is ordered after it on this stream.
        halo.scatterAddForces(local_.get());
        halo.clearForces(local_.get());
        // With HALOEX_FORWARD_COPY=1 / HALOEX_REVERSE_RECORDS=1 the
        // exchange moves the halo's positions into the non-local kernel's
        // slots in its forward / takes the halo's forces from them in its
        // reverse from the next step on, where it can (the fused
        // transports): no gather / no scatter kernel on the non-local
        // chain. Off by default: on one GPU under MPS each measured slower
        // (docs/results.md): the exchange kernels have few blocks, and
        // their last one starts late beside the local force kernel.
        const bool copyRequested = forwardCopyRequested();        // read on every run: a bad value is refused
        const bool recordsRequested = reverseRecordsRequested();  // with one rank too
        noHaloCopyReason_ = "HALOEX_FORWARD_COPY=1 has the forward copy them";
        noForceRecordsReason_ = "HALOEX_REVERSE_RECORDS=1 has the reverse take them";
        if (haloExchange_ && !context.fuseUpdate) {
            noHaloCopyReason_ = noForceRecordsReason_ = "it needs the fused update";
        } else if (haloExchange_) {
            if (copyRequested) {
                haloCopied_ = halo.copyReceivedCoordinates(nonbonded_->haloPositionRecords());
                noHaloCopyReason_ = "the transport cannot copy inside its forward";
            }
            if (recordsRequested) {
                haloForcesTaken_ = halo.addHaloForcesFromRecords(nonbonded_->haloForceRecords());
                noForceRecordsReason_ = "the transport cannot take them inside its reverse";
            }
            nonbonded_->setHaloMovedByExchange(haloCopied_, haloForcesTaken_);
        }
        // Without pulses the exchange does nothing in a step, so any step can be captured.
        useGraphs_ = context.useGraphs && (halo.graphCapturable() || plan.pulses.empty());
        stepsPerGraph_ = context.stepsPerGraph;
        // --timeline-parts: timestamps inside the exchange kernels too, where
        // they record them (before the step graphs are captured).
        if (options_.timelineParts && !plan.pulses.empty() && timestampedHalo_ == nullptr &&
            halo.recordExchangeTimestamps(true)) {
            timestampedHalo_ = &halo;
        }
    }

    static bool homeStoresRequested() {
        return ::haloex::detail::environmentSwitch(
            "HALOEX_HOME_STORES", true, "the update storing the next forward's home entries into the receivers");
    }

    static bool forwardCopyRequested() {
        return ::haloex::detail::environmentSwitch(
            "HALOEX_FORWARD_COPY", false, "the forward copying the halo positions into the non-local kernel's slots");
    }

    static bool reverseRecordsRequested() {
        return ::haloex::detail::environmentSwitch(
            "HALOEX_REVERSE_RECORDS", false, "the reverse taking the halo forces from the non-local kernel's slots");
    }

    static bool homeSignalsRequested() {
        return ::haloex::detail::environmentSwitch(
            "HALOEX_HOME_SIGNALS", false,
            "the update signalling the receivers of the pulses that send home atoms alone");
    }

    static bool graphUploadRequested() {
        return ::haloex::detail::environmentSwitch(
            "HALOEX_GRAPH_UPLOAD", false,
            "the step graph uploaded beside the first step after a search, else by its first launch");
    }

    static bool forwardFirstRequested() {
        return ::haloex::detail::environmentSwitch("HALOEX_FORWARD_FIRST", true,
                                                   "the forward exchange's kernel launched before the local one");
    }

    // The last step's timeline (events are re-recorded every step).
    void sampleTimeline() {
        const auto us = [](const cuda::Event& from, const cuda::Event& to, double& value) {
            float ms = 0.f;
            if (cudaEventElapsedTime(&ms, from, to) != cudaSuccess) {
                cudaGetLastError();
                return false;
            }
            value = 1e3 * ms;
            return true;
        };
        double local = 0, step = 0, nonlocal = 0, overlapEnd = 0, forward = 0, nonlocalForce = 0, reverse = 0;
        const bool parts = options_.timelineParts;
        if (!us(events_.localStart, events_.localEnd, local)) return;
        if (parts && !us(events_.localStart, events_.stepEnd, step)) return;
        // The update starts once the last force is in: the local kernel's end,
        // or the non-local path's where it ends later.
        double lastForce = local;
        if (haloInLastStep_) {
            if (!us(events_.nonlocalStart, events_.nonlocalEnd, nonlocal) ||
                !us(events_.localEnd, events_.nonlocalEnd, overlapEnd)) {
                return;
            }
            double nonlocalEndFromLocalStart = 0;
            if (parts && (!us(events_.nonlocalStart, events_.forwardEnd, forward) ||
                          !us(events_.forwardEnd, events_.nonlocalForceEnd, nonlocalForce) ||
                          !us(events_.nonlocalForceEnd, events_.nonlocalEnd, reverse) ||
                          !us(events_.localStart, events_.nonlocalEnd, nonlocalEndFromLocalStart))) {
                return;
            }
            lastForce = std::max(local, nonlocalEndFromLocalStart);
        }
        if (parts && haloInLastStep_ && timestampedHalo_ != nullptr) {
            if (const auto stamps = timestampedHalo_->lastExchangeTimestamps()) {
                for (const auto& [name, partUs] : exchangeKernelParts(*stamps)) {
                    timings_.addExchangeKernelPart(name, partUs);
                }
            }
        }
        timings_.localUs.push_back(local);
        timings_.nonlocalUs.push_back(nonlocal);
        timings_.nonoverlapUs.push_back(std::max(0.0, overlapEnd));
        if (parts) {
            timings_.forwardUs.push_back(forward);
            timings_.nonlocalForceUs.push_back(nonlocalForce);
            timings_.reverseUs.push_back(reverse);
            timings_.updateUs.push_back(std::max(0.0, step - lastForce));
            timings_.stepUs.push_back(step);
        }
        ++timings_.samples;
    }

    GpuBackendOptions options_;
    std::unique_ptr<cuda::ApiSyncCounter> apiSyncCounter_;  // --count-api-syncs
    std::string description_;
    cuda::Stream local_;
    cuda::Stream nonlocal_;
    cuda::Event stepStart_, nonlocalDone_;
    TimelineEvents events_;
    BackendContext context_;
    std::unique_ptr<gpu::Nonbonded> nonbonded_;
    cuda::DeviceBuffer<Vec3f> velocities_;
    cuda::DeviceBuffer<float> charges_;
    cuda::DeviceBuffer<std::uint8_t> masks_;
    cuda::DeviceBuffer<double> kinetic_;
    cuda::DeviceBuffer<int> firstBad_;
    cuda::DeviceBuffer<float> scale_;
    cuda::PinnedBuffer<double> energies_;
    cuda::PinnedBuffer<int> firstBadHost_;
    cuda::PinnedBuffer<float> scaleHost_;
    std::vector<std::int64_t> globalIds_;
    int numHome_ = 0, numLocal_ = 0;
    std::int64_t stepsRun_ = 0;
    std::int64_t nonFiniteAtom_ = -1, nonFiniteStep_ = -1;
    std::optional<double> pendingScale_;
    bool useGraphs_ = false;
    bool timelinePending_ = false;
    bool haloInLastStep_ = false;
    StepGraph normalGraph_, energyGraph_;
    // --steps-per-graph: stepsPerGraph_ normal steps per launch (multiGraph_).
    StepGraph multiGraph_;
    int stepsPerGraph_ = 1;
    std::int64_t stepsInMultiStepGraphs_ = 0;
    static constexpr int kMultiGraphLead = 4;
    bool refreshBehindStep_ = false;  // a search changed the lists: see runSteps
    bool graphUploadBehindStep_ = graphUploadRequested();
    std::int64_t graphInstantiations_ = 0, graphUpdates_ = 0;
    std::map<std::string, int> normalGraphNodes_;
    StepTimings timings_;
    // The halo whose exchange kernels record timestamps (--timeline-parts), or null.
    CoordinateForceHalo* timestampedHalo_ = nullptr;
    cuda::Event forwardLaunched_{false};  // HALOEX_FORWARD_FIRST: the forward kernel's blocks have begun
    bool forwardFirst_ = false;
    // HALOEX_HOME_STORES: where the update stores the next forward's home
    // entries (CoordinateForceHalo::homeCoordinateStores; this plan's).
    std::optional<transport::HomeCoordinateStores> homeStores_;
    bool forwardNeedsHomeEntries_ = true;  // no update has stored them since the last search
    bool haloExchange_ = false;            // this plan has pulses (exchangeNotes)
    std::string noHomeStoresReason_;       // why homeStores_ is empty (exchangeNotes)
    // HALOEX_FORWARD_COPY: the forward puts the halo positions into the
    // non-local kernel's slots (Nonbonded::haloPositionRecords; these lists').
    bool haloCopied_ = false;
    std::string noHaloCopyReason_;  // why haloCopied_ is false (exchangeNotes)
    // HALOEX_REVERSE_RECORDS: the reverse takes the halo forces from the
    // non-local kernel's slots (Nonbonded::haloForceRecords; these lists').
    bool haloForcesTaken_ = false;
    std::string noForceRecordsReason_;  // why haloForcesTaken_ is false (exchangeNotes)
    bool capturing_ = false;            // refreshGraph is capturing enqueueStep
    // The coordinates and forces of the local atoms (home, then halo), which
    // the halo exchange reads and writes.
    StepArrays arrays_;
    // Device-resident home atoms (device search): positions, velocities,
    // types, global ids; after the first search the positions are the
    // coordinate array's first numHome (ParticleStore::bindPositions).
    particles::ParticleStore home_{{sizeof(Vec3f), sizeof(std::int32_t), sizeof(std::int64_t)}};
    particles::Migrator migrator_{kGlobalId};
    particles::DevicePlanBuilder planBuilder_;
    gpu::CellOrder cellOrder_;  // --sort-atoms
    cuda::DeviceBuffer<float> homeCharges_;
    bool deviceResident_ = false;
};

}  // namespace

int visibleGpuCount() { return cuda::deviceCount(); }

void selectGpuForRank(runtime::World& world, bool allowShared) { cuda::selectDevice(world, allowShared); }

std::unique_ptr<RankBackend> makeGpuBackend(const GpuBackendOptions& options) {
    return std::make_unique<GpuBackend>(options);
}

}  // namespace haloex::md
