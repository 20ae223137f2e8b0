#pragma once
// World::sendRecvMany on any world (the thread world, the base class's
// default over it, MpiWorld under mpiexec): one call with messages around a
// ring both ways, along an open chain (peers of -1), with no peer at all,
// a second message to the same peer (matched in entry order), an empty one
// and one to the rank itself -- the same result as the entries sent one by
// one with sendRecvBytes. Collective; every rank passes the same entries.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "haloex/runtime/world.hpp"

namespace haloex::testsupport {

inline void checkSendRecvMany(runtime::World& w, int tag) {
    const int n = w.size(), me = w.rank();
    const int up = (me + 1) % n, down = (me + n - 1) % n;
    const int chainUp = me + 1 < n ? me + 1 : -1, chainDown = me > 0 ? me - 1 : -1;
    // Sizes differ by sender, as the receivers know.
    const std::vector<double> ringFirst(static_cast<std::size_t>(me + 1), 10.0 * me);
    const std::vector<double> ringSecond(static_cast<std::size_t>(me + 1), 100.0 + me);
    const std::array<std::int32_t, 2> toDown{me, 1}, chain{me, 2};
    const std::int32_t self = 1000 + me;
    std::vector<double> gotFirst(static_cast<std::size_t>(down + 1), -1.0);
    std::vector<double> gotSecond(static_cast<std::size_t>(down + 1), -1.0);
    std::array<std::int32_t, 2> gotFromUp{-1, -1}, gotChain{-1, -1};
    std::int32_t gotSelf = -1;
    const auto bytes = [](const auto& v) { return std::as_bytes(std::span(v)); };
    const auto writable = [](auto& v) { return std::as_writable_bytes(std::span(v)); };
    const std::vector<runtime::PeerMessage> messages{
        {bytes(ringFirst), up, writable(gotFirst), down},
        {bytes(toDown), down, writable(gotFromUp), up},
        {bytes(chain), chainUp, chainDown >= 0 ? writable(gotChain) : std::span<std::byte>{}, chainDown},
        {{}, -1, {}, -1},
        {bytes(ringSecond), up, writable(gotSecond), down},
        {{}, up, {}, down},
        {std::as_bytes(std::span(&self, 1)), me, std::as_writable_bytes(std::span(&gotSelf, 1)), me},
    };
    w.sendRecvMany(messages, tag);
    EXPECT_EQ(gotFirst, std::vector<double>(static_cast<std::size_t>(down + 1), 10.0 * down));
    EXPECT_EQ(gotSecond, std::vector<double>(static_cast<std::size_t>(down + 1), 100.0 + down));
    EXPECT_EQ(gotFromUp, (std::array<std::int32_t, 2>{up, 1}));
    if (chainDown >= 0) {
        EXPECT_EQ(gotChain, (std::array<std::int32_t, 2>{chainDown, 2}));
    } else {
        EXPECT_EQ(gotChain, (std::array<std::int32_t, 2>{-1, -1}));  // nothing received
    }
    EXPECT_EQ(gotSelf, 1000 + me);
    // No messages at all.
    w.sendRecvMany({}, tag);
}

}  // namespace haloex::testsupport
