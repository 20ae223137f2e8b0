#pragma once
// Named ranges for profilers (Nsight Systems shows them above the kernels they
// launched): NVTX3 is header-only and ships with the CUDA toolkit, so nothing
// is linked, and a range costs two calls that do nothing unless a profiler is
// attached. Without CUDA (or where the header is not on the include path)
// the range compiles to nothing.
#include "haloex/config.hpp"

#if HALOEX_HAVE_CUDA && __has_include(<nvtx3/nvToolsExt.h>)
#include <nvtx3/nvToolsExt.h>
#define HALOEX_HAVE_NVTX 1
#else
#define HALOEX_HAVE_NVTX 0
#endif

namespace haloex {

// One range from construction to destruction. `name` must outlive the range
// (string literals: the names of docs/md-engine.md's phases).
class NvtxRange {
public:
    explicit NvtxRange(const char* name) noexcept {
#if HALOEX_HAVE_NVTX
        nvtxRangePushA(name);
#else
        (void)name;
#endif
    }
    ~NvtxRange() {
#if HALOEX_HAVE_NVTX
        nvtxRangePop();
#endif
    }
    NvtxRange(const NvtxRange&) = delete;
    NvtxRange& operator=(const NvtxRange&) = delete;
};

// Consecutive parts of one phase (the parts of a search step): next() ends
// the part that is open and opens the next, the destructor ends the last.
class NvtxParts {
public:
    NvtxParts() = default;
    void next(const char* name) noexcept {
#if HALOEX_HAVE_NVTX
        if (open_) nvtxRangePop();
        nvtxRangePushA(name);
        open_ = true;
#else
        (void)name;
#endif
    }
    void end() noexcept {
#if HALOEX_HAVE_NVTX
        if (open_) nvtxRangePop();
        open_ = false;
#endif
    }
    ~NvtxParts() { end(); }
    NvtxParts(const NvtxParts&) = delete;
    NvtxParts& operator=(const NvtxParts&) = delete;

private:
    [[maybe_unused]] bool open_ = false;
};

}  // namespace haloex
