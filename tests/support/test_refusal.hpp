#pragma once
// What a refusal said: runs `fn`, which must throw haloex's InvalidInput, and
// returns its message (a failure, and "", when it throws none).
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "haloex/core/error.hpp"

namespace haloex::testing {

inline std::string invalidInputMessage(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::InvalidInput) << e.what();
        return e.what();
    }
    ADD_FAILURE() << "not refused";
    return "";
}

}  // namespace haloex::testing
