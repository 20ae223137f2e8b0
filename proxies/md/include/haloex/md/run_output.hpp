#pragma once
// What an MD run writes at step boundaries: trajectory frames (--traj,
// --traj-every; .gro, or H5MD by the extension .h5/.h5md) and checkpoints (--cpt, --cpt-every, and at the end or stop).
// The engine ends its step chunks at nextOutputStep() and calls write()
// there. The trajectory goes through OutputFiles (output_files.hpp), whose
// positions every checkpoint records, so that a restart continues it exactly.
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "haloex/md/checkpoint.hpp"
#include "haloex/md/gro.hpp"
#include "haloex/md/home_atoms.hpp"
#include "haloex/md/options.hpp"
#include "haloex/plan/box.hpp"
#include "haloex/runtime/world.hpp"

namespace haloex::md {

class OutputFiles;
struct EnergySample;

// The engine's state at a step boundary, besides the atoms.
struct RunState {
    std::int64_t step = 0;              // the next step to run
    double thermostatEnergy = 0.0;      // kJ/mol
    double pendingVelocityScale = 1.0;  // lambda the next step applies
    PortableRandomState thermostatRandom;
};

// Where write() is called: an ordinary step boundary, the end of the run, or
// a stop (signal, --maxh), which writes its checkpoint even without --cpt
// (MdOptions::stopCheckpointFile).
enum class Boundary { Step, End, Stop };

class RunOutput {
public:
    // `resolved`: resolved options; `firstStep`: the run's first step. A
    // restarted run writes nothing at its first step (the previous run did)
    // and continues its trajectory.
    RunOutput(MdOptions resolved, std::int64_t firstStep);
    RunOutput(const RunOutput&) = delete;
    RunOutput& operator=(const RunOutput&) = delete;
    ~RunOutput();

    // Collective, before the first step: rank 0 opens the continuing outputs
    // (OutputFiles::open: a restart's `checkpoint` says where each one stood;
    // nullptr for a fresh run) and prints what it cut back unless `quiet`. A
    // refusal on rank 0 is thrown on every rank. `atoms`: the system's atom
    // count (an H5MD trajectory's frames are that long).
    void open(runtime::World& world, const CheckpointData* checkpoint, std::int64_t atoms);

    // The first boundary after `step` at which something may be written
    // (INT64_MAX when nothing): trajectory steps are multiples of traj-every,
    // checkpoint steps multiples of cpt-every (absolute step numbers).
    std::int64_t nextOutputStep(std::int64_t step) const;
    // Whether write() would write anything at `step` (a checkpoint is always
    // written at the end when --cpt is set, and at a stop).
    bool isOutputStep(std::int64_t step, Boundary boundary) const;

    // Collective. Gathers every rank's home atoms (positions x(step),
    // velocities v(step - dt/2)) on rank 0, which writes the frame (.gro:
    // "haloex-md t= <time> step= <step>", positions only; .h5/.h5md: an H5MD
    // frame, h5md_trajectory.hpp) and the checkpoint
    // (atomically) due at state.step. An error on rank 0 is thrown on every
    // rank. Returns whether a checkpoint was written.
    bool write(runtime::World& world, const plan::Box& box, std::span<const AtomRecord> home, const RunState& state,
               Boundary boundary);
    // Collective: a checkpoint at state.step now (--cpt-minutes), unless one
    // was written there already.
    void writeCheckpoint(runtime::World& world, const plan::Box& box, std::span<const AtomRecord> home,
                         const RunState& state);

    // Collective: the energy step's row into --energy (rank 0 writes; an
    // error there is thrown on every rank). Nothing without --energy.
    void appendEnergies(runtime::World& world, const EnergySample& sample);
    // Collective: text for the log (--log; rank 0 writes), at `step`.
    void appendLog(runtime::World& world, const std::string& text, std::int64_t step);

    // Frames in the trajectory (rank 0; a restart counts the ones before it).
    std::int64_t framesWritten() const;

private:
    bool trajectoryDue(std::int64_t step) const;
    bool checkpointDue(std::int64_t step, Boundary boundary) const;
    // The checkpoint file at `boundary` (empty: none).
    const std::string& checkpointPath(Boundary boundary) const;
    void writeDue(runtime::World& world, const plan::Box& box, std::span<const AtomRecord> home, const RunState& state,
                  bool frame, const std::string& checkpointFile);
    CheckpointData checkpoint(const plan::Box& box, std::span<const AtomRecord> atoms, const RunState& state) const;

    MdOptions options_;
    std::int64_t firstStep_ = 0;
    bool restarted_ = false;
    std::unique_ptr<OutputFiles> files_;  // rank 0, from open()
    // What write() wrote last (every rank): a stop at a search step asks for
    // the step's outputs again, with the final checkpoint; each is written once.
    std::int64_t lastFrameStep_ = -1;
    std::int64_t lastCheckpointStep_ = -1;
    bool warnedPreviousNotKept_ = false;  // rank 0: the previous checkpoint could not be kept (said once)
};

// The atoms as a System (same order).
System systemFromAtoms(const plan::Box& box, std::span<const AtomRecord> atoms);

// Runs `task` on rank 0 only. Collective: an exception there is rethrown on
// every rank (same kind and message), so no rank waits for one that failed.
void runOnRoot(runtime::World& world, const std::function<void()>& task);

}  // namespace haloex::md
