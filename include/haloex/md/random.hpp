#pragma once
// Random numbers that are identical on every platform for a given seed.
// std::mt19937_64's output sequence is fixed by the C++ standard, but the
// standard distributions (uniform_real, normal, ...) are not: libstdc++, libc++
// and MSVC give different numbers. So the transforms here are our own and use
// only IEEE-exact arithmetic (see portable_math.hpp).
#include <cstdint>
#include <random>

namespace haloex::md {

class PortableRandom {
public:
    explicit PortableRandom(std::uint64_t seed) : engine_(seed) {}

    // Uniform in [0, 1), 53 random bits.
    double uniform();
    // Uniform integer in [0, n), unbiased (rejection). n must be >= 1.
    std::uint64_t below(std::uint64_t n);
    // Standard normal deviate (Marsaglia's polar method).
    double normal();

private:
    std::mt19937_64 engine_;
    double spareNormal_ = 0.0;
    bool haveSpare_ = false;
};

}  // namespace haloex::md
