// src/core/test_hooks.cpp compiled as for an installed package
// (HALOEX_TEST_HOOKS=0): a hook variable set in the environment does nothing,
// so HALOEX_TEST_WITHHOLD_SIGNAL cannot make a production run hang or fail.
#include <gtest/gtest.h>

#include <cstdlib>

#include "haloex/detail/core/test_hooks.hpp"

TEST(TestHooks, OffInPackagesEvenWhenTheVariableIsSet) {
    ::setenv("HALOEX_TEST_WITHHOLD_SIGNAL", "1:0", 1);
    EXPECT_FALSE(haloex::testHooksEnabled());
    EXPECT_EQ(haloex::testHook("HALOEX_TEST_WITHHOLD_SIGNAL"), nullptr);
}
