#pragma once
// The JSON record both commbench executables write (haloex-commbench,
// haloex-commbench-view): tool, commit, date, the machine as the ranks saw
// it, the settings that change timing, and the measurements.
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "haloex/cuda/device_select.hpp"
#include "results.hpp"

namespace haloex::commbench {

// `gpus`: every rank's GPU (cuda::gatherGpuIdentities); the GPU's name is
// this rank's current device's.
nlohmann::json benchRecord(const std::string& tool, const std::vector<cuda::GpuIdentity>& gpus, nlohmann::json settings,
                           const std::vector<Measurement>& measurements);

}  // namespace haloex::commbench
