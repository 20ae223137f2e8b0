#pragma once
/// @file
/// The device halo view, host side (library haloex_transports): for codes
/// that fuse the halo exchange into their own kernels. Each rank declares
/// the receive windows its neighbours store into and the windows it stores
/// into; DeviceHalo builds them collectively in peer-addressable memory
/// (peer_memory.hpp) and hands out a DeviceHaloView, a small POD passed by
/// value to the user's kernels. The device functions on it (store, signal,
/// timed wait) are in device_halo_view.cuh, header-only: the user's
/// translation unit needs neither relocatable device code (-rdc) nor the
/// NVSHMEM device library. docs/api.md ("The device halo view") has the rules.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "haloex/halo/backend.hpp"
#include "haloex/runtime/world.hpp"

namespace haloex {

/// The most receive windows, and the most send links, of one rank (a 3D
/// stencil with edges and corners has 26 neighbours).
inline constexpr int kDeviceHaloMaxLinks = 26;

/// What a timed-out device wait leaves for the host, in mapped page-locked
/// host memory: the first timeout of the halo's lifetime on this rank.
struct DeviceWaitReport {
    int claimed = 0;             ///< first timeout wins
    int ready = 0;               ///< set last, after the fields
    int rank = -1;               ///< the rank that waited
    int peer = -1;               ///< the rank it waited for
    int link = -1;               ///< its receive link (index into the receives)
    int tag = -1;                ///< that link's tag
    int block = -1;              ///< the waiting block (blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z))
    int thread = -1;             ///< and thread (threadIdx.x + ...)
    std::uint64_t expected = 0;  ///< the generation waited for (signal >= expected)
    std::uint64_t seen = 0;      ///< the last value read
    std::uint64_t waitedNs = 0;  ///< how long it waited
};

/// Passed by value to kernels. Generations: a sender stores the data of
/// generation g into slot g % slots of the peer's window, then signals g;
/// the receiver waits until its signal word is >= g, then reads slot
/// g % slots. Generations start at 1 and increase over the halo's lifetime
/// (the signal words start at 0 and are never reset).
struct DeviceHaloView {
    /// A link this rank stores into: a window of the peer's.
    struct Send {
        void* window = nullptr;           ///< the peer's receive window (slot 0), peer-mapped
        std::uint64_t* signal = nullptr;  ///< the peer's signal word for this link, peer-mapped
        std::uint64_t slotBytes = 0;      ///< bytes per slot (256-byte aligned)
        int slots = 0;                    ///< slots in the window
        int peer = -1;                    ///< the receiving rank
        int tag = -1;                     ///< the link's tag
    };
    /// A link this rank receives on: its own window.
    struct Recv {
        const void* window = nullptr;           ///< this rank's receive window (slot 0)
        const std::uint64_t* signal = nullptr;  ///< this rank's signal word for this link
        std::uint64_t slotBytes = 0;            ///< bytes per slot (256-byte aligned)
        int slots = 0;                          ///< slots in the window
        int peer = -1;                          ///< the sending rank
        int tag = -1;                           ///< the link's tag
    };
    int rank = -1;                       ///< this rank
    int numSends = 0;                    ///< sends[0, numSends) are in use
    int numRecvs = 0;                    ///< recvs[0, numRecvs) are in use
    std::uint64_t timeoutNs = 0;         ///< how long a wait spins before it reports a timeout
    DeviceWaitReport* report = nullptr;  ///< device address of the mapped report
    int* abortFlag = nullptr;            ///< device memory; raised by the first timeout, every wait then gives up
    Send sends[kDeviceHaloMaxLinks];     ///< the send links, in the order declared
    Recv recvs[kDeviceHaloMaxLinks];     ///< the receive links, in the order declared
};

/// A window this rank receives into: `peer` stores `slotBytes` per
/// generation, for the link named `tag` (tags tell apart several links
/// between the same two ranks, e.g. both sides of a periodic ring of two).
struct DeviceHaloReceive {
    int peer = -1;              ///< the rank that stores into it
    int tag = 0;                ///< the link's name between the two ranks
    std::size_t slotBytes = 0;  ///< bytes per generation
    int slots = 2;              ///< generations in flight: 2 lets a sender run one generation ahead
};
/// A window of `peer` this rank stores into (its receive from this rank with `tag`).
struct DeviceHaloSend {
    int peer = -1;  ///< the rank whose window it is
    int tag = 0;    ///< the link's name between the two ranks
};

/// How a DeviceHalo waits and reports.
struct DeviceHaloOptions {
    /// The device wait's limit: when positive, else HALOEX_WAIT_TIMEOUT when
    /// set and positive, else 120 s.
    double waitTimeoutSeconds = 0;
    /// A host thread that, when a wait has timed out, prints the report and
    /// ends the whole job (World::abort), so no rank hangs in a later host
    /// collective. Off: only pendingTimeout() / throwIfTimedOut() report it.
    bool abortJobOnTimeout = true;
    std::string what = "a device halo";  ///< names it in errors
};

/// The device halo view's host side: the windows and signal words in peer
/// memory, the links matched, the timeout report (see the file's description).
class DeviceHalo {
public:
    /// Collective over `world`: every rank passes its own receives and sends;
    /// each send must match exactly one receive of its peer (peer, tag) and
    /// each receive exactly one send, or every rank throws InvalidInput saying
    /// which. Allocates the windows and signal words (zero-filled) through
    /// allocatePeerMemory(backend, ...), maps the peers' and waits (device
    /// synchronisation, then a barrier) until every rank is ready, so kernels
    /// may store into peers as soon as it returns. Throws InvalidInput when a
    /// send's peer is not load/store-reachable with this backend.
    DeviceHalo(runtime::World& world, Backend backend, const std::vector<DeviceHaloReceive>& receives,
               const std::vector<DeviceHaloSend>& sends, const DeviceHaloOptions& options = {});
    /// Collective: synchronises the device (the user's kernels must be
    /// finished or finishing), then a barrier, then frees.
    ~DeviceHalo();
    DeviceHalo(const DeviceHalo&) = delete;
    DeviceHalo& operator=(const DeviceHalo&) = delete;

    /// For the user's kernels (by value); valid for the halo's lifetime.
    const DeviceHaloView& view() const { return view_; }
    Backend backend() const { return backend_; }  ///< the peer memory's provider

    /// This rank's receive window `link` (device memory), e.g. to read it
    /// back or to clear it; slot s starts at recvWindow(link) + s * slotBytes.
    void* recvWindow(int link) const;

    /// Empty, or the message of the first timed-out wait on this rank
    /// ("rank 0 waited 2.000 s in block 0 thread 0 for rank 1 on receive link
    /// 1 (tag 1): signal expected >= 7, seen 6 ..."). Read it after
    /// synchronising with the kernels.
    std::string pendingTimeout() const;
    /// Throws ErrorKind::Timeout with pendingTimeout() when there is one.
    void throwIfTimedOut() const;

    /// One line per link: its peer, tag, size and how it is reached.
    std::vector<std::string> describe() const;

private:
    struct State;
    std::unique_ptr<State> state_;
    DeviceHaloView view_;
    Backend backend_;
};

}  // namespace haloex
