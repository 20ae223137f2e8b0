// The device halo view's host side (halo/device_halo.hpp): windows and signal
// words in peer memory, sends matched to the peers' receives, peer pointers,
// the mapped timeout report and its watchdog.
#include "haloex/halo/device_halo.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fmt/format.h>
#include <span>
#include <thread>

#include "device_halo_resources.hpp"
#include "haloex/core/error.hpp"
#include "haloex/detail/core/wait_limit.hpp"
#include "haloex/transport/peer_memory.hpp"

namespace haloex {
namespace {

constexpr std::size_t kAlign = 256;  // windows start 256-byte aligned
std::size_t alignUp(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// What every rank tells the others about its links (fixed size, for allGather).
struct LinkTable {
    std::int32_t numRecvs = 0;
    std::int32_t numSends = 0;
    struct Recv {
        std::int32_t peer = -1, tag = 0, slots = 0, pad = 0;
        std::int64_t slotBytes = 0;
        std::int64_t windowOffset = 0;  // in the owner's peer memory
        std::int64_t signalOffset = 0;
    } recvs[kDeviceHaloMaxLinks];
    struct Send {
        std::int32_t peer = -1, tag = 0;
    } sends[kDeviceHaloMaxLinks];
};

double waitSeconds(double option) {
    if (validWaitSeconds(option, false)) return option;
    if (const char* env = std::getenv("HALOEX_WAIT_TIMEOUT")) {
        const double v = std::atof(env);
        if (validWaitSeconds(v, false)) return v;  // NaN, inf and 1e308 would wrap as nanoseconds
    }
    return 120.0;
}

std::string describeReport(const DeviceWaitReport& d, const std::string& what) {
    return fmt::format("rank {}: {} waited {:.3f} s in block {} thread {} for rank {} on receive link {} (tag {}): "
                       "signal expected >= {}, seen {}. The peer is slower than the wait limit (raise "
                       "DeviceHaloOptions::waitTimeoutSeconds / HALOEX_WAIT_TIMEOUT), never signals that generation, "
                       "or stopped (look for its error)",
                       d.rank, what, d.waitedNs * 1e-9, d.block, d.thread, d.peer, d.link, d.tag, d.expected, d.seen);
}

// Checks the links of every rank against each other; the same verdict on all ranks.
void checkLinks(const std::vector<LinkTable>& tables, const std::string& what) {
    const int size = static_cast<int>(tables.size());
    for (int r = 0; r < size; ++r) {
        const LinkTable& t = tables[static_cast<std::size_t>(r)];
        for (int s = 0; s < t.numSends; ++s) {
            const auto& send = t.sends[s];
            if (send.peer < 0 || send.peer >= size) {
                throwError(ErrorKind::InvalidInput, fmt::format("{}: rank {} sends to rank {} (tag {}), but the job "
                                                                "has ranks 0..{}",
                                                                what, r, send.peer, send.tag, size - 1));
            }
            const LinkTable& peer = tables[static_cast<std::size_t>(send.peer)];
            int matches = 0;
            for (int q = 0; q < peer.numRecvs; ++q) matches += peer.recvs[q].peer == r && peer.recvs[q].tag == send.tag;
            if (matches != 1) {
                throwError(ErrorKind::InvalidInput,
                           fmt::format("{}: rank {} sends to rank {} with tag {}, but rank {} declares {} receive(s) "
                                       "from rank {} with that tag; each send needs exactly one",
                                       what, r, send.peer, send.tag, send.peer, matches, r));
            }
        }
        for (int q = 0; q < t.numRecvs; ++q) {
            const auto& recv = t.recvs[q];
            if (recv.slots < 1 || recv.slotBytes <= 0) {
                throwError(ErrorKind::InvalidInput,
                           fmt::format("{}: rank {}'s receive {} from rank {} (tag {}) has {} slot(s) of {} bytes; use "
                                       "at least one slot of at least one byte",
                                       what, r, q, recv.peer, recv.tag, recv.slots, recv.slotBytes));
            }
            if (recv.peer < 0 || recv.peer >= size) {
                throwError(ErrorKind::InvalidInput, fmt::format("{}: rank {} receives from rank {} (tag {}), but the "
                                                                "job has ranks 0..{}",
                                                                what, r, recv.peer, recv.tag, size - 1));
            }
            const LinkTable& peer = tables[static_cast<std::size_t>(recv.peer)];
            int matches = 0;
            for (int s = 0; s < peer.numSends; ++s) matches += peer.sends[s].peer == r && peer.sends[s].tag == recv.tag;
            if (matches != 1) {
                throwError(ErrorKind::InvalidInput,
                           fmt::format("{}: rank {} receives from rank {} with tag {}, but rank {} declares {} send(s) "
                                       "to rank {} with that tag; each receive needs exactly one (or it would wait "
                                       "forever)",
                                       what, r, recv.peer, recv.tag, recv.peer, matches, r));
            }
        }
    }
}

}  // namespace

struct DeviceHalo::State {
    runtime::World* world = nullptr;
    std::string what;
    std::unique_ptr<halo_detail::DeviceHaloResources> device;  // the report and the abort flag
    std::unique_ptr<transport::PeerMemory> memory;
    std::vector<std::string> notes;
    bool abortJob = false;
    std::atomic<bool> stop{false};
    std::thread watchdog;

    ~State() { stopWatchdog(); }
    void stopWatchdog() {
        stop = true;
        if (watchdog.joinable()) watchdog.join();
    }
    // Prints a recorded timeout and ends the whole job.
    void abortIfTimedOut() const {
        if (const std::string message = pending(); !message.empty()) {
            std::fprintf(stderr, "haloex: device halo wait timed out: %s\n", message.c_str());
            std::fflush(stderr);
            world->abort("device halo wait timed out: " + message, 3);
        }
    }

    const DeviceWaitReport* hostReport = nullptr;  // the mapped report, host side

    std::string pending() const {
        if (!hostReport) return {};
        const auto* ready = reinterpret_cast<const volatile int*>(&hostReport->ready);
        return *ready ? describeReport(*hostReport, what) : std::string{};
    }
};

DeviceHalo::DeviceHalo(runtime::World& world, Backend backend, const std::vector<DeviceHaloReceive>& receives,
                       const std::vector<DeviceHaloSend>& sends, const DeviceHaloOptions& options)
    : state_(std::make_unique<State>()), backend_(backend) {
    State& st = *state_;
    st.world = &world;
    st.what = options.what;
    // Every rank decides alike (a rank throwing alone would leave the others
    // in the collectives below).
    const bool tooMany = receives.size() > static_cast<std::size_t>(kDeviceHaloMaxLinks) ||
                         sends.size() > static_cast<std::size_t>(kDeviceHaloMaxLinks);
    if (world.allReduceValue<std::int64_t>(tooMany ? 1 : 0, runtime::ReduceOp::Max) != 0) {
        throwError(ErrorKind::InvalidInput,
                   tooMany ? fmt::format("{}: rank {} declares {} receives and {} sends; at most {} each", st.what,
                                         world.rank(), receives.size(), sends.size(), kDeviceHaloMaxLinks)
                           : fmt::format("{}: another rank declares more than {} receives or sends (see its error)",
                                         st.what, kDeviceHaloMaxLinks));
    }
    // This rank's layout: the signal words, then the windows.
    LinkTable mine;
    mine.numRecvs = static_cast<std::int32_t>(receives.size());
    mine.numSends = static_cast<std::int32_t>(sends.size());
    std::size_t offset = alignUp(receives.size() * sizeof(std::uint64_t));
    for (std::size_t i = 0; i < receives.size(); ++i) {
        const DeviceHaloReceive& r = receives[i];
        auto& e = mine.recvs[i];
        e.peer = r.peer;
        e.tag = r.tag;
        e.slots = r.slots;
        e.slotBytes = static_cast<std::int64_t>(alignUp(r.slotBytes));
        e.signalOffset = static_cast<std::int64_t>(i * sizeof(std::uint64_t));
        e.windowOffset = static_cast<std::int64_t>(offset);
        offset += static_cast<std::size_t>(e.slotBytes) * static_cast<std::size_t>(std::max(r.slots, 0));
    }
    for (std::size_t i = 0; i < sends.size(); ++i) mine.sends[i] = {sends[i].peer, sends[i].tag};
    const std::vector<LinkTable> tables = world.allGather(mine);
    checkLinks(tables, st.what);
    view_.rank = world.rank();
    view_.timeoutNs = static_cast<std::uint64_t>(waitSeconds(options.waitTimeoutSeconds) * 1e9);
    st.device = std::make_unique<halo_detail::DeviceHaloResources>(view_, st.what);
    st.hostReport = st.device->hostReport();
    st.memory = transport::allocatePeerMemory(backend, world, offset, st.what);
    auto* local = static_cast<char*>(st.memory->localBase());
    view_.numRecvs = mine.numRecvs;
    for (int i = 0; i < mine.numRecvs; ++i) {
        const auto& e = mine.recvs[i];
        DeviceHaloView::Recv& v = view_.recvs[i];
        v.window = local + e.windowOffset;
        v.signal = reinterpret_cast<const std::uint64_t*>(local + e.signalOffset);
        v.slotBytes = static_cast<std::uint64_t>(e.slotBytes);
        v.slots = e.slots;
        v.peer = e.peer;
        v.tag = e.tag;
        st.notes.push_back(fmt::format("receive link {}: from rank {}, tag {}, {} slot(s) of {} bytes", i, e.peer,
                                       e.tag, e.slots, e.slotBytes));
    }
    view_.numSends = mine.numSends;
    // Mapping may fail on one rank only (no path to a peer, an IPC handle
    // that does not open): every rank learns it, so none waits alone below.
    std::exception_ptr mapping;
    try {
        for (int i = 0; i < mine.numSends; ++i) {
            const auto& s = mine.sends[i];
            const LinkTable& peer = tables[static_cast<std::size_t>(s.peer)];
            const LinkTable::Recv* target = nullptr;
            for (int q = 0; q < peer.numRecvs; ++q) {
                if (peer.recvs[q].peer == world.rank() && peer.recvs[q].tag == s.tag) target = &peer.recvs[q];
            }
            HALOEX_ASSERT(target != nullptr, "checkLinks matched every send");
            auto* base = static_cast<char*>(st.memory->peerBase(s.peer));
            if (!base) {
                throwError(ErrorKind::InvalidInput,
                           fmt::format("{}: rank {} cannot store into rank {}'s memory with the {} backend (no "
                                       "NVLink/P2P load/store path between them); the device halo view needs one "
                                       "for every send",
                                       st.what, world.rank(), s.peer, toString(backend)));
            }
            DeviceHaloView::Send& v = view_.sends[i];
            v.window = base + target->windowOffset;
            v.signal = reinterpret_cast<std::uint64_t*>(base + target->signalOffset);
            v.slotBytes = static_cast<std::uint64_t>(target->slotBytes);
            v.slots = target->slots;
            v.peer = s.peer;
            v.tag = s.tag;
            st.notes.push_back(fmt::format("send link {}: to rank {}, tag {}, {} slot(s) of {} bytes, direct stores", i,
                                           s.peer, s.tag, target->slots, target->slotBytes));
        }
    } catch (...) {
        mapping = std::current_exception();
    }
    if (world.allReduceValue<std::int64_t>(mapping ? 1 : 0, runtime::ReduceOp::Max) != 0) {
        if (mapping) std::rethrow_exception(mapping);
        throwError(ErrorKind::Runtime,
                   fmt::format("{}: another rank could not map its peers' windows (see its error)", st.what));
    }
    st.notes.push_back(st.memory->describe());

    // Every rank's windows and signal words are zero before anyone stores.
    halo_detail::DeviceHaloResources::synchronize();
    world.barrier();
    st.abortJob = options.abortJobOnTimeout;
    if (st.abortJob) {
        st.watchdog = std::thread([&st] {
            using namespace std::chrono_literals;
            while (!st.stop) {
                st.abortIfTimedOut();
                std::this_thread::sleep_for(20ms);
            }
        });
    }
}

DeviceHalo::~DeviceHalo() {
    State& st = *state_;
    if (std::uncaught_exceptions() == 0) {
        // No kernel of this rank still stores into a peer, then no peer does.
        halo_detail::DeviceHaloResources::synchronizeQuietly();
        st.stopWatchdog();
        // A timeout in the last kernels still ends the job with its report.
        if (st.abortJob) st.abortIfTimedOut();
        try {
            st.world->barrier();
        } catch (...) {
        }
    }
    st.stopWatchdog();
    st.memory.reset();  // collective: unmaps the peers, frees this rank's windows
}

void* DeviceHalo::recvWindow(int link) const {
    if (link < 0 || link >= view_.numRecvs) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("{}: receive link {} of {}", state_->what, link, view_.numRecvs));
    }
    return const_cast<void*>(view_.recvs[link].window);
}

std::string DeviceHalo::pendingTimeout() const { return state_->pending(); }

void DeviceHalo::throwIfTimedOut() const {
    if (const std::string message = pendingTimeout(); !message.empty()) throwError(ErrorKind::Timeout, message);
}

std::vector<std::string> DeviceHalo::describe() const { return state_->notes; }

}  // namespace haloex
