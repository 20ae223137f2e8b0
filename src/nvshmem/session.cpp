#include "session.hpp"

#include <nvshmem.h>
#include <nvshmemx.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fmt/format.h>
#include <string>

#include "haloex/core/error.hpp"

namespace haloex::nvshmem_detail {
namespace {

bool initialised = false;
std::size_t heapBytes = 0;
bool userHeap = false;

struct Finalizer {
    ~Finalizer() {
        if (initialised) nvshmem_finalize();
    }
};
Finalizer finalizer;

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
    setenv("NVSHMEM_DISABLE_NVLS", "1", /*overwrite=*/0);
    const char* userSize = std::getenv("NVSHMEM_SYMMETRIC_SIZE");
    if (userSize) {
        userHeap = true;
        heapBytes = parseNvshmemSize(userSize);
        if (heapBytes == 0) {
            throwError(ErrorKind::Nvshmem, fmt::format("NVSHMEM_SYMMETRIC_SIZE='{}' is not a size (e.g. 2G, 512M)",
                                                       userSize));
        }
    } else {
        // Room for growth at repartitioning; at least NVSHMEM's usual 1 GiB.
        const std::size_t MiB = 1024 * 1024;
        heapBytes = std::max<std::size_t>(1024 * MiB, (4 * heapBytesWanted + MiB - 1) / MiB * MiB);
        setenv("NVSHMEM_SYMMETRIC_SIZE", std::to_string(heapBytes).c_str(), 1);
    }

    nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
    if (world.rank() == 0 && nvshmemx_get_uniqueid(&id) != 0) {
        throwError(ErrorKind::Nvshmem, "nvshmemx_get_uniqueid failed on rank 0");
    }
    world.broadcastBytes(std::as_writable_bytes(std::span(&id, 1)), 0);
    nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
    if (nvshmemx_set_attr_uniqueid_args(world.rank(), world.size(), &id, &attr) != 0) {
        throwError(ErrorKind::Nvshmem, fmt::format("nvshmemx_set_attr_uniqueid_args failed on rank {}", world.rank()));
    }
    if (nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr) != 0) {
        throwError(ErrorKind::Nvshmem, fmt::format("nvshmemx_init_attr failed on rank {}", world.rank()));
    }
    initialised = true;
    if (nvshmem_my_pe() != world.rank() || nvshmem_n_pes() != world.size()) {
        throwError(ErrorKind::Nvshmem, fmt::format("NVSHMEM numbered this rank PE {} of {}, the job says rank {} of {}",
                                                   nvshmem_my_pe(), nvshmem_n_pes(), world.rank(), world.size()));
    }
}

}  // namespace haloex::nvshmem_detail
