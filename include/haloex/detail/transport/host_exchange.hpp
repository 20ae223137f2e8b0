#pragma once
// Pulse-by-pulse halo exchange of host arrays over a World: the plain
// algorithm every other transport must reproduce. Works for any Pulse list
// (particle or grid plans) and any element type.
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "haloex/core/error.hpp"
#include "haloex/plan/particle_plan.hpp"
#include "haloex/plan/pulse.hpp"
#include "haloex/runtime/world.hpp"
#include "haloex/transport/block_transport.hpp"
#include "haloex/transport/coordinate_force_exchange.hpp"

namespace haloex::transport {

// Message tag of BlockTransport::exchangeBlocks over a World (within the
// 32767 MPI guarantees, apart from the pulse ids and plan_exchange's tags).
inline constexpr int kTagExchangeBlock = 32710;

// One block of BlockTransport::exchangeBlocks for arrays in host memory.
inline void exchangeBlockOnHost(runtime::World& world, const void* send, std::size_t sendBytes, int dest, void* recv,
                                std::size_t recvBytes, int src) {
    world.sendRecvBytes(std::span<const std::byte>(static_cast<const std::byte*>(send), dest >= 0 ? sendBytes : 0),
                        dest, std::span<std::byte>(static_cast<std::byte*>(recv), src >= 0 ? recvBytes : 0), src,
                        kTagExchangeBlock);
}

// One block's message of World::sendRecvMany (a peer of -1 moves nothing).
inline runtime::PeerMessage peerMessageOf(const BlockExchange& b, const void* send, void* recv) {
    return {std::span<const std::byte>(static_cast<const std::byte*>(send), b.dest >= 0 ? b.sendBytes : 0), b.dest,
            std::span<std::byte>(static_cast<std::byte*>(recv), b.src >= 0 ? b.recvBytes : 0), b.src};
}

// BlockTransport::exchangeBlocks for arrays in host memory: every block's
// message in one World::sendRecvMany (one round trip over MPI). `messages` is
// the caller's scratch, kept so that repeated calls do not allocate.
inline void exchangeBlocksOnHost(runtime::World& world, std::span<const BlockExchange> blocks,
                                 std::vector<runtime::PeerMessage>& messages) {
    messages.clear();
    for (const BlockExchange& b : blocks) messages.push_back(peerMessageOf(b, b.send, b.recv));
    world.sendRecvMany(messages, kTagExchangeBlock);
}

// The coordinate/force exchange of the host backends (reference, staged in
// host memory): the pulse-by-pulse algorithm below on the caller's host
// arrays. `description` is its describe() line; with `countHostSyncs` every
// pulse of a forward or reverse counts as one host wait for the peers.
std::unique_ptr<CoordinateForceExchange> makeHostCoordinateForceExchange(runtime::World& world, std::string description,
                                                                         bool countHostSyncs);

// Host transports move host index maps only: a plan built on the device
// (index maps and zone masks in device memory) is refused, naming `who`.
inline void requireHostPlan(const plan::ParticleHaloPlan& plan, const char* who) {
    if (plan.onDevice()) {
        throwError(ErrorKind::InvalidInput,
                   std::string(who) + " keeps its arrays in host memory and cannot use a plan built on the GPU "
                                      "(its index maps are in device memory); build the plan on the host "
                                      "(runtime::buildParticlePlan) or use a device transport");
    }
}

// One pulse's message: to `dest`, from `src`; either may be -1 (no peer at
// a non-periodic edge).
template <class T>
std::vector<T> exchangeWithPeers(runtime::World& world, const plan::Pulse& pulse, const std::vector<T>& send, int dest,
                                 int src) {
    return world.sendRecv(send, dest, src, pulse.id);
}

// Local index of the i-th element received in a pulse.
inline int receiveIndex(const plan::Pulse& pulse, int i) {
    return pulse.recvOffset >= 0 ? pulse.recvOffset + i : pulse.recvIndices[i];
}

// Forward exchange in pulse order; pack(pulse, value) transforms each packed
// element (e.g. applies the periodic shift).
template <class T, class Pack>
void forwardPulses(runtime::World& world, const std::vector<plan::Pulse>& pulses, std::span<T> data, Pack&& pack) {
    for (const plan::Pulse& pulse : pulses) {
        std::vector<T> send;
        send.reserve(pulse.sendIndices.size());
        for (int index : pulse.sendIndices) send.push_back(pack(pulse, data[index]));
        std::vector<T> recv = exchangeWithPeers(world, pulse, send, pulse.sendRank, pulse.recvRank);
        if (static_cast<int>(recv.size()) != pulse.recvCount) {
            throwError(ErrorKind::Internal, "pulse " + std::to_string(pulse.id) + ": received " +
                                                std::to_string(recv.size()) + " elements, the plan expects " +
                                                std::to_string(pulse.recvCount));
        }
        for (int i = 0; i < pulse.recvCount; ++i) data[receiveIndex(pulse, i)] = recv[i];
    }
}

template <class T>
void forwardPulses(runtime::World& world, const std::vector<plan::Pulse>& pulses, std::span<T> data) {
    forwardPulses(world, pulses, data, [](const plan::Pulse&, const T& v) { return v; });
}

// Reverse exchange in reverse pulse order: received elements go back to the
// rank they came from and are added into the entries they were packed from.
template <class T>
void reversePulses(runtime::World& world, const std::vector<plan::Pulse>& pulses, std::span<T> data) {
    for (auto it = pulses.rbegin(); it != pulses.rend(); ++it) {
        const plan::Pulse& pulse = *it;
        std::vector<T> send;
        send.reserve(pulse.recvCount);
        for (int i = 0; i < pulse.recvCount; ++i) send.push_back(data[receiveIndex(pulse, i)]);
        std::vector<T> recv = exchangeWithPeers(world, pulse, send, pulse.recvRank, pulse.sendRank);
        if (recv.size() != pulse.sendIndices.size()) {
            throwError(ErrorKind::Internal, "reverse pulse " + std::to_string(pulse.id) + ": received " +
                                                std::to_string(recv.size()) + " elements for " +
                                                std::to_string(pulse.sendIndices.size()) + " sent");
        }
        for (std::size_t i = 0; i < recv.size(); ++i) data[pulse.sendIndices[i]] += recv[i];
    }
}

}  // namespace haloex::transport
