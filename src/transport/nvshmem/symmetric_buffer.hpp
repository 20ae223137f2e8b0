#pragma once
// An nvshmem_malloc'd array (zero-filled on every rank before allocate()
// returns anywhere), for the particle transport and the symmetric memory it
// lends (symmetric_memory.hpp). Allocating and freeing are collective: every
// rank must allocate the same sizes in the same order.
#include <nvshmem.h>

#include <cstddef>
#include <exception>
#include <fmt/format.h>

#include "haloex/core/error.hpp"
#include "haloex/detail/cuda/blocking_ops.hpp"
#include "session.hpp"

namespace haloex::nvshmem_detail {

class SymmetricBuffer {
public:
    SymmetricBuffer() = default;
    SymmetricBuffer(const SymmetricBuffer&) = delete;
    SymmetricBuffer& operator=(const SymmetricBuffer&) = delete;
    ~SymmetricBuffer() { release(); }

    // `what` names the array in the error a too small heap gives.
    void allocate(std::size_t bytes, const char* what) {
        release();
        ptr_ = nvshmem_malloc(bytes);
        if (!ptr_ && bytes > 0) {
            throwError(ErrorKind::Nvshmem,
                       fmt::format("nvshmem_malloc of {} bytes for {} failed: the symmetric heap ({} bytes) is too "
                                   "small; set NVSHMEM_SYMMETRIC_SIZE to at least {} (e.g. {}M)",
                                   bytes, what, symmetricHeapBytes(), 2 * bytes + symmetricHeapBytes(),
                                   (2 * bytes + symmetricHeapBytes()) / (1024 * 1024) + 1));
        }
        cuda::fillBytesNow(ptr_, 0, bytes);
        // nvshmem_malloc's own barrier is at its exit, before this fill: a
        // peer past it could already put into this array (a search-step
        // block, a signal) and see its data zeroed here. Every rank's fill
        // is complete (fillBytesNow synchronises) before any rank returns.
        nvshmem_barrier_all();
    }
    void release() {
        // Collective: skipped while an exception unwinds one rank (the job is aborting).
        if (ptr_ && std::uncaught_exceptions() == 0) nvshmem_free(ptr_);
        ptr_ = nullptr;
    }
    template <class T>
    T* as() const {
        return static_cast<T*>(ptr_);
    }

private:
    void* ptr_ = nullptr;
};

}  // namespace haloex::nvshmem_detail
