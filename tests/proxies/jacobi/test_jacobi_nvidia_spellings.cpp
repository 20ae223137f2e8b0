// NVIDIA's single-dash Jacobi options (-niter 10 -nx 256) mapped to
// haloex-jacobi's own; the ones it has no counterpart for, and any other
// single-dash word, refused with what is accepted.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/nvidia_spellings.hpp"
#include "haloex/core/error.hpp"

namespace haloex::jacobi {
namespace {

using Args = std::vector<std::string>;

std::string refusal(const Args& args) {
    try {
        mapNvidiaSpellings(args);
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::InvalidInput) << e.what();
        return e.what();
    }
    return {};
}

TEST(JacobiNvidiaSpellings, MapsTheSharedOptions) {
    EXPECT_EQ(mapNvidiaSpellings({"-niter", "10", "-nx", "256", "-ny", "128", "-nccheck", "5", "-csv"}),
              (Args{"--niter", "10", "--nx", "256", "--ny", "128", "--nccheck", "5", "--csv"}));
    EXPECT_EQ(mapNvidiaSpellings({"-niter=10"}), (Args{"--niter=10"}));
}

TEST(JacobiNvidiaSpellings, LeavesEverythingElse) {
    const Args own{"--niter", "10", "-h", "--wait-timeout", "-1", "--transport", "cpu", "-", "--json", "x.json"};
    EXPECT_EQ(mapNvidiaSpellings(own), own);
}

TEST(JacobiNvidiaSpellings, RefusesTheirOptionsWithoutACounterpart) {
    const std::string why = refusal({"-niter", "10", "-use_hp_streams"});
    EXPECT_NE(why.find("-use_hp_streams (an option of NVIDIA's Jacobi examples)"), std::string::npos) << why;
    EXPECT_NE(refusal({"-skip_single_gpu"}).find("one-device computation"), std::string::npos);
}

TEST(JacobiNvidiaSpellings, RefusesOtherSingleDashWords) {
    const std::string why = refusal({"-decomp", "2x1"});
    EXPECT_NE(why.find("-decomp: not an option"), std::string::npos) << why;
    EXPECT_NE(why.find("--decomp?"), std::string::npos) << why;
    EXPECT_NE(why.find("-niter, -nccheck, -nx, -ny and -csv"), std::string::npos) << why;
}

}  // namespace
}  // namespace haloex::jacobi
