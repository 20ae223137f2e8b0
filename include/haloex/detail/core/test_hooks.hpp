#pragma once
// Test hooks: environment variables that make haloex fail on purpose, so that
// tests can check the diagnostics (HALOEX_TEST_WITHHOLD_SIGNAL=rank:pulse --
// that rank never signals that pulse of the nvshmem transport or the fused
// Jacobi kernel; HALOEX_TEST_STOP_SIGNAL=TERM@25 -- haloex-md's rank 0
// raises SIGTERM at step 25, md/run_stop.hpp). They exist only in builds configured with the CMake option
// HALOEX_TEST_HOOKS (on where the test suite is built, off for installed
// packages: configure those with -DHALOEX_BUILD_TESTS=OFF or
// -DHALOEX_TEST_HOOKS=OFF); elsewhere the variables do nothing.

namespace haloex {

// Whether this build has the test hooks.
bool testHooksEnabled();
// The value of the hook variable `name`, or nullptr when it is unset or the
// build has no test hooks.
const char* testHook(const char* name);

}  // namespace haloex
