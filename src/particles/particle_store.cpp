#include "haloex/particles/particle_store.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "haloex/core/error.hpp"
#include "particle_kernels.hpp"

namespace haloex::particles {

ParticleStore::ParticleStore(std::vector<std::size_t> fieldBytes, double growthFactor) : growth_(growthFactor) {
    if (!(growthFactor >= 1.0)) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("ParticleStore: growth factor {} must be at least 1", growthFactor));
    }
    bytes_.push_back(sizeof(Vec3f));
    for (std::size_t b : fieldBytes) {
        if (b == 0) throwError(ErrorKind::InvalidInput, "ParticleStore: a field of 0 bytes per particle");
        bytes_.push_back(b);
    }
    data_.resize(bytes_.size());
    next_.resize(bytes_.size());
}

int ParticleStore::grownCapacity(int n) const { return std::max(n, static_cast<int>(std::ceil(n * growth_))) + 64; }

void ParticleStore::resize(int n) {
    if (n < 0) throwError(ErrorKind::InvalidInput, fmt::format("ParticleStore::resize({})", n));
    // Bound positions that outgrow the caller's array move back into the
    // store's own, grown like the other fields.
    const bool unbind = bound_ && n > bound_->capacity;
    if (n > capacity_) {
        const int capacity = grownCapacity(n);
        for (std::size_t k = bound_ && !unbind ? 1 : 0; k < bytes_.size(); ++k) {
            cuda::DeviceBuffer<std::byte> grown(static_cast<std::size_t>(capacity) * bytes_[k]);
            if (size_ > 0) {
                HALOEX_CUDA_CHECK(cudaMemcpy(grown.data(), field(static_cast<int>(k)),
                                             static_cast<std::size_t>(size_) * bytes_[k], cudaMemcpyDeviceToDevice));
            }
            data_[k] = std::move(grown);
        }
        if (unbind) bound_.reset();
        updateCapacity();
    }
    size_ = n;
}

// The smallest of the fields' capacities (a bound array's included).
void ParticleStore::updateCapacity() {
    capacity_ = bound_ ? bound_->capacity : static_cast<int>(data_[0].size() / bytes_[0]);
    for (std::size_t k = 1; k < bytes_.size(); ++k) {
        capacity_ = std::min(capacity_, static_cast<int>(data_[k].size() / bytes_[k]));
    }
}

void ParticleStore::bindPositions(Vec3f* array, int capacity) {
    if (array == nullptr || capacity < size_) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("ParticleStore::bindPositions: an array of at least the {} particles held is needed "
                               "(got {} with capacity {})",
                               size_, array == nullptr ? "a null array" : "an array", capacity));
    }
    bound_ = BoundPositions{array, capacity};
    data_[0] = {};  // the positions live in the caller's array now
    updateCapacity();
}

void ParticleStore::upload(int n, const std::vector<const void*>& hostFields) {
    HALOEX_ASSERT(hostFields.size() == bytes_.size(), "ParticleStore::upload needs one host array per field");
    resize(n);
    for (std::size_t k = 0; k < bytes_.size(); ++k) {
        if (n > 0) {
            cuda::copyToDeviceNow(field(static_cast<int>(k)), hostFields[k], static_cast<std::size_t>(n) * bytes_[k]);
        }
    }
}

void ParticleStore::download(const std::vector<void*>& hostFields) const {
    HALOEX_ASSERT(hostFields.size() == bytes_.size(), "ParticleStore::download needs one host array per field");
    for (std::size_t k = 0; k < bytes_.size(); ++k) {
        if (size_ > 0) {
            HALOEX_CUDA_CHECK(cudaMemcpy(hostFields[k], field(static_cast<int>(k)),
                                         static_cast<std::size_t>(size_) * bytes_[k], cudaMemcpyDeviceToHost));
        }
    }
}

void ParticleStore::reserveNext(int n) {
    const auto need = static_cast<std::size_t>(std::max(n, 1));
    for (std::size_t k = 0; k < bytes_.size(); ++k) {
        if (next_[k].capacity() < need * bytes_[k]) {
            next_[k].reserve(static_cast<std::size_t>(grownCapacity(n)) * bytes_[k]);
        }
        next_[k].resize(next_[k].capacity());
    }
}

void ParticleStore::swapNext(int n, cudaStream_t stream) {
    // Bound positions stay in the caller's array: the next set is copied
    // there (unless it has outgrown it: then the store's own array takes it).
    const bool copyBack = bound_ && n <= bound_->capacity;
    if (bound_ && !copyBack) bound_.reset();
    for (std::size_t k = copyBack ? 1 : 0; k < bytes_.size(); ++k) {
        HALOEX_ASSERT(next_[k].size() >= static_cast<std::size_t>(n) * bytes_[k], "swapNext beyond reserveNext");
        std::swap(data_[k], next_[k]);
    }
    if (copyBack && n > 0) {
        HALOEX_CUDA_CHECK(cudaMemcpyAsync(bound_->array, next_[0].data(), static_cast<std::size_t>(n) * bytes_[0],
                                          cudaMemcpyDeviceToDevice, stream));
    }
    updateCapacity();
    size_ = n;
}

void ParticleStore::reorder(const int* order, cudaStream_t stream) {
    if (size_ == 0) return;
    if (order == nullptr) throwError(ErrorKind::InvalidInput, "ParticleStore::reorder: a null order");
    // Gathered into the second set, which then becomes current (as a migration does).
    reserveNext(size_);
    detail::FieldCopyBatch batch;
    for (int k = 0; k < numFields(); ++k) batch.add(field(k), nextField(k), elementBytes(k));
    batch.gather(order, size_, stream);
    swapNext(size_, stream);
}

}  // namespace haloex::particles
