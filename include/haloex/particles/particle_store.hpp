#pragma once
/// @file
/// One rank's particles in device memory, as structure of arrays that move
/// together when particles migrate: positions (field 0, Vec3f, nm) and any
/// number of fixed-size fields after them (velocities, types, ids, ...).
///
/// Capacity grows geometrically (growthFactor) and never shrinks, so the
/// search steps of a run rarely allocate; growing keeps the contents.
/// resize() and the copies are synchronous (set-up and output steps).
#include <cuda_runtime.h>

#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

#include "haloex/core/vec3.hpp"
#include "haloex/cuda/device_buffer.hpp"

namespace haloex::particles {

/// Per-particle fields in device memory: the positions (Vec3f) as field 0,
/// then fields of the sizes given; what migration moves.
class ParticleStore {
public:
    /// fieldBytes: element size of each field after the positions.
    explicit ParticleStore(std::vector<std::size_t> fieldBytes, double growthFactor = 1.25);

    int size() const { return size_; }                                 ///< particles held
    int capacity() const { return capacity_; }                         ///< particles allocated for
    int numFields() const { return static_cast<int>(bytes_.size()); }  ///< fields, positions included
    /// Bytes per element of `field`.
    std::size_t elementBytes(int field) const { return bytes_.at(static_cast<std::size_t>(field)); }

    /// Field `k` (device memory).
    const void* field(int k) const {
        if (k == 0 && bound_) return bound_->array;
        return data_.at(static_cast<std::size_t>(k)).data();
    }
    void* field(int k) { return const_cast<void*>(std::as_const(*this).field(k)); }  ///< field `k` (device memory)
    /// Field `k` as an array of T.
    template <class T>
    T* fieldAs(int k) {
        return static_cast<T*>(field(k));
    }
    /// Field `k` as an array of T.
    template <class T>
    const T* fieldAs(int k) const {
        return static_cast<const T*>(field(k));
    }
    Vec3f* positions() { return fieldAs<Vec3f>(0); }              ///< field 0
    const Vec3f* positions() const { return fieldAs<Vec3f>(0); }  ///< field 0

    /// Size n; the first min(n, size()) particles are kept.
    void resize(int n);
    /// n particles from host arrays, one per field (hostFields[k] holds n
    /// elements of elementBytes(k)).
    void upload(int n, const std::vector<const void*>& hostFields);
    /// Every field's first size() elements into host arrays of that size.
    void download(const std::vector<void*>& hostFields) const;

    /// Migration builds the next contents in a second set of arrays: room for
    /// n particles there (old contents of the second set are not kept) ...
    void reserveNext(int n);
    void* nextField(int k) { return next_.at(static_cast<std::size_t>(k)).data(); }  ///< field `k` of the second set
    /// ... and then makes them current, with size n (bound positions: the
    /// next set is copied into the bound array, on `stream`).
    void swapNext(int n, cudaStream_t stream = nullptr);

    /// Puts the particles in a new order, every field alike: the particle at
    /// index order[i] moves to index i, for i < size(). `order` (device
    /// memory, size() entries) must be a permutation. Enqueued on `stream`
    /// (bound positions stay in the bound array); no host synchronisation
    /// unless the second set of arrays has to grow.
    void reorder(const int* order, cudaStream_t stream);

    /// The positions in an array the caller owns instead of the store's own:
    /// `array` already holds the size() positions (the caller put them
    /// there), and every change of the store happens there -- a resize, an
    /// upload, a wrap in place; a migration builds its next set aside and
    /// copies it back at swapNext. The MD backend binds the coordinate array
    /// that the halo exchange reads and writes, so the positions have one
    /// place. `capacity`: elements of `array`. Growing past it moves the
    /// positions back into the store's own array: positionsIn() then says
    /// so, and the caller copies and binds again. Throws InvalidInput for a
    /// null array or size() > capacity.
    void bindPositions(Vec3f* array, int capacity);
    /// Whether the positions are in `array` (bound to it).
    bool positionsIn(const Vec3f* array) const { return bound_ && bound_->array == array; }

private:
    int grownCapacity(int n) const;
    void updateCapacity();
    struct BoundPositions {
        Vec3f* array;
        int capacity;
    };

    std::vector<std::size_t> bytes_;
    std::vector<cuda::DeviceBuffer<std::byte>> data_, next_;  // data_[0]: unused while the positions are bound
    std::optional<BoundPositions> bound_;
    double growth_;
    int size_ = 0;
    int capacity_ = 0;
};

}  // namespace haloex::particles
