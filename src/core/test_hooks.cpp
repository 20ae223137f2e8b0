#include "haloex/detail/core/test_hooks.hpp"

#include <cstdlib>

// Set by CMake from the option HALOEX_TEST_HOOKS (src/CMakeLists.txt).
#ifndef HALOEX_TEST_HOOKS
#error "HALOEX_TEST_HOOKS must be defined to 0 or 1"
#endif

namespace haloex {

bool testHooksEnabled() { return HALOEX_TEST_HOOKS != 0; }

const char* testHook(const char* name) {
#if HALOEX_TEST_HOOKS
    return std::getenv(name);
#else
    (void)name;
    return nullptr;
#endif
}

}  // namespace haloex
