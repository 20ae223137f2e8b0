// Symmetric arrays for callers outside the transport (symmetric_memory.hpp),
// through the transport's own SymmetricBuffer and NVSHMEM session.
#include "haloex/detail/nvshmem/symmetric_memory.hpp"

#include "session.hpp"
#include "symmetric_buffer.hpp"

namespace haloex::nvshmem {

SymmetricAllocation::SymmetricAllocation(runtime::World& world, std::size_t bytes, const std::string& what)
    : buffer_(std::make_unique<nvshmem_detail::SymmetricBuffer>()), bytes_(bytes) {
    nvshmem_detail::ensureNvshmem(world, bytes);
    buffer_->allocate(bytes, what.c_str());
}

SymmetricAllocation::~SymmetricAllocation() = default;

void* SymmetricAllocation::data() const { return buffer_->as<void>(); }

void* SymmetricAllocation::peerData(int rank) const { return nvshmem_ptr(buffer_->as<void>(), rank); }

}  // namespace haloex::nvshmem
