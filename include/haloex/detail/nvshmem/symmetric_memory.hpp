#pragma once
// NVSHMEM symmetric memory for arrays outside the transport (library
// haloex_nvshmem): halo/collective_buffer.hpp hands it out for the nvshmem
// backend. Needs no NVSHMEM header in the including code.
#include <cstddef>
#include <memory>
#include <string>

#include "haloex/runtime/world.hpp"

namespace haloex::nvshmem_detail {
class SymmetricBuffer;
}

namespace haloex::nvshmem {

// One nvshmem_malloc'd array, zero-filled. Construction and destruction are
// collective over the World (every rank, the same sizes, the same order);
// NVSHMEM is initialised on first use on the current CUDA device (select it
// first), with a symmetric heap of at least 4x `bytes` unless
// NVSHMEM_SYMMETRIC_SIZE is set. A heap too small throws Nvshmem saying what
// to set. `what` names the array in that message.
class SymmetricAllocation {
public:
    SymmetricAllocation(runtime::World& world, std::size_t bytes, const std::string& what);
    ~SymmetricAllocation();
    SymmetricAllocation(const SymmetricAllocation&) = delete;
    SymmetricAllocation& operator=(const SymmetricAllocation&) = delete;

    void* data() const;
    // Rank `rank`'s copy of this array as this process's kernels address it
    // with loads and stores (nvshmem_ptr: NVLink/P2P peers, and this rank),
    // or nullptr where only NVSHMEM's put/get reach it. Host side only.
    void* peerData(int rank) const;
    std::size_t bytes() const { return bytes_; }

private:
    std::unique_ptr<nvshmem_detail::SymmetricBuffer> buffer_;
    std::size_t bytes_;
};

}  // namespace haloex::nvshmem
