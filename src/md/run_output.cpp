#include "haloex/md/run_output.hpp"

#include "haloex/md/home_atoms.hpp"

#include <algorithm>
#include <array>
#include <filesystem>
#include <fmt/format.h>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "haloex/core/error.hpp"

namespace haloex::md {
namespace {

constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();

std::int64_t nextMultipleAfter(std::int64_t step, std::int64_t every) { return (step / every + 1) * every; }

void requireDirectoryOf(const char* option, const std::string& path) {
    if (path.empty()) return;
    const std::filesystem::path parent = std::filesystem::path(path).parent_path();
    std::error_code ec;
    if (!parent.empty() && !std::filesystem::is_directory(parent, ec)) {
        throwError(ErrorKind::Io, fmt::format("{} {}: the directory '{}' does not exist; create it first", option,
                                              path, parent.string()));
    }
}

}  // namespace

System systemFromAtoms(const plan::Box& box, std::span<const AtomRecord> atoms) {
    System s;
    s.box = box;
    s.positions.reserve(atoms.size());
    s.velocities.reserve(atoms.size());
    s.types.reserve(atoms.size());
    s.globalIds.reserve(atoms.size());
    for (const AtomRecord& a : atoms) {
        s.positions.push_back(a.position);
        s.velocities.push_back(a.velocity);
        s.types.push_back(a.type);
        s.globalIds.push_back(a.globalId);
    }
    return s;
}

void runOnRoot(runtime::World& world, const std::function<void()>& task) {
    std::array<std::int64_t, 2> failure{-1, 0};  // error kind (-1: none), message length
    std::string message;
    if (world.rank() == 0) {
        try {
            task();
        } catch (const Error& e) {
            failure[0] = static_cast<std::int64_t>(e.kind());
            message = e.what();
        } catch (const std::exception& e) {
            failure[0] = static_cast<std::int64_t>(ErrorKind::Internal);
            message = e.what();
        }
        failure[1] = static_cast<std::int64_t>(message.size());
    }
    world.broadcastBytes(std::as_writable_bytes(std::span(failure)), 0);
    if (failure[0] < 0) return;
    message.resize(static_cast<std::size_t>(failure[1]));
    if (!message.empty()) world.broadcastBytes(std::as_writable_bytes(std::span(message.data(), message.size())), 0);
    throwError(static_cast<ErrorKind>(failure[0]), world.rank() == 0 ? message : "rank 0: " + message);
}

RunOutput::RunOutput(MdOptions resolved, std::int64_t firstStep)
    : options_(std::move(resolved)), firstStep_(firstStep), restarted_(!options_.restartFile.empty()) {
    if (!options_.trajFile.empty() && options_.trajEvery <= 0) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("--traj {}: --traj-every {} must be positive", options_.trajFile, options_.trajEvery));
    }
    // Found now rather than after hours of steps.
    requireDirectoryOf("--cpt", options_.checkpointFile);
    requireDirectoryOf("--traj", options_.trajFile);
    if (options_.checkpointEvery < 0) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("--cpt-every {} cannot be negative (0: only at the end)", options_.checkpointEvery));
    }
}

bool RunOutput::trajectoryDue(std::int64_t step) const {
    if (options_.trajFile.empty() || (restarted_ && step == firstStep_)) return false;
    return step % options_.trajEvery == 0;
}

bool RunOutput::checkpointDue(std::int64_t step, bool last) const {
    // The start needs no checkpoint: the input (or the restart file) is one.
    if (options_.checkpointFile.empty() || step == firstStep_) return false;
    return last || (options_.checkpointEvery > 0 && step % options_.checkpointEvery == 0);
}

std::int64_t RunOutput::nextOutputStep(std::int64_t step) const {
    std::int64_t next = kNever;
    if (!options_.trajFile.empty()) next = std::min(next, nextMultipleAfter(step, options_.trajEvery));
    if (!options_.checkpointFile.empty() && options_.checkpointEvery > 0) {
        next = std::min(next, nextMultipleAfter(step, options_.checkpointEvery));
    }
    return next;
}

bool RunOutput::isOutputStep(std::int64_t step, bool last) const {
    return trajectoryDue(step) || checkpointDue(step, last);
}

CheckpointData RunOutput::checkpoint(const plan::Box& box, std::span<const AtomRecord> atoms,
                                     const RunState& state) const {
    CheckpointData c;
    c.step = state.step;
    c.time = static_cast<double>(state.step) * options_.dt;
    c.rc = options_.rc;
    c.rlist = options_.rlist;
    c.nstlist = options_.nstlist;
    c.dt = options_.dt;
    c.seed = options_.seed;
    c.temperature = options_.temperature;
    c.thermostat = options_.thermostat;
    c.tauT = options_.tauT;
    c.thermostatEnergy = state.thermostatEnergy;
    c.pendingVelocityScale = state.pendingVelocityScale;
    c.thermostatRandom = state.thermostatRandom;
    c.system = systemFromAtoms(box, atoms);
    c.atomCount = c.system.size();
    return c;
}

void RunOutput::write(runtime::World& world, const plan::Box& box, std::span<const AtomRecord> home,
                      const RunState& state, bool last) {
    const bool frame = trajectoryDue(state.step);
    const bool checkpointNow = checkpointDue(state.step, last);
    if (!frame && !checkpointNow) return;
    const std::vector<AtomRecord> all = gatherAtomsOnRoot(home, world);
    runOnRoot(world, [&] {
        if (frame) {
            if (!trajectory_) {
                // A restart continues the trajectory of the run it continues.
                const auto mode = restarted_ ? GroTrajectoryWriter::Mode::Append : GroTrajectoryWriter::Mode::Truncate;
                trajectory_ = std::make_unique<GroTrajectoryWriter>(options_.trajFile, mode);
            }
            const double time = static_cast<double>(state.step) * options_.dt;
            const std::string title = fmt::format("haloex-md t= {:.5f} step= {}", time, state.step);
            trajectory_->writeFrame(systemFromAtoms(box, all), title, false);
        }
        if (checkpointNow) writeCheckpoint(options_.checkpointFile, checkpoint(box, all, state));
    });
}

}  // namespace haloex::md
