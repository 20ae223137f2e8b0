#include "session.hpp"

#include <nvshmem.h>
#include <nvshmemx.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fmt/format.h>
#include <string>

#include "haloex/core/error.hpp"
#include "haloex/detail/nvshmem/bootstrap.hpp"

namespace haloex::nvshmem_detail {
namespace {

bool initialised = false;
std::size_t heapBytes = 0;
bool userHeap = false;

// Registered after CUDA is up, so it runs before the CUDA runtime tears down
// (a static object's destructor would run after it, and finalize would fail).
void finalizeAtExit() {
    if (initialised) nvshmem_finalize();
    initialised = false;
}

}  // namespace

std::size_t parseNvshmemSize(const char* text) {
    if (!text || !*text) return 0;
    char* end = nullptr;
    const double value = std::strtod(text, &end);
    if (end == text || value <= 0) return 0;
    double scale = 1;
    switch (std::toupper(static_cast<unsigned char>(*end))) {
        case 'K': scale = 1024.0; break;
        case 'M': scale = 1024.0 * 1024; break;
        case 'G': scale = 1024.0 * 1024 * 1024; break;
        case 'T': scale = 1024.0 * 1024 * 1024 * 1024; break;
        case '\0': break;
        default: return 0;
    }
    return static_cast<std::size_t>(value * scale);
}

std::size_t symmetricHeapBytes() { return heapBytes; }
bool heapSizeSetByUser() { return userHeap; }

void ensureNvshmem(runtime::World& world, std::size_t heapBytesWanted) {
    if (initialised) return;
    // Never NVLink multicast here (it can take a shared host's GPUs down).
    setenv("NVSHMEM_DISABLE_NVLS", "1", /*overwrite=*/0);  // before NVSHMEM reads its environment
    const char* userSize = std::getenv("NVSHMEM_SYMMETRIC_SIZE");
    if (userSize) {
        userHeap = true;
        heapBytes = parseNvshmemSize(userSize);
        if (heapBytes == 0) {
            throwError(ErrorKind::Nvshmem,
                       fmt::format("NVSHMEM_SYMMETRIC_SIZE='{}' is not a size (e.g. 2G, 512M)", userSize));
        }
    } else {
        // Room for growth at repartitioning; at least NVSHMEM's usual 1 GiB.
        const std::size_t MiB = 1024 * 1024;
        heapBytes = std::max<std::size_t>(1024 * MiB, (4 * heapBytesWanted + MiB - 1) / MiB * MiB);
        setenv("NVSHMEM_SYMMETRIC_SIZE", std::to_string(heapBytes).c_str(), 1);
    }

    nvshmem_bootstrap::initWithUniqueId(world);
    initialised = true;
    std::atexit(finalizeAtExit);
}

}  // namespace haloex::nvshmem_detail
