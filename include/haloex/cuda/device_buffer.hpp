#pragma once
/// @file
/// RAII owners for device memory, pinned host memory, streams and events.
#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

#include "haloex/detail/cuda/blocking_ops.hpp"
#include "haloex/cuda/check.hpp"

namespace haloex::cuda {

/// Device array of T. Not initialised. Growing discards the contents.
template <class T>
class DeviceBuffer {
public:
    DeviceBuffer() = default;
    /// resize(count).
    explicit DeviceBuffer(std::size_t count) { resize(count); }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    /// Takes `o`'s memory; `o` is left empty.
    DeviceBuffer(DeviceBuffer&& o) noexcept { swap(o); }
    /// Frees this buffer's memory and takes `o`'s.
    DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
        if (this != &o) {
            release();
            swap(o);
        }
        return *this;
    }
    ~DeviceBuffer() { release(); }

    /// Ensures room for `count` elements (reallocates only to grow).
    void reserve(std::size_t count) {
        if (count <= capacity_) return;
        release();
        HALOEX_CUDA_CHECK(cudaMalloc(&data_, count * sizeof(T)));
        capacity_ = count;
    }
    /// size() becomes `count` (reserve(count) first: growing discards the contents).
    void resize(std::size_t count) {
        reserve(count);
        size_ = count;
    }
    /// resize(count), then every element set to zero bytes, finished on the
    /// device on return (blocking_ops.hpp says why that matters).
    void resizeZeroed(std::size_t count) {
        resize(count);
        fillBytesNow(data_, 0, size_ * sizeof(T));
    }
    /// resize(count) for arrays whose contents the caller rewrites anyway: memory
    /// it had to allocate is zeroed (finished on return) so it never holds
    /// uninitialised bytes; memory it kept keeps its contents, and costs no
    /// host round trip (a transport's setPlan at every search step).
    void resizeZeroedWhenGrown(std::size_t count) {
        const bool grows = count > capacity_;
        resize(count);
        if (grows) fillBytesNow(data_, 0, capacity_ * sizeof(T));
    }
    /// Sets the size() elements to zero bytes, enqueued on `stream`.
    void zeroAsync(cudaStream_t stream) {
        if (size_) HALOEX_CUDA_CHECK(cudaMemsetAsync(data_, 0, size_ * sizeof(T), stream));
    }

    T* data() { return data_; }                              ///< the device array (nullptr when empty)
    const T* data() const { return data_; }                  ///< the device array (nullptr when empty)
    std::size_t size() const { return size_; }               ///< elements in use
    std::size_t capacity() const { return capacity_; }       ///< elements allocated
    std::size_t bytes() const { return size_ * sizeof(T); }  ///< size() in bytes

private:
    void release() noexcept {
        if (data_) cudaFree(data_);
        data_ = nullptr;
        size_ = capacity_ = 0;
    }
    void swap(DeviceBuffer& o) noexcept {
        std::swap(data_, o.data_);
        std::swap(size_, o.size_);
        std::swap(capacity_, o.capacity_);
    }
    T* data_ = nullptr;
    std::size_t size_ = 0;
    std::size_t capacity_ = 0;
};

/// Page-locked host array (for asynchronous copies and mapped flags).
template <class T>
class PinnedBuffer {
public:
    PinnedBuffer() = default;
    /// allocate(count, flags).
    explicit PinnedBuffer(std::size_t count, unsigned flags = cudaHostAllocDefault) { allocate(count, flags); }
    PinnedBuffer(const PinnedBuffer&) = delete;
    PinnedBuffer& operator=(const PinnedBuffer&) = delete;
    /// Takes `o`'s memory; `o` is left empty.
    PinnedBuffer(PinnedBuffer&& o) noexcept { swap(o); }
    /// Frees this buffer's memory and takes `o`'s.
    PinnedBuffer& operator=(PinnedBuffer&& o) noexcept {
        if (this != &o) {
            release();
            swap(o);
        }
        return *this;
    }
    ~PinnedBuffer() { release(); }

    /// `count` elements of page-locked memory (cudaHostAlloc with `flags`,
    /// e.g. cudaHostAllocMapped), not initialised; the old contents are freed.
    void allocate(std::size_t count, unsigned flags = cudaHostAllocDefault) {
        release();
        if (count) HALOEX_CUDA_CHECK(cudaHostAlloc(&data_, count * sizeof(T), flags));
        size_ = count;
    }
    /// allocate(count) when it holds fewer (growing discards the contents).
    void reserve(std::size_t count) {
        if (count > size_) allocate(count);
    }
    T* data() { return data_; }                        ///< the host array (nullptr when empty)
    const T* data() const { return data_; }            ///< the host array (nullptr when empty)
    std::size_t size() const { return size_; }         ///< elements allocated
    T& operator[](std::size_t i) { return data_[i]; }  ///< element `i`

private:
    void release() noexcept {
        if (data_) cudaFreeHost(data_);
        data_ = nullptr;
        size_ = 0;
    }
    void swap(PinnedBuffer& o) noexcept {
        std::swap(data_, o.data_);
        std::swap(size_, o.size_);
    }
    T* data_ = nullptr;
    std::size_t size_ = 0;
};

/// A non-blocking CUDA stream, destroyed with the object.
class Stream {
public:
    /// priority: lower numbers are higher priority (cudaDeviceGetStreamPriorityRange).
    explicit Stream(int priority = 0) {
        HALOEX_CUDA_CHECK(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, priority));
    }
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;
    ~Stream() {
        if (stream_) cudaStreamDestroy(stream_);
    }
    cudaStream_t get() const { return stream_; }       ///< the stream
    operator cudaStream_t() const { return stream_; }  ///< the stream, where CUDA expects one

    /// The highest priority the device offers (for the non-local/halo stream).
    static int highestPriority() {
        int least = 0, greatest = 0;
        HALOEX_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
        return greatest;
    }

private:
    cudaStream_t stream_ = nullptr;
};

/// A CUDA event, destroyed with the object.
class Event {
public:
    /// With `timing`, an event that records timestamps (cudaEventElapsedTime);
    /// without, a cheaper one for ordering only.
    explicit Event(bool timing = false) {
        HALOEX_CUDA_CHECK(cudaEventCreateWithFlags(&event_, timing ? cudaEventDefault : cudaEventDisableTiming));
    }
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    ~Event() {
        if (event_) cudaEventDestroy(event_);
    }
    cudaEvent_t get() const { return event_; }       ///< the event
    operator cudaEvent_t() const { return event_; }  ///< the event, where CUDA expects one
    /// Records the event on `stream` (cudaEventRecord).
    void record(cudaStream_t stream) { HALOEX_CUDA_CHECK(cudaEventRecord(event_, stream)); }
    /// A timing mark: record() outside a stream capture; inside one, an
    /// external event node (a plain record would only become a dependency
    /// edge and never be timestamped), so each graph launch re-records it.
    void recordTimestamp(cudaStream_t stream) {
        cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
        HALOEX_CUDA_CHECK(cudaStreamIsCapturing(stream, &status));
        const unsigned flags =
            status == cudaStreamCaptureStatusActive ? cudaEventRecordExternal : cudaEventRecordDefault;
        HALOEX_CUDA_CHECK(cudaEventRecordWithFlags(event_, stream, flags));
    }
    /// Makes `stream` wait for this event (no host blocking).
    void waitOn(cudaStream_t stream) const { HALOEX_CUDA_CHECK(cudaStreamWaitEvent(stream, event_, 0)); }

private:
    cudaEvent_t event_ = nullptr;
};

/// Number of CUDA devices; 0 (not an error) when there is no driver or device.
inline int deviceCount() {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();  // clear the sticky "no device" state
        return 0;
    }
    return n;
}

}  // namespace haloex::cuda
