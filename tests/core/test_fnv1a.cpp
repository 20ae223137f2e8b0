// FNV-1a and a file's fingerprint (the measured Auto's cache key names an
// input file by its contents).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "haloex/detail/core/fnv1a.hpp"
#include "test_temp_dir.hpp"

namespace haloex {
namespace {

std::uint64_t hashOf(const std::string& text) {
    Fnv1a h;
    h.add(std::as_bytes(std::span(text.data(), text.size())));
    return h.value();
}

TEST(Fnv1a, KnownValues) {
    EXPECT_EQ(hashOf(""), 0xcbf29ce484222325ULL);  // the offset basis
    EXPECT_EQ(hashOf("a"), 0xaf63dc4c8601ec8cULL);
    EXPECT_EQ(hashOf("foobar"), 0x85944171f73967e8ULL);
}

TEST(FileFingerprint, NamesTheContentsNotThePath) {
    const std::filesystem::path dir = testing::freshTestDir("fnv1a");
    const auto write = [&](const std::string& name, const std::string& text) {
        testing::writeFileText(dir / name, text);
        return (dir / name).string();
    };
    std::string big(200000, 'x');  // several 64 KiB pieces
    big[123456] = 'y';
    const auto a = fingerprintOfFile(write("a.gro", big));
    const auto copy = fingerprintOfFile(write("copy.gro", big));
    ASSERT_TRUE(a && copy);
    EXPECT_EQ(a->hash, copy->hash) << "the same bytes under another name";
    EXPECT_EQ(a->bytes, big.size());
    EXPECT_EQ(a->hash, hashOf(big));
    big[7] = 'z';
    const auto edited = fingerprintOfFile(write("a.gro", big));
    ASSERT_TRUE(edited);
    EXPECT_NE(edited->hash, a->hash) << "an edited file with the same name";
    EXPECT_FALSE(fingerprintOfFile((dir / "missing.gro").string()).has_value());
}

}  // namespace
}  // namespace haloex
