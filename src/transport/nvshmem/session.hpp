#pragma once
// NVSHMEM's lifetime in this process: initialised once, collectively, with a
// unique id that rank 0 creates and the World broadcasts (so MPI need not be
// CUDA-aware), and finalised at process exit.
#include <cstddef>

#include "haloex/runtime/world.hpp"

namespace haloex::nvshmem_detail {

// Initialises NVSHMEM on the current CUDA device if it is not yet (collective
// over `world`; every rank calls it). `heapBytesWanted` sizes the symmetric
// heap when NVSHMEM_SYMMETRIC_SIZE is not set by the user. Also sets
// NVSHMEM_DISABLE_NVLS=1 unless the user set it (no NVLink multicast).
void ensureNvshmem(runtime::World& world, std::size_t heapBytesWanted);

// The symmetric heap size in effect (bytes): the user's NVSHMEM_SYMMETRIC_SIZE
// or what ensureNvshmem() chose.
std::size_t symmetricHeapBytes();
// Whether the user set NVSHMEM_SYMMETRIC_SIZE.
bool heapSizeSetByUser();

// Parses NVSHMEM's size syntax ("1G", "512M", "1073741824"); 0 if unreadable.
std::size_t parseNvshmemSize(const char* text);

}  // namespace haloex::nvshmem_detail
