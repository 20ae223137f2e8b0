#pragma once
// What a refusal said: runs `fn`, which must throw haloex's InvalidInput, and
// returns its message (a failure, and "", when it throws none); or, for a
// body that may or may not throw, the message of the haloex::Error it throws.
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

// The message of the haloex::Error `body` throws ("" when it throws nothing),
// its kind into `*kind` where given.
template <class Body>
std::string errorMessageOf(Body body, ErrorKind* kind = nullptr) {
    try {
        body();
    } catch (const Error& e) {
        if (kind != nullptr) *kind = e.kind();
        return e.what();
    }
    return "";
}

}  // namespace haloex::testing
