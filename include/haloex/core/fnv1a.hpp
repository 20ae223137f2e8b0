#pragma once
// FNV-1a, 64 bit: simple, no table, enough to catch torn, flipped or replaced
// bytes (checkpoint checksums, the recorded tails of continuing outputs). Not
// a cryptographic hash.
#include <cstddef>
#include <cstdint>
#include <span>

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

}  // namespace haloex
