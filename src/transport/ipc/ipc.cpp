// The `ipc` transport: CPU-orchestrated GPU-direct copies through CUDA IPC,
// with handshakes over the World (see ipc_transport.hpp for the protocol).
#include "haloex/detail/cuda/blocking_ops.hpp"
#include "ipc_transport.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <fmt/format.h>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "halo_kernels.hpp"
#include "forwarding_exchange.hpp"
#include "haloex/transport/coordinate_force_exchange.hpp"
#include "staged_path.hpp"

namespace haloex::transport {
namespace {

// Message tags (the World is shared with set-up traffic); + pulse id.
constexpr int kTagExportX = 9000;
constexpr int kTagExportF = 9500;
constexpr int kTagReadyForward = 5000;
constexpr int kTagDoneForward = 6000;
constexpr int kTagReadyReverse = 7000;
constexpr int kTagDoneReverse = 8000;
constexpr int kTagBlockReady = 10500;    // exchangeBlock(s): the receiver's landing offer
constexpr int kTagBlockDone = 10501;     // exchangeBlock(s): the data is in the receiver's landing buffer
constexpr int kTagPatternOffer = 10502;  // bindBlockPattern: the receiver's landing offer, once
constexpr int kTagPatternDone = 10503;   // a bound pattern's call: the data is in the receiver's landing buffer

// Identifies this process, so ranks that are threads of one process can use
// each other's pointers directly (a process cannot open its own IPC handles).
std::uint64_t processToken() {
    static const std::uint64_t token = [] {
        std::random_device device;
        const auto now = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
        return (static_cast<std::uint64_t>(device()) << 32) ^ device() ^ now ^
               (static_cast<std::uint64_t>(getpid()) << 16);
    }();
    return token;
}

// A new id for every allocation this process exports, so importers know when
// a mapping is stale (the same address may come back from cudaMalloc).
std::uint64_t nextAllocationId() {
    static std::atomic<std::uint64_t> counter{1};
    return counter++;
}

// What a rank tells a peer about one of its buffers.
// CUDA may sub-allocate small cudaMalloc requests from one larger block, and
// an IPC handle shares the whole block: a peer that opened one array of the
// block then fails to open the next one (cudaErrorAlreadyMapped), and the
// block's other contents would be exposed. NVIDIA's advice is to share only
// allocations whose size is a multiple of 2 MiB, so an exported array gets at
// least `count` elements in a whole number of 2 MiB units.
template <class T>
std::size_t ipcAllocationElements(std::size_t count) {
    constexpr std::size_t kGranularity = std::size_t{2} << 20;
    const std::size_t unitBytes = std::lcm(kGranularity, sizeof(T));  // whole elements, whole 2 MiB units
    const std::size_t unitElements = unitBytes / sizeof(T);
    return (std::max<std::size_t>(count, 1) + unitElements - 1) / unitElements * unitElements;
}

struct ExportedBuffer {
    std::uint64_t process = 0;
    std::uint64_t allocation = 0;
    std::uint64_t pointer = 0;  // valid inside `process` only
    cudaIpcMemHandle_t handle{};
    std::int64_t offsetBytes = 0;  // where the peer's slot starts
};

// A device array whose allocation can be exported.
template <class T>
struct ExportableArray {
    cuda::DeviceBuffer<T> buffer;
    std::uint64_t allocation = 0;
    cudaIpcMemHandle_t handle{};

    bool needsGrowth(std::size_t count) const { return count > buffer.capacity() || allocation == 0; }
    // With headroom, so later searches rarely grow it (and re-export it).
    void allocate(std::size_t count) {
        buffer = cuda::DeviceBuffer<T>(ipcAllocationElements<T>(count + count / 4 + 64));
        buffer.resize(count);
        HALOEX_CUDA_CHECK(cudaIpcGetMemHandle(&handle, buffer.data()));
        allocation = nextAllocationId();
    }
    ExportedBuffer exported(std::int64_t offsetBytes) const {
        ExportedBuffer e;
        e.process = processToken();
        e.allocation = allocation;
        e.pointer = reinterpret_cast<std::uint64_t>(buffer.data());
        e.handle = handle;
        e.offsetBytes = offsetBytes;
        return e;
    }
};

class IpcTransport final : public BlockTransport {
public:
    explicit IpcTransport(runtime::World& world) : world_(world) {
        if (world.localSize() != world.size()) {
            throwError(ErrorKind::Runtime,
                       fmt::format("the ipc transport needs every rank on one node (CUDA IPC does not cross nodes), "
                                   "but rank {} shares its node with {} of {} ranks; use staged, nccl or nvshmem",
                                   world.rank(), world.localSize(), world.size()));
        }
    }

    ~IpcTransport() override {
        closeImports([](const Import&) { return false; });
        // Owners free their arrays below: wait until no peer maps them. Skipped
        // while an exception unwinds (the job is failing; a barrier could hang).
        if (std::uncaught_exceptions() == 0) {
            try {
                world_.barrier();
            } catch (...) {
            }
        }
    }

    std::string name() const override { return "ipc"; }
    MemorySpace memorySpace() const override { return MemorySpace::Device; }

    // The coordinate/force exchange (IpcCoordinateForceExchange below): CUDA
    // IPC mappings of the caller's coordinates and of this rank's per-pulse
    // force slots, exchanged at bind.
    void bindArrays(const plan::ParticleHaloPlan& plan, const SharedArray& coordinates, const SharedArray& forces);
    void forwardCoordinates(const plan::Box& box, StreamHandle stream);
    void reverseForces(StreamHandle stream);
    void clearForces(StreamHandle stream) {
        if (plan_.numLocal > 0) {
            HALOEX_CUDA_CHECK(cudaMemsetAsync(f_, 0, static_cast<std::size_t>(plan_.numLocal) * sizeof(Vec3f),
                                              static_cast<cudaStream_t>(stream)));
        }
    }
    const TransportCounters& counters() const { return counters_; }
    std::unique_ptr<CoordinateForceExchange> makeCoordinateForceExchange() override;

    // Blocks of arrays without IPC handles: peer copies into the receiver's
    // exported landing buffer, then a local copy out of it -- or none, in
    // place (see ipc_transport.hpp).
    void exchangeBlocks(std::span<const BlockExchange> blocks, StreamHandle stream) override {
        landBlocks(blocks, {}, static_cast<cudaStream_t>(stream));
    }
    void exchangeBlocksInPlace(std::span<const BlockExchange> blocks, std::span<const void*> landed,
                               StreamHandle stream) override {
        HALOEX_ASSERT(landed.size() == blocks.size(), "exchangeBlocksInPlace: one landed pointer per block");
        landBlocks(blocks, landed, static_cast<cudaStream_t>(stream));
    }
    int bindBlockPattern(std::span<const BlockExchange> blocks) override;
    void exchangeBoundBlocksInPlace(int pattern, std::span<const BlockExchange> blocks, std::span<const void*> landed,
                                    StreamHandle stream) override;
    std::vector<std::string> describe() const override {
        int opened = 0, sameProcess = 0;
        for (const auto& [key, import] : imports_) (import.opened ? opened : sameProcess) += 1;
        return {fmt::format("ipc: per pulse pack kernel, 2 host syncs, copy into the peer's memory ({} CUDA IPC "
                            "mapping(s), {} same-process pointer(s)), MPI handshakes; exchangeBlock(s): peer copies "
                            "into the receivers' landing buffers (two halves, by call parity), 1 host sync, 2 MPI "
                            "rounds per call (all blocks at once), a copy out of the landing buffer (none in place: "
                            "the halo API's unpack reads it); a bound block pattern ({} bound): its own landing "
                            "buffer offered once, 1 host sync and 1 MPI round per call",
                            opened, sameProcess, patterns_.size())};
    }

private:
    struct Import {
        int owner = -1;
        std::uint64_t process = 0;
        std::uint64_t allocation = 0;
        void* base = nullptr;
        bool opened = false;   // through cudaIpcOpenMemHandle (else a same-process pointer)
        bool landing = false;  // a peer's landing buffer (kept across setPlan)
    };
    // What a receiver tells its sender in exchangeBlock(s): where the block lands.
    struct LandingOffer {
        ExportedBuffer buffer;
        std::int64_t exchange = 0;
    };
    // What a sender tells its receiver afterwards: whether the block is there.
    struct BlockDone {
        std::int64_t exchange = 0;
        std::int32_t delivered = 0;
        std::int32_t pattern = -1;  // a bound pattern's calls: its id
    };
    // A bound block pattern (bindBlockPattern): the blocks' ranks and sizes,
    // this rank's landing buffer for them (two halves, by the pattern's call
    // parity) and where each sent block lands in its receiver's.
    struct Pattern {
        std::vector<BlockExchange> shape;  // addresses unused
        ExportableArray<std::byte> landing;
        std::size_t half = 0;                // bytes between the halves
        std::vector<std::size_t> landingAt;  // per block, in each half of this rank's buffer
        std::vector<std::byte*> peerAt;      // per block sent: its place in half 0 of the receiver's
        std::vector<std::size_t> peerHalf;   // the receiver's half size
        std::int64_t calls = 0;
        std::string failure;  // a mapping that failed at bind time, reported on every call
    };
    // What a receiver tells a sender once, in bindBlockPattern.
    struct PatternOffer {
        ExportedBuffer buffer;  // offsetBytes: the block's place in half 0
        std::int64_t half = 0;
        std::int64_t pattern = -1;
    };

    void* importBuffer(int owner, const ExportedBuffer& e, bool landing = false);
    // Room for `bytes` in each half of this rank's landing buffer (a grown
    // one is kept until the destructor: peers may still map the old one, and
    // work queued earlier may still read it).
    void reserveLanding(std::size_t bytes);
    // exchangeBlocks (landed empty: copied out into the blocks' recv) and
    // exchangeBlocksInPlace (landed filled, no copy out).
    void landBlocks(std::span<const BlockExchange> blocks, std::span<const void*> landed, cudaStream_t stream);
    // Every call that lands blocks starts here: a new stream than the last
    // call's waits for the device (see landBlocks).
    void beginLandingCall(cudaStream_t stream);
    // Round 2 (delivered) of blocks whose senders copied into the receivers'
    // landing buffers; throws the local `failure` or a sender's.
    void confirmDelivery(std::span<const BlockExchange> blocks, const BlockDone& mine, const std::string& failure,
                         int tag);
    // After delivery: what each block received, at `landedAt` + landingAt[b],
    // handed out in place (landed filled) or copied out into the blocks' recv.
    void handOut(std::span<const BlockExchange> blocks, std::span<const void*> landed, const std::byte* landedAt,
                 const std::vector<std::size_t>& landingAt, cudaStream_t stream);
    template <class Keep>
    void closeImports(Keep keep);
    // Handshake: this rank's value to `dest`, the peer's from `src` (either
    // may be -1); the values are the exchange counters, which must agree.
    void handshake(int dest, int src, int tag);

    runtime::World& world_;
    plan::ParticleHaloPlan plan_;
    // The caller's arrays; the coordinates exported under this transport's
    // own allocation id (renewed whenever the caller reallocates them).
    Vec3f* x_ = nullptr;
    Vec3f* f_ = nullptr;
    std::uint64_t xCallerAllocation_ = 0;
    std::uint64_t xAllocation_ = 0;
    cudaIpcMemHandle_t xHandle_{};
    ExportableArray<Vec3f> forceRecv_;  // one slot per pulse: forces of the atoms this rank sent
    std::vector<std::size_t> forceSlot_;
    cuda::DeviceBuffer<Vec3f> send_;
    cuda::DevicePulseMaps maps_;
    // exchangeBlock(s): peers copy into half (call parity) of this buffer,
    // halves of landingHalf_ bytes (see landBlocks for why a half is free).
    ExportableArray<std::byte> landing_;
    std::size_t landingHalf_ = 0;
    std::vector<cuda::DeviceBuffer<std::byte>> retiredLandings_;
    std::int64_t blockExchange_ = 0;          // unbound calls
    std::int64_t landingCalls_ = 0;           // every call that lands blocks, bound or not
    cudaStream_t lastBlockStream_ = nullptr;  // of the previous such call (compared, never used)
    // landBlocks' per-call scratch, kept (no allocation per call).
    std::vector<std::size_t> landingAt_;
    std::vector<LandingOffer> myOffers_, offers_;
    std::vector<BlockDone> done_;
    std::vector<runtime::PeerMessage> messages_;
    std::vector<Pattern> patterns_;  // bound block patterns, by id
    // Per pulse: the receiver's coordinate slot, the sender's force slot.
    std::vector<Vec3f*> peerX_, peerForceSlot_;
    std::map<std::pair<std::uint64_t, std::uint64_t>, Import> imports_;  // by (process, allocation)
    std::int64_t exchange_ = 0;
    TransportCounters counters_;
};

void* IpcTransport::importBuffer(int owner, const ExportedBuffer& e, bool landing) {
    const auto key = std::pair{e.process, e.allocation};
    if (auto it = imports_.find(key); it != imports_.end()) return it->second.base;
    Import import;
    import.owner = owner;
    import.landing = landing;
    import.process = e.process;
    import.allocation = e.allocation;
    if (e.process == processToken()) {
        import.base = reinterpret_cast<void*>(e.pointer);
    } else {
        const cudaError_t status = cudaIpcOpenMemHandle(&import.base, e.handle, cudaIpcMemLazyEnablePeerAccess);
        if (status != cudaSuccess) {
            cudaGetLastError();
            throwError(ErrorKind::Cuda,
                       fmt::format("rank {}: cudaIpcOpenMemHandle of rank {}'s buffer failed: {} ({}); CUDA IPC needs "
                                   "the ranks on one node with peer-accessible GPUs (and no container isolation of "
                                   "the GPU driver); use the staged transport otherwise",
                                   world_.rank(), owner, cudaGetErrorName(status), cudaGetErrorString(status)));
        }
        import.opened = true;
    }
    imports_.emplace(key, import);
    return import.base;
}

template <class Keep>
void IpcTransport::closeImports(Keep keep) {
    for (auto it = imports_.begin(); it != imports_.end();) {
        if (keep(it->second)) {
            ++it;
            continue;
        }
        if (it->second.opened) cudaIpcCloseMemHandle(it->second.base);
        it = imports_.erase(it);
    }
}

void IpcTransport::bindArrays(const plan::ParticleHaloPlan& plan, const SharedArray& coordinates,
                              const SharedArray& forces) {
    plan_ = plan;
    f_ = static_cast<Vec3f*>(forces.data);
    forceSlot_.assign(plan_.pulses.size(), 0);
    std::size_t forceSlots = 0;
    for (const plan::Pulse& p : plan_.pulses) {
        forceSlot_[static_cast<std::size_t>(p.id)] = forceSlots;
        forceSlots += static_cast<std::size_t>(p.sendCount());
    }

    // Importers must unmap an allocation before its owner frees it: the
    // force slots are this transport's own. (The caller's coordinates were
    // reallocated, if at all, before this call: their stale mappings are
    // closed below, before anything is imported again.)
    const bool regrow = forceRecv_.needsGrowth(forceSlots);
    const std::vector<std::int64_t> regrows = world_.allGather<std::int64_t>(regrow ? 1 : 0);
    if (std::count(regrows.begin(), regrows.end(), 1) > 0) {
        closeImports([&](const Import& i) { return i.landing || regrows[static_cast<std::size_t>(i.owner)] == 0; });
        world_.barrier();  // every mapping of a growing array is closed before its owner frees it
    }
    if (forceRecv_.needsGrowth(forceSlots)) forceRecv_.allocate(forceSlots);
    forceRecv_.buffer.resize(forceSlots);
    send_.resize(std::max<std::size_t>(static_cast<std::size_t>(plan_.maxSendCount()), 1));
    maps_.upload(plan_);
    if (coordinates.allocation != xCallerAllocation_ || coordinates.data != x_) {
        // Device memory from the collective allocator: whole 2 MiB units, so
        // the handle shares this array alone.
        x_ = static_cast<Vec3f*>(coordinates.data);
        xCallerAllocation_ = coordinates.allocation;
        HALOEX_CUDA_CHECK(cudaIpcGetMemHandle(&xHandle_, x_));
        xAllocation_ = nextAllocationId();
    }
    ExportedBuffer myX;
    myX.process = processToken();
    myX.allocation = xAllocation_;
    myX.pointer = reinterpret_cast<std::uint64_t>(x_);
    myX.handle = xHandle_;

    // Per pulse, tell the peers where to write into this rank and learn where
    // to write into them (an allocation seen before keeps its mapping).
    peerX_.assign(plan_.pulses.size(), nullptr);
    peerForceSlot_.assign(plan_.pulses.size(), nullptr);
    std::set<std::pair<std::uint64_t, std::uint64_t>> used;
    std::vector<std::pair<int, ExportedBuffer>> wanted;  // (owner, buffer): per pulse, coordinates then forces
    for (const plan::Pulse& p : plan_.pulses) {
        // My coordinates are written by my recvRank; I write into my sendRank's.
        const auto theirX =
            world_.sendRecv(std::vector<ExportedBuffer>{myX}, p.recvRank, p.sendRank, kTagExportX + p.id);
        // My force slot of this pulse is written by my sendRank; I write into my recvRank's.
        const std::vector<ExportedBuffer> mineF{
            forceRecv_.exported(static_cast<std::int64_t>(forceSlot_[static_cast<std::size_t>(p.id)] * sizeof(Vec3f)))};
        const auto theirF = world_.sendRecv(mineF, p.sendRank, p.recvRank, kTagExportF + p.id);
        if (p.sends()) {
            HALOEX_ASSERT(theirX.size() == 1, "one coordinate export per pulse");
            used.insert({theirX[0].process, theirX[0].allocation});
        }
        if (p.receives()) {
            HALOEX_ASSERT(theirF.size() == 1, "one force-slot export per pulse");
            used.insert({theirF[0].process, theirF[0].allocation});
        }
        if (p.sends()) wanted.push_back({p.sendRank, theirX[0]});
        if (p.receives()) wanted.push_back({p.recvRank, theirF[0]});
    }
    // Stale mappings (a peer's reallocated coordinates) go before new ones are opened.
    closeImports([&](const Import& i) { return i.landing || used.count({i.process, i.allocation}) > 0; });
    std::size_t k = 0;
    for (const plan::Pulse& p : plan_.pulses) {
        const auto id = static_cast<std::size_t>(p.id);
        if (p.sends()) {
            const auto& [owner, buffer] = wanted[k++];
            peerX_[id] = static_cast<Vec3f*>(importBuffer(owner, buffer)) + p.remoteRecvOffset;
        }
        if (p.receives()) {
            const auto& [owner, buffer] = wanted[k++];
            peerForceSlot_[id] =
                reinterpret_cast<Vec3f*>(static_cast<std::byte*>(importBuffer(owner, buffer)) + buffer.offsetBytes);
        }
    }
}

void IpcTransport::handshake(int dest, int src, int tag) {
    const std::int64_t mine = exchange_;
    std::int64_t theirs = mine;
    world_.sendRecvBytes(std::as_bytes(std::span(&mine, 1)), dest,
                         std::as_writable_bytes(std::span(&theirs, src >= 0 ? 1 : 0)), src, tag);
    if (theirs != mine) {
        throwError(ErrorKind::Internal,
                   fmt::format("ipc transport: rank {} is in exchange {} but rank {} in exchange {} (tag {}); every "
                               "rank must call forward/reverse the same number of times",
                               world_.rank(), mine, src, theirs, tag));
    }
}

void IpcTransport::forwardCoordinates(const plan::Box& box, StreamHandle streamHandle) {
    const auto stream = static_cast<cudaStream_t>(streamHandle);
    ++exchange_;
    for (const plan::Pulse& p : plan_.pulses) {
        const auto id = static_cast<std::size_t>(p.id);
        const int count = p.sends() ? p.sendCount() : 0;
        cuda::packCoordinates(x_, maps_.pulse(p.id), count, cuda::pulseShift(p, box), send_.data(), stream);
        // Sync 1: the packed block is complete (MPI cannot wait on a stream),
        // and this rank's stream is idle, so its own receive slot is free.
        HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
        ++counters_.hostSyncs;
        handshake(p.recvRank, p.sendRank, kTagReadyForward + p.id);
        if (count > 0) {
            HALOEX_CUDA_CHECK(cudaMemcpyAsync(peerX_[id], send_.data(), static_cast<std::size_t>(count) * sizeof(Vec3f),
                                              cudaMemcpyDefault, stream));
        }
        // Sync 2: the data is in the receiver's memory before it is told so.
        HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
        ++counters_.hostSyncs;
        // After this, my slot of pulse p is filled: later pulses may pack from it.
        handshake(p.sendRank, p.recvRank, kTagDoneForward + p.id);
    }
    ++counters_.forwardCalls;
}

void IpcTransport::reverseForces(StreamHandle streamHandle) {
    const auto stream = static_cast<cudaStream_t>(streamHandle);
    ++exchange_;
    for (auto it = plan_.pulses.rbegin(); it != plan_.pulses.rend(); ++it) {
        const plan::Pulse& p = *it;
        const auto id = static_cast<std::size_t>(p.id);
        // Sync 1: the halo forces are final (force kernels and the later
        // pulses' accumulation done) and this rank's force slots are free.
        HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
        ++counters_.hostSyncs;
        handshake(p.sendRank, p.recvRank, kTagReadyReverse + p.id);
        const int haloCount = p.receives() ? p.recvCount : 0;
        if (haloCount > 0) {
            HALOEX_CUDA_CHECK(cudaMemcpyAsync(peerForceSlot_[id], f_ + p.recvOffset,
                                              static_cast<std::size_t>(haloCount) * sizeof(Vec3f), cudaMemcpyDefault,
                                              stream));
        }
        HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
        ++counters_.hostSyncs;
        handshake(p.recvRank, p.sendRank, kTagDoneReverse + p.id);
        if (p.sends()) {
            cuda::unpackAddForces(forceRecv_.buffer.data() + forceSlot_[id], maps_.pulse(p.id), p.sendCount(), f_,
                                  stream);
        }
    }
    ++counters_.reverseCalls;
}

void IpcTransport::reserveLanding(std::size_t bytes) {
    if (landing_.allocation != 0 && bytes <= landingHalf_) return;
    if (landing_.allocation != 0) retiredLandings_.push_back(std::move(landing_.buffer));
    landing_.allocate(2 * bytes);
    // Whole 2 MiB units (ipcAllocationElements): each half starts 1 MiB-aligned.
    landingHalf_ = landing_.buffer.capacity() / 2;
}

// Per call c, this rank offers half (c % 2) of its landing buffer: every
// receiver tells each block's sender where the block lands (round 1), the
// senders copy their blocks into the receivers' landing buffers, wait for
// their stream (the data is there), tell the receivers (round 2), and each
// receiver queues the copies out of its landing half into `recv` (none in
// place). Each round is one World::sendRecvMany over all blocks.
// The half offered in call c was last read by work queued (copies out, or
// the caller's reads in place) before call c - 1 began, on the stream of
// call c - 2: call c - 1's stream sync has retired it when that stream is
// c - 1's too, and where the stream changed, call c - 1 synchronised the
// device first. So no host wait for an event is needed before the offer.
// A mapping that fails is reported to the receivers in round 2, so every
// rank of the block fails with a message instead of waiting.
void IpcTransport::beginLandingCall(cudaStream_t stream) {
    if (landingCalls_++ > 0 && stream != lastBlockStream_) {
        // The previous stream may be gone (a destroyed stream cannot be
        // waited on); its work still runs and finishes, and this waits for it.
        HALOEX_CUDA_CHECK(cudaDeviceSynchronize());
    }
    lastBlockStream_ = stream;
}

void IpcTransport::landBlocks(std::span<const BlockExchange> blocks, std::span<const void*> landed,
                              cudaStream_t stream) {
    const std::int64_t exchange = ++blockExchange_;
    beginLandingCall(stream);
    landingAt_.assign(blocks.size(), 0);
    std::size_t landingBytes = 0;
    for (std::size_t b = 0; b < blocks.size(); ++b) {
        landingAt_[b] = landingBytes;
        if (blocks[b].src >= 0) landingBytes += blocks[b].recvBytes;
    }
    reserveLanding(landingBytes);
    const std::size_t half = static_cast<std::size_t>(exchange & 1) * landingHalf_;

    // Round 1: where each block lands, to its sender; from each receiver.
    myOffers_.resize(blocks.size());
    offers_.assign(blocks.size(), LandingOffer{});
    messages_.clear();
    for (std::size_t b = 0; b < blocks.size(); ++b) {
        const BlockExchange& block = blocks[b];
        myOffers_[b] = LandingOffer{landing_.exported(static_cast<std::int64_t>(half + landingAt_[b])), exchange};
        messages_.push_back(
            {block.src >= 0 ? std::as_bytes(std::span(&myOffers_[b], 1)) : std::span<const std::byte>{}, block.src,
             block.dest >= 0 ? std::as_writable_bytes(std::span(&offers_[b], 1)) : std::span<std::byte>{}, block.dest});
    }
    world_.sendRecvMany(messages_, kTagBlockReady);
    for (std::size_t b = 0; b < blocks.size(); ++b) {
        if (blocks[b].dest >= 0 && offers_[b].exchange != exchange) {
            throwError(ErrorKind::Internal,
                       fmt::format("ipc transport: rank {} is in block exchange {} but rank {} in {}; every rank must "
                                   "call exchangeBlock(s) the same number of times",
                                   world_.rank(), exchange, blocks[b].dest, offers_[b].exchange));
        }
    }

    std::string failure;
    for (std::size_t b = 0; b < blocks.size() && failure.empty(); ++b) {
        const BlockExchange& block = blocks[b];
        if (block.dest < 0 || block.sendBytes == 0) continue;
        try {
            auto* base = static_cast<std::byte*>(importBuffer(block.dest, offers_[b].buffer, /*landing=*/true));
            HALOEX_CUDA_CHECK(cudaMemcpyAsync(base + offers_[b].buffer.offsetBytes, block.send, block.sendBytes,
                                              cudaMemcpyDefault, stream));
        } catch (const Error& e) {
            failure = e.what();
        }
    }
    // The data is in the receivers' memory before they are told so (this
    // also retires every read of the other landing half queued on `stream`).
    HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));

    // Round 2: delivered, to each block's receiver; from each sender.
    confirmDelivery(blocks, BlockDone{exchange, failure.empty() ? 1 : 0, -1}, failure, kTagBlockDone);
    handOut(blocks, landed, landing_.buffer.data() + half, landingAt_, stream);
}

void IpcTransport::confirmDelivery(std::span<const BlockExchange> blocks, const BlockDone& mine,
                                   const std::string& failure, int tag) {
    done_.assign(blocks.size(), BlockDone{});
    messages_.clear();
    for (std::size_t b = 0; b < blocks.size(); ++b) {
        const BlockExchange& block = blocks[b];
        messages_.push_back(
            {block.dest >= 0 ? std::as_bytes(std::span(&mine, 1)) : std::span<const std::byte>{}, block.dest,
             block.src >= 0 ? std::as_writable_bytes(std::span(&done_[b], 1)) : std::span<std::byte>{}, block.src});
    }
    world_.sendRecvMany(messages_, tag);
    if (!failure.empty()) throwError(ErrorKind::Cuda, failure);
    for (std::size_t b = 0; b < blocks.size(); ++b) {
        if (blocks[b].src < 0) continue;
        if (done_[b].exchange != mine.exchange || done_[b].pattern != mine.pattern) {
            throwError(ErrorKind::Internal,
                       fmt::format("ipc transport: rank {} is in call {} of block pattern {} but rank {} in call {} "
                                   "of pattern {} (-1: unbound); every rank must make the same exchangeBlock(s) calls",
                                   world_.rank(), mine.exchange, mine.pattern, blocks[b].src, done_[b].exchange,
                                   done_[b].pattern));
        }
        if (!done_[b].delivered) {
            throwError(ErrorKind::Cuda,
                       fmt::format("ipc transport: rank {} could not copy its block into rank {}'s landing buffer "
                                   "(its own message says why)",
                                   blocks[b].src, world_.rank()));
        }
    }
}

void IpcTransport::handOut(std::span<const BlockExchange> blocks, std::span<const void*> landed,
                           const std::byte* landedAt, const std::vector<std::size_t>& landingAt, cudaStream_t stream) {
    if (!landed.empty()) {
        // In place: the caller reads the landing half (until the next call).
        for (std::size_t b = 0; b < blocks.size(); ++b) {
            const bool received = blocks[b].src >= 0 && blocks[b].recvBytes > 0;
            landed[b] = received ? static_cast<const void*>(landedAt + landingAt[b]) : blocks[b].recv;
        }
        return;
    }
    // The copies out of the landing half: one per run of receives that are
    // adjacent in `recv` too (the halo API's scratch holds a batch back to back).
    std::byte* runTo = nullptr;
    std::size_t runFrom = 0, runBytes = 0;
    auto flush = [&] {
        if (runBytes == 0) return;
        HALOEX_CUDA_CHECK(cudaMemcpyAsync(runTo, landedAt + runFrom, runBytes, cudaMemcpyDeviceToDevice, stream));
        runBytes = 0;
    };
    for (std::size_t b = 0; b < blocks.size(); ++b) {
        const BlockExchange& block = blocks[b];
        if (block.src < 0 || block.recvBytes == 0) continue;
        auto* to = static_cast<std::byte*>(block.recv);
        if (runBytes > 0 && (to != runTo + runBytes || landingAt[b] != runFrom + runBytes)) flush();
        if (runBytes == 0) {
            runTo = to;
            runFrom = landingAt[b];
        }
        runBytes += block.recvBytes;
    }
    flush();
}

// A bound pattern drops the per-call offer round. Its receivers' landing
// buffers and each block's place in them are exchanged once, here; call k of
// the pattern lands in half (k % 2). A sender may write a receiver's half in
// call k once that receiver's reads of it (handed out in call k - 2) are
// retired: the receiver's first landing call after k - 2 (at the latest call
// k - 1 of the pattern) synchronises that stream or the device before its
// delivery round, so the receiver's delivery message of call k - 1 says so.
// The sender has that message only where the receiver also sends to it; so
// a pattern binds only where every rank receives from each rank it sends to
// (halo exchanges are so), agreed over the World, else -1 (unbound calls).
int IpcTransport::bindBlockPattern(std::span<const BlockExchange> blocks) {
    std::set<int> sources;
    for (const BlockExchange& b : blocks) {
        if (b.src >= 0) sources.insert(b.src);
    }
    bool mutual = true;
    for (const BlockExchange& b : blocks) {
        if (b.dest >= 0 && sources.count(b.dest) == 0) mutual = false;
    }
    const std::int64_t everyone = world_.allReduceValue<std::int64_t>(mutual ? 1 : 0, runtime::ReduceOp::Min);
    if (everyone == 0) return -1;

    const int id = static_cast<int>(patterns_.size());
    Pattern pattern;
    pattern.shape.assign(blocks.begin(), blocks.end());
    pattern.landingAt.assign(blocks.size(), 0);
    std::size_t bytes = 0;
    for (std::size_t b = 0; b < blocks.size(); ++b) {
        pattern.landingAt[b] = bytes;
        if (blocks[b].src >= 0) bytes += blocks[b].recvBytes;
    }
    pattern.landing.allocate(2 * std::max<std::size_t>(bytes, 1));
    pattern.half = pattern.landing.buffer.capacity() / 2;  // whole 2 MiB units: 1 MiB-aligned halves

    // The one offer round: each block's place in half 0, to its sender.
    std::vector<PatternOffer> mine(blocks.size()), theirs(blocks.size());
    messages_.clear();
    for (std::size_t b = 0; b < blocks.size(); ++b) {
        const BlockExchange& block = blocks[b];
        mine[b] = PatternOffer{pattern.landing.exported(static_cast<std::int64_t>(pattern.landingAt[b])),
                               static_cast<std::int64_t>(pattern.half), id};
        messages_.push_back(
            {block.src >= 0 ? std::as_bytes(std::span(&mine[b], 1)) : std::span<const std::byte>{}, block.src,
             block.dest >= 0 ? std::as_writable_bytes(std::span(&theirs[b], 1)) : std::span<std::byte>{}, block.dest});
    }
    world_.sendRecvMany(messages_, kTagPatternOffer);
    pattern.peerAt.assign(blocks.size(), nullptr);
    pattern.peerHalf.assign(blocks.size(), 0);
    for (std::size_t b = 0; b < blocks.size(); ++b) {
        const BlockExchange& block = blocks[b];
        if (block.dest < 0) continue;
        if (theirs[b].pattern != id) {
            throwError(ErrorKind::Internal,
                       fmt::format("ipc transport: rank {} binds block pattern {} but rank {} pattern {}; every rank "
                                   "must bind the same patterns in the same order",
                                   world_.rank(), id, block.dest, theirs[b].pattern));
        }
        if (block.sendBytes == 0 || !pattern.failure.empty()) continue;
        try {
            auto* base = static_cast<std::byte*>(importBuffer(block.dest, theirs[b].buffer, /*landing=*/true));
            pattern.peerAt[b] = base + theirs[b].buffer.offsetBytes;
            pattern.peerHalf[b] = static_cast<std::size_t>(theirs[b].half);
        } catch (const Error& e) {
            pattern.failure = e.what();  // told to the receivers in every call's delivery round
        }
    }
    patterns_.push_back(std::move(pattern));
    return id;
}

void IpcTransport::exchangeBoundBlocksInPlace(int id, std::span<const BlockExchange> blocks,
                                              std::span<const void*> landed, StreamHandle streamHandle) {
    const auto stream = static_cast<cudaStream_t>(streamHandle);
    HALOEX_ASSERT(landed.size() == blocks.size(), "exchangeBoundBlocksInPlace: one landed pointer per block");
    if (id < 0 || static_cast<std::size_t>(id) >= patterns_.size()) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("ipc transport: no block pattern {} is bound ({} are); use bindBlockPattern's answer",
                               id, patterns_.size()));
    }
    Pattern& pattern = patterns_[static_cast<std::size_t>(id)];
    for (std::size_t b = 0; b < blocks.size() || b < pattern.shape.size(); ++b) {
        const bool same = b < blocks.size() && b < pattern.shape.size() && blocks[b].dest == pattern.shape[b].dest &&
                          blocks[b].src == pattern.shape[b].src &&
                          (blocks[b].dest < 0 || blocks[b].sendBytes == pattern.shape[b].sendBytes) &&
                          (blocks[b].src < 0 || blocks[b].recvBytes == pattern.shape[b].recvBytes);
        if (!same) {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("ipc transport: block {} of this call differs from block pattern {} (bound with "
                                   "{} blocks, called with {}) in its ranks or byte counts; bind a pattern for "
                                   "these blocks",
                                   b, id, pattern.shape.size(), blocks.size()));
        }
    }
    const std::int64_t call = ++pattern.calls;
    beginLandingCall(stream);
    const std::size_t parity = static_cast<std::size_t>(call & 1);
    std::string failure = pattern.failure;
    for (std::size_t b = 0; b < blocks.size() && failure.empty(); ++b) {
        const BlockExchange& block = blocks[b];
        if (block.dest < 0 || block.sendBytes == 0) continue;
        try {
            HALOEX_CUDA_CHECK(cudaMemcpyAsync(pattern.peerAt[b] + parity * pattern.peerHalf[b], block.send,
                                              block.sendBytes, cudaMemcpyDefault, stream));
        } catch (const Error& e) {
            failure = e.what();
        }
    }
    // The data is in the receivers' memory before they are told so (and
    // this rank's reads handed out two calls ago are retired: see above).
    HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
    confirmDelivery(blocks, BlockDone{call, failure.empty() ? 1 : 0, id}, failure, kTagPatternDone);
    handOut(blocks, landed, pattern.landing.buffer.data() + parity * pattern.half, pattern.landingAt, stream);
}

std::unique_ptr<CoordinateForceExchange> IpcTransport::makeCoordinateForceExchange() {
    return std::make_unique<ForwardingCoordinateForceExchange<IpcTransport, false>>(*this);
}

}  // namespace

std::unique_ptr<BlockTransport> makeIpcTransport(runtime::World& world) {
    return std::make_unique<IpcTransport>(world);
}

}  // namespace haloex::transport
