// The Nvshmem provider of peer memory (transport/peer_memory.hpp): an NVSHMEM
// symmetric allocation, peers through nvshmem_ptr (host side only).
#include <algorithm>
#include <cstdint>
#include <fmt/format.h>

#include "entry_points.hpp"
#include "haloex/core/error.hpp"
#include "haloex/detail/nvshmem/symmetric_memory.hpp"

namespace haloex::transport::entry {
namespace {

class NvshmemPeerMemory final : public PeerMemory {
public:
    NvshmemPeerMemory(runtime::World& world, std::size_t bytes, const std::string& what)
        : bytes_(checkedBytes(world, bytes, what)), allocation_(world, std::max<std::size_t>(bytes_, 1), what) {}

    std::string describe() const override {
        return "nvshmem: a symmetric allocation, peers through nvshmem_ptr (NVLink/P2P load/store)";
    }
    std::size_t bytes() const override { return bytes_; }
    void* localBase() const override { return allocation_.data(); }
    void* peerBase(int peer) override { return allocation_.peerData(peer); }

private:
    // The maximum over the ranks; NVSHMEM's PEs are processes, so ranks that
    // are threads of one process cannot be its PEs.
    static std::size_t checkedBytes(runtime::World& world, std::size_t bytes, const std::string& what) {
        if (world.kind() == "threads" && world.size() > 1) {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("{}: NVSHMEM needs one process per rank (mpirun), but these {} ranks are threads "
                                   "of one process; use the ipc backend there",
                                   what, world.size()));
        }
        return static_cast<std::size_t>(
            world.allReduceValue<std::int64_t>(static_cast<std::int64_t>(bytes), runtime::ReduceOp::Max));
    }
    std::size_t bytes_;
    nvshmem::SymmetricAllocation allocation_;  // collective; zero-filled
};

}  // namespace

std::unique_ptr<PeerMemory> makeNvshmemPeerMemory(runtime::World& world, std::size_t bytes, const std::string& what) {
    return std::make_unique<NvshmemPeerMemory>(world, bytes, what);
}

}  // namespace haloex::transport::entry
