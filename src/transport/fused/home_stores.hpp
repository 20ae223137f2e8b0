#pragma once
// The table of transport::HomeCoordinateStores on the device: for each pulse
// that sends home atoms, every home atom's entry in the pulse (or -1), so
// that a caller's kernel can store an atom's coordinates where the forward
// would (home_stores.cu).
#include <cuda_runtime.h>

namespace haloex::nvshmem_detail {

// entryOfHome[map[i]] = i for the pulse's independent entries i in
// [0, numIndependent) (home atoms: each at most once per pulse). The caller
// has set the pulse's numHome entries to -1 first.
void writeEntriesOfHome(const int* map, int numIndependent, int* entryOfHome, cudaStream_t stream);

}  // namespace haloex::nvshmem_detail
