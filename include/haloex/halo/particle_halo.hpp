#pragma once
/// @file
/// Typed halo operations on per-atom arrays the USER owns (library
/// haloex_transports), in the spirit of Cabana's Gather/Scatter: a halo object
/// is bound once to a transport and a particle plan, then applied
/// to any array of numLocal() elements laid out as the plan says -- home atoms
/// [0, numHome()), then each pulse's received atoms at its recvOffset.
///
///   gather(a)             owners -> ghosts: every pulse in order, so later
///                         pulses forward what earlier ones delivered; the
///                         ghost entries of `a` are overwritten, home entries
///                         are read only.
///   gather(x, PeriodicShift{box})
///                         the same, adding the pulse's periodic shift
///                         (shiftSign * box length along the pulse's
///                         dimension) to coordinate-like elements, exactly as
///                         the reference transport does.
///   scatterAdd(f)         ghosts -> owners: pulses in reverse order, each
///                         ghost entry added into the entry it was gathered
///                         from (forwarded ghosts first pass their sums back
///                         to the ghost they were forwarded from). Home entries
///                         end up with their own value plus every ghost copy's;
///                         ghost entries are not cleared (those forwarded on
///                         hold partial sums): only home entries are meaningful.
///
/// Element types: gather takes any trivially copyable T (no size cap);
/// scatterAdd and the shift need a component-wise T (halo/element.hpp).
/// Additions happen component by component, per pulse in plan order, so every
/// backend gives the reference backend's bits.
///
/// Memory and streams. `array` lives in the transport's memorySpace():
///   - host backends (reference, staged in host memory): plain loops; the call
///     completes before it returns; `stream` is ignored.
///   - device backends (staged, ipc, nccl, nvshmem): device pack/unpack kernels
///     and the transport's exchangeBlock, enqueued on `stream` (a
///     cudaStream_t). The results are there for work enqueued on `stream`
///     after the call; the caller must not change `array` before that work
///     runs. staged and ipc synchronise `stream` and wait for the peers on the
///     host once per pulse; nvshmem synchronises `stream` and reduces the
///     block size over the ranks once per pulse; nccl returns at once.
/// Every call is collective: all ranks make the same sequence of halo calls.
///
/// This is the generic path, one exchangeBlocks call per batch of pulses. For
/// an MD step's coordinates and forces CoordinateForceHalo
/// (halo/coordinate_force_halo.hpp) uses the backend's fast path (nvshmem's
/// fused kernels: no host involvement, graph capturable); this API is for
/// every other per-atom field.
#include <memory>

#include "haloex/halo/element.hpp"
#include "haloex/plan/box.hpp"
#include "haloex/plan/particle_plan.hpp"
#include "haloex/transport/block_transport.hpp"

namespace haloex {

/// gather's periodic-shift policy for coordinates (lengths in the array's unit).
struct PeriodicShift {
    plan::Box box;  ///< the periodic box; a pulse that crosses its edge adds its length
};

namespace halo_detail {
class PulseEngine;
}

/// gather and scatterAdd of per-particle arrays along a plan::ParticleHaloPlan
/// (see the file's description).
class ParticleHalo {
public:
    /// Binds to `transport` (which must outlive the halo) and `plan`. Not
    /// collective. Device backends upload the plan's index maps (host-built
    /// plans) or use the device maps of a GPU-built plan (kept alive by its
    /// builder until its next build).
    ParticleHalo(transport::BlockTransport& transport, const plan::ParticleHaloPlan& plan);
    ~ParticleHalo();
    ParticleHalo(ParticleHalo&&) noexcept;             ///< takes the other's plan and maps
    ParticleHalo& operator=(ParticleHalo&&) noexcept;  ///< takes the other's plan and maps
    ParticleHalo(const ParticleHalo&) = delete;
    ParticleHalo& operator=(const ParticleHalo&) = delete;

    /// After repartitioning: binds the new plan.
    void setPlan(const plan::ParticleHaloPlan& plan);

    const plan::ParticleHaloPlan& plan() const { return plan_; }  ///< the plan bound
    int numHome() const { return plan().numHome; }                ///< this rank's own particles
    int numLocal() const { return plan().numLocal; }              ///< elements every array must hold
    transport::MemorySpace memorySpace() const;                   ///< where the arrays must live

    /// Owners -> ghosts: every pulse in order (see the file's description).
    template <class T>
    void gather(T* array, transport::StreamHandle stream = nullptr) {
        gatherLayout(array, elementLayoutOf<T>(), nullptr, stream);
    }
    /// gather of coordinates, each copy shifted by the box where its pulse
    /// crosses the periodic edge.
    template <class T>
    void gather(T* array, const PeriodicShift& shift, transport::StreamHandle stream = nullptr) {
        static_assert(CoordinateLike<T>,
                      "the periodic shift needs coordinate-like elements (floating-point x, y, z; see "
                      "haloex/halo/element.hpp)");
        gatherLayout(array, elementLayoutOf<T>(), &shift.box, stream);
    }
    /// Ghosts -> owners: each ghost entry added into the entry it was gathered
    /// from (pulses in reverse order; see the file's description).
    template <class T>
    void scatterAdd(T* array, transport::StreamHandle stream = nullptr) {
        static_assert(ComponentWise<T>,
                      "scatterAdd adds component by component: T must be a halo scalar, a struct of x, y, z(, w) "
                      "or std::array of one, or specialise haloex::ElementComponents (haloex/halo/element.hpp)");
        scatterAddLayout(array, elementLayoutOf<T>(), stream);
    }

    /// gather for elements known only at run time (`layout`); `shiftBox`
    /// null: no shift.
    void gatherLayout(void* array, const ElementLayout& layout, const plan::Box* shiftBox,
                      transport::StreamHandle stream);
    /// scatterAdd for elements known only at run time (`layout`).
    void scatterAddLayout(void* array, const ElementLayout& layout, transport::StreamHandle stream);

private:
    transport::BlockTransport* transport_;
    plan::ParticleHaloPlan plan_;
    std::unique_ptr<halo_detail::PulseEngine> engine_;
};

}  // namespace haloex
