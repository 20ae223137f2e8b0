// The GPU-initiated transports' search-step block exchange
// (src/transport/fused/slotted_blocks.hpp: slots, sequence numbers, the
// staging's growth, the fallback above 32 blocks), run on the CPU over a host
// policy: thread ranks that memcpy into each other's staging and raise each
// other's signals with atomics, as nvshmem's puts with signal and
// nccl-device's stores do on the device. The device policies keep their
// kernels; their conformance is test_transport_device's ExchangesSearchStepBlocks.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <fmt/format.h>
#include <string>
#include <thread>
#include <vector>

#include "haloex/core/error.hpp"
#include "haloex/runtime/world.hpp"
#include "slotted_blocks.hpp"

namespace haloex::testing {
namespace {

using transport::BlockExchange;
using transport::kMaxSlottedBlocks;
using transport::SlotSend;
using transport::SlottedBlockExchange;
using transport::SlotWait;

// Every rank's staging and signals, shared by the thread ranks.
struct HostBoard {
    explicit HostBoard(int ranks)
        : staging(static_cast<std::size_t>(ranks)), signals(static_cast<std::size_t>(ranks)) {}
    std::vector<std::vector<std::byte>> staging;
    std::vector<std::array<std::atomic<std::uint64_t>, kMaxSlottedBlocks>> signals;
};

struct HostOps {
    HostBoard& board;
    runtime::World& world;
    std::chrono::milliseconds timeout{5000};
    bool withholdSends = false;  // a rank that never delivers (the timeout test)
    int grows = 0;
    int syncs = 0;

    std::size_t me() const { return static_cast<std::size_t>(world.rank()); }
    void synchronize(transport::StreamHandle) { ++syncs; }
    void growStaging(std::size_t bytes) {
        board.staging[me()].assign(bytes, std::byte{0});
        ++grows;
        world.barrier();  // every new staging is in place before any rank delivers
    }
    std::byte* staging() { return board.staging[me()].data(); }
    void deliver(std::span<const SlotSend> sends, const SlotWait& wait, std::uint64_t sequence,
                 transport::StreamHandle) {
        for (const SlotSend& s : sends) {
            if (withholdSends) break;
            auto& peer = board.staging[static_cast<std::size_t>(s.dest)];
            if (s.slotOffset + s.bytes > peer.size()) {
                throwError(ErrorKind::Internal, fmt::format("slot {} at {} + {} bytes past rank {}'s staging of {}",
                                                            s.slot, s.slotOffset, s.bytes, s.dest, peer.size()));
            }
            if (s.bytes > 0) std::memcpy(peer.data() + s.slotOffset, s.send, s.bytes);
            board.signals[static_cast<std::size_t>(s.dest)][static_cast<std::size_t>(s.slot)].store(
                sequence, std::memory_order_release);
        }
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        for (int k = 0; k < wait.count; ++k) {
            auto& signal = board.signals[me()][static_cast<std::size_t>(wait.slot[k])];
            while (signal.load(std::memory_order_acquire) < sequence) {
                if (std::chrono::steady_clock::now() > deadline) {
                    throwError(ErrorKind::Timeout,
                               fmt::format("rank {} waited for slot {} from rank {}: signal expected >= {}, seen {}",
                                           world.rank(), wait.slot[k], wait.peer[k], sequence, signal.load()));
                }
                std::this_thread::yield();
            }
        }
    }
    void copyOut(void* to, const void* from, std::size_t bytes, transport::StreamHandle) {
        std::memcpy(to, from, bytes);
    }
};

// The byte rank `from` sends as byte i of block b in call k.
unsigned char byteOf(int from, int b, int k, std::size_t i) {
    return static_cast<unsigned char>((from * 37 + b * 101 + k * 13 + static_cast<int>(i % 251)) & 0xff);
}

// Bytes of block b from rank `from` in call k: they grow (one call large
// enough to grow the staging again), shrink, and are empty.
std::size_t ringBytes(int from, int b, int k) {
    static constexpr std::size_t kSizes[] = {48, 0, 1000, 3u << 20, 24, 7};
    const std::size_t n = kSizes[static_cast<std::size_t>(k) % std::size(kSizes)];
    return n == 0 ? 0 : n + static_cast<std::size_t>(from * 16 + b * 8);
}

// Call k of a ring of n ranks as rank `me` makes it: block 0 goes to the
// lower neighbour (and comes from the upper one), block 1 the other way.
struct RingCall {
    int k;
    int src[2];
    std::vector<unsigned char> send[2], recv[2];
    BlockExchange blocks[2];
    const void* landed[2];

    RingCall(int me, int n, int call) : k(call) {
        const int lower = (me + n - 1) % n, upper = (me + 1) % n;
        const int dest[2] = {lower, upper};
        src[0] = upper;
        src[1] = lower;
        for (int b = 0; b < 2; ++b) {
            send[b].resize(ringBytes(me, b, k));
            for (std::size_t i = 0; i < send[b].size(); ++i) send[b][i] = byteOf(me, b, k, i);
            recv[b].assign(ringBytes(src[b], b, k), 0);
            blocks[b] = {send[b].data(), send[b].size(), dest[b], recv[b].data(), recv[b].size(), src[b]};
            landed[b] = recv[b].data();
        }
    }
    RingCall(const RingCall&) = delete;
    RingCall& operator=(const RingCall&) = delete;

    std::size_t largestSend() const { return std::max(send[0].size(), send[1].size()); }

    // Appends the first wrong byte of each block, read where it landed, to `out`.
    void check(std::string& out) const {
        for (int b = 0; b < 2; ++b) {
            const auto* got = static_cast<const unsigned char*>(landed[b]);
            for (std::size_t i = 0; i < blocks[b].recvBytes; ++i) {
                if (got[i] != byteOf(src[b], b, k, i)) {
                    out += fmt::format("call {} block {} from rank {}: byte {} of {} is {}, expected {}; ", k, b,
                                       src[b], i, blocks[b].recvBytes, got[i], byteOf(src[b], b, k, i));
                    break;
                }
            }
        }
    }
};

TEST(SlottedBlocks, DeliverEveryByteFromTheRightPeerWhileTheStagingGrowsAndShrinks) {
    // A ring of 3 (RingCall), the four forms in turn; the agreed one after a
    // reduction of the largest block (as the search step's count exchange
    // does once it has read what arrived) makes no synchronisation of its own.
    constexpr int kRanks = 3, kCalls = 12;
    HostBoard board(kRanks);
    std::vector<std::string> problems(kRanks);
    std::vector<int> grows(kRanks);
    runtime::runInProcess(kRanks, [&](runtime::World& w) {
        HostOps ops{board, w};
        SlottedBlockExchange<HostOps> exchange(w, ops);
        const int me = w.rank();
        std::string& out = problems[static_cast<std::size_t>(me)];
        for (int k = 0; k < kCalls; ++k) {
            RingCall call(me, kRanks, k);
            if (k % 4 == 0) {
                for (const auto& x : call.blocks) exchange.exchangeBlocks(std::span(&x, 1), nullptr);
            } else if (k % 4 == 1) {
                exchange.exchangeBlocks(call.blocks, nullptr);
            } else if (k % 4 == 2) {
                exchange.exchangeBlocksInPlace(call.blocks, call.landed, nullptr);
            } else {
                const auto agreed = static_cast<std::size_t>(w.allReduceValue<std::int64_t>(
                    static_cast<std::int64_t>(call.largestSend()), runtime::ReduceOp::Max));
                const int syncs = ops.syncs;
                exchange.exchangeAgreedBlocksInPlace(call.blocks, call.landed, agreed, nullptr);
                if (ops.syncs != syncs) out += fmt::format("call {}: the agreed call synchronised; ", k);
            }
            call.check(out);
        }
        grows[static_cast<std::size_t>(me)] = ops.grows;
        // One call each, two for the calls that go block by block (k % 4 == 0).
        if (exchange.sequence() != static_cast<std::uint64_t>(kCalls) + static_cast<std::uint64_t>((kCalls + 3) / 4)) {
            out += fmt::format("{} calls made, sequence {}; ", kCalls, exchange.sequence());
        }
    });
    for (int r = 0; r < kRanks; ++r) {
        EXPECT_EQ(problems[static_cast<std::size_t>(r)], "") << "rank " << r;
        // The first call allocates (with 4 KiB of headroom, which the 1000-byte
        // blocks fit), the 3 MiB blocks grow it once more: alike everywhere.
        EXPECT_EQ(grows[static_cast<std::size_t>(r)], 2) << "rank " << r;
    }
}

TEST(SlottedBlocks, AnAgreementSmallerThanABlockIsRefusedBeforeAnythingMoves) {
    constexpr int kRanks = 2;
    HostBoard board(kRanks);
    std::vector<std::string> messages(kRanks);
    runtime::runInProcess(kRanks, [&](runtime::World& w) {
        HostOps ops{board, w};
        SlottedBlockExchange<HostOps> exchange(w, ops);
        const int peer = 1 - w.rank();
        std::vector<unsigned char> send(64, 1), recv(64, 0);
        const BlockExchange block{send.data(), send.size(), peer, recv.data(), recv.size(), peer};
        const void* landed = nullptr;
        try {
            exchange.exchangeAgreedBlocksInPlace(std::span(&block, 1), std::span(&landed, 1), 48, nullptr);
        } catch (const Error& e) {
            if (e.kind() == ErrorKind::InvalidInput) messages[static_cast<std::size_t>(w.rank())] = e.what();
        }
        if (exchange.sequence() != 0) messages[static_cast<std::size_t>(w.rank())] += " (and it moved blocks)";
    });
    for (int r = 0; r < kRanks; ++r) {
        EXPECT_NE(messages[static_cast<std::size_t>(r)].find(
                      fmt::format("block 0 sends 64 bytes to rank {}, more than the 48 bytes agreed", 1 - r)),
                  std::string::npos)
            << "rank " << r << ": " << messages[static_cast<std::size_t>(r)];
        EXPECT_EQ(messages[static_cast<std::size_t>(r)].find("moved"), std::string::npos) << "rank " << r;
    }
}

TEST(SlottedBlocks, MoreBlocksThanSignalsGoOneCallEachIntoRecv) {
    // 40 blocks: rank r sends block b to rank (r + 1 + b) % n; each is
    // delivered into its recv (a later call reuses the staging), and landed
    // says so.
    constexpr int kRanks = 4, kBlocks = 40;
    static_assert(kBlocks > kMaxSlottedBlocks);
    HostBoard board(kRanks);
    std::vector<std::string> problems(kRanks);
    runtime::runInProcess(kRanks, [&](runtime::World& w) {
        HostOps ops{board, w};
        SlottedBlockExchange<HostOps> exchange(w, ops);
        const int me = w.rank();
        std::vector<std::vector<unsigned char>> send(kBlocks), recv(kBlocks);
        std::vector<BlockExchange> blocks(kBlocks);
        for (int b = 0; b < kBlocks; ++b) {
            const int dest = (me + 1 + b) % kRanks, src = (me + kRanks - 1 - b % kRanks) % kRanks;
            send[b].assign(17 + static_cast<std::size_t>(b), static_cast<unsigned char>(me * 50 + b));
            recv[b].assign(17 + static_cast<std::size_t>(b), 0);
            blocks[b] = {send[b].data(), send[b].size(), dest, recv[b].data(), recv[b].size(), src};
        }
        std::vector<const void*> landed(kBlocks, nullptr);
        exchange.exchangeBlocksInPlace(blocks, landed, nullptr);
        std::string& out = problems[static_cast<std::size_t>(me)];
        for (int b = 0; b < kBlocks; ++b) {
            if (landed[b] != recv[b].data()) out += fmt::format("block {} not delivered into recv; ", b);
            const auto want = static_cast<unsigned char>(blocks[b].src * 50 + b);
            for (unsigned char c : recv[b]) {
                if (c != want) {
                    out += fmt::format("block {} from rank {}: {} where {} was sent; ", b, blocks[b].src, c, want);
                    break;
                }
            }
        }
        if (exchange.sequence() != static_cast<std::uint64_t>(kBlocks)) {
            out += fmt::format("{} one-block calls, sequence {}; ", kBlocks, exchange.sequence());
        }
    });
    for (int r = 0; r < kRanks; ++r) EXPECT_EQ(problems[static_cast<std::size_t>(r)], "") << "rank " << r;
}

TEST(SlottedBlocks, ABlockThatNeverComesTimesOutNamingWhoWaitedOnWhom) {
    constexpr int kRanks = 2;
    HostBoard board(kRanks);
    std::string message;
    try {
        runtime::runInProcess(kRanks, [&](runtime::World& w) {
            HostOps ops{board, w, std::chrono::milliseconds(200), /*withholdSends=*/w.rank() == 1};
            SlottedBlockExchange<HostOps> exchange(w, ops);
            const int peer = 1 - w.rank();
            std::vector<unsigned char> send(64, 1), recv(64, 0);
            const BlockExchange block{send.data(), send.size(), peer, recv.data(), recv.size(), peer};
            exchange.exchangeBlocks(std::span(&block, 1), nullptr);
        });
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::Timeout);
        message = e.what();
    }
    EXPECT_NE(message.find("rank 0 waited for slot 0 from rank 1: signal expected >= 1, seen 0"), std::string::npos)
        << message;
}

}  // namespace
}  // namespace haloex::testing
