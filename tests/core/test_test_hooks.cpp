// The tested build has the test hooks (HALOEX_TEST_HOOKS=ON, the default
// where the tests are built): a hook variable is seen.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "haloex/detail/core/test_hooks.hpp"

TEST(TestHooks, OnInTheTestedBuild) {
    ASSERT_TRUE(haloex::testHooksEnabled());
    ::setenv("HALOEX_TEST_SOMETHING", "1:0", 1);
    ASSERT_NE(haloex::testHook("HALOEX_TEST_SOMETHING"), nullptr);
    EXPECT_EQ(std::string(haloex::testHook("HALOEX_TEST_SOMETHING")), "1:0");
    ::unsetenv("HALOEX_TEST_SOMETHING");
    EXPECT_EQ(haloex::testHook("HALOEX_TEST_SOMETHING"), nullptr);
}
