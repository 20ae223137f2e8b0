// On/off switches from the environment (haloex/detail/core/environment_switch.hpp):
// unset or empty is the default, 0 and 1 are off and on, anything else is
// refused with a message naming the variable, its value and what it takes.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "haloex/core/error.hpp"
#include "haloex/detail/core/environment_switch.hpp"

namespace haloex::detail {
namespace {

constexpr const char* kName = "HALOEX_TEST_ENVIRONMENT_SWITCH";

class EnvironmentSwitch : public ::testing::Test {
protected:
    void TearDown() override { ::unsetenv(kName); }
    static void set(const char* value) { ASSERT_EQ(::setenv(kName, value, 1), 0); }
};

TEST_F(EnvironmentSwitch, UnsetOrEmptyGivesTheDefault) {
    ::unsetenv(kName);
    EXPECT_TRUE(environmentSwitch(kName, true, "a test switch"));
    EXPECT_FALSE(environmentSwitch(kName, false, "a test switch"));
    set("");
    EXPECT_TRUE(environmentSwitch(kName, true, "a test switch"));
    EXPECT_FALSE(environmentSwitch(kName, false, "a test switch"));
}

TEST_F(EnvironmentSwitch, ZeroAndOneOverrideEitherDefault) {
    set("0");
    EXPECT_FALSE(environmentSwitch(kName, true, "a test switch"));
    EXPECT_FALSE(environmentSwitch(kName, false, "a test switch"));
    set("1");
    EXPECT_TRUE(environmentSwitch(kName, true, "a test switch"));
    EXPECT_TRUE(environmentSwitch(kName, false, "a test switch"));
}

TEST_F(EnvironmentSwitch, AnyOtherValueIsRefusedNamingWhatItTakes) {
    for (const char* value : {"off", "on", "2", " 1", "1 ", "true", "00"}) {
        SCOPED_TRACE(value);
        set(value);
        try {
            environmentSwitch(kName, true, "a test switch");
            ADD_FAILURE() << "accepted";
        } catch (const Error& e) {
            const std::string message = e.what();
            EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
            EXPECT_NE(message.find(std::string(kName) + "='" + value + "'"), std::string::npos) << message;
            EXPECT_NE(message.find("use 0 or 1 (a test switch; unset: 1)"), std::string::npos) << message;
        }
    }
}

TEST_F(EnvironmentSwitch, ARunDependentDefaultIsDescribedByItsRule) {
    set("off");
    try {
        environmentSwitch(kName, true, "a test switch", "1 up to 100000 atoms, 0 above");
        ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
        const std::string message = e.what();
        EXPECT_NE(message.find("use 0 or 1 (a test switch; unset: 1 up to 100000 atoms, 0 above)"), std::string::npos)
            << message;
    }
    set("0");
    EXPECT_FALSE(environmentSwitch(kName, true, "a test switch", "1 up to 100000 atoms, 0 above"));
}

}  // namespace
}  // namespace haloex::detail
