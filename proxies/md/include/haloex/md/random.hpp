#pragma once
// Random numbers that are identical on every platform for a given seed.
// std::mt19937_64's output sequence is fixed by the C++ standard, but the
// standard distributions (uniform_real, normal, ...) are not: libstdc++, libc++
// and MSVC give different numbers. So the transforms here are our own and use
// only IEEE-exact arithmetic (see portable_math.hpp).
#include <cstdint>
#include <random>

namespace haloex::md {

// Where a PortableRandom stands, in a form that is the same on every platform
// (the engine's own text form is not: libstdc++ and libc++ write different
// things), so checkpoints can carry it.
struct PortableRandomState {
    std::uint64_t seed = 0;
    std::uint64_t draws = 0;  // 64-bit engine outputs taken since seeding
    double spareNormal = 0.0;
    bool haveSpare = false;

    bool operator==(const PortableRandomState&) const = default;
};

class PortableRandom {
public:
    explicit PortableRandom(std::uint64_t seed) : engine_(seed), seed_(seed) {}

    // Uniform in [0, 1), 53 random bits.
    double uniform();
    // Uniform integer in [0, n), unbiased (rejection). n must be >= 1.
    std::uint64_t below(std::uint64_t n);
    // Standard normal deviate (Marsaglia's polar method).
    double normal();

    PortableRandomState state() const { return {seed_, draws_, spareNormal_, haveSpare_}; }
    // Continues exactly where `state` was taken: reseeds and skips state.draws
    // outputs, which takes time proportional to draws (about 1 s per 10^8).
    void setState(const PortableRandomState& state);

private:
    std::uint64_t next() {
        ++draws_;
        return engine_();
    }
    std::mt19937_64 engine_;
    std::uint64_t seed_ = 0;
    std::uint64_t draws_ = 0;
    double spareNormal_ = 0.0;
    bool haveSpare_ = false;
};

}  // namespace haloex::md
