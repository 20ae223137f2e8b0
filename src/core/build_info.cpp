#include "haloex/build_info.hpp"

#include <unistd.h>

#include <ctime>
#include <fmt/format.h>

#include "haloex/config.hpp"

namespace haloex {

std::string buildDescription(const std::string& program) {
    return fmt::format("{} (haloex {}), commit {}\n"
                       "build:   {}, {}\n"
                       "CUDA:    {}\n"
                       "MPI:     {}\n"
                       "NCCL:    {}\n"
                       "NVSHMEM: {}\n"
                       "H5MD:    {}",
                       program, HALOEX_VERSION, gitCommit(), HALOEX_BUILD_TYPE, HALOEX_BUILD_COMPILER,
                       HALOEX_BUILD_CUDA, HALOEX_BUILD_MPI, HALOEX_BUILD_NCCL, HALOEX_BUILD_NVSHMEM, HALOEX_BUILD_H5MD);
}

std::string hostName() {
    char name[256] = {};
    gethostname(name, sizeof name - 1);
    return name;
}

std::string utcTimestamp() {
    const std::time_t t = std::time(nullptr);
    std::tm utc{};
    gmtime_r(&t, &utc);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
    return text;
}

}  // namespace haloex
