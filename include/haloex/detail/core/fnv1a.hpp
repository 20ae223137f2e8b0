#pragma once
// FNV-1a, 64 bit: simple, no table, enough to catch torn, flipped or replaced
// bytes (checkpoint checksums, the recorded tails of continuing outputs). Not
// a cryptographic hash.
#include <array>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <optional>
#include <span>
#include <string>

namespace haloex {

class Fnv1a {
public:
    void add(std::span<const std::byte> bytes) {
        for (const std::byte b : bytes) {
            hash_ ^= static_cast<std::uint64_t>(b);
            hash_ *= 0x100000001b3ULL;
        }
    }
    std::uint64_t value() const { return hash_; }

private:
    std::uint64_t hash_ = 0xcbf29ce484222325ULL;
};

// A file by its contents: the hash of its bytes and their count, or nullopt
// where it cannot be read. Reads it in 64 KiB pieces.
struct FileFingerprint {
    std::uint64_t hash = 0;
    std::uintmax_t bytes = 0;
};
inline std::optional<FileFingerprint> fingerprintOfFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return std::nullopt;
    Fnv1a hash;
    std::array<char, 1 << 16> chunk{};
    FileFingerprint out;
    while (in.read(chunk.data(), static_cast<std::streamsize>(chunk.size())) || in.gcount() > 0) {
        const auto n = static_cast<std::size_t>(in.gcount());
        hash.add(std::as_bytes(std::span(chunk.data(), n)));
        out.bytes += n;
    }
    if (in.bad()) return std::nullopt;
    out.hash = hash.value();
    return out;
}

}  // namespace haloex
