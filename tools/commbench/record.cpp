// The commbench JSON record (record.hpp).
#include "record.hpp"

#include <cuda_runtime.h>

#include "haloex/build_info.hpp"

namespace haloex::commbench {

nlohmann::json benchRecord(const std::string& tool, const std::vector<cuda::GpuIdentity>& gpus, nlohmann::json settings,
                           const std::vector<Measurement>& measurements) {
    cudaDeviceProp prop{};
    int device = 0;
    cudaGetDevice(&device);
    cudaGetDeviceProperties(&prop, device);
    nlohmann::json ranks = nlohmann::json::array();
    for (const auto& g : gpus)
        ranks.push_back(nlohmann::json{{"host", g.host}, {"bus_id", g.busId}, {"device", g.device}});
    nlohmann::json doc{{"tool", tool},
                       {"commit", gitCommit()},
                       {"date", utcTimestamp()},
                       {"machine",
                        {{"host", hostName()},
                         {"gpu_name", prop.name},
                         {"ranks", gpus.size()},
                         {"rank_gpus", ranks},
                         {"shared_gpus", cuda::findSharedGpu(gpus).has_value()}}},
                       {"settings", std::move(settings)},
                       {"results", nlohmann::json::array()}};
    for (const auto& m : measurements) doc["results"].push_back(toJson(m));
    return doc;
}

}  // namespace haloex::commbench
