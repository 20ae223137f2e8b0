#pragma once
/// @file
/// Typed halo operations on structured-grid fields the USER owns (library
/// haloex_transports): the grid counterpart of halo/particle_halo.hpp, with
/// the same shape and the same rules (element types, memory, streams,
/// collectiveness: see there and docs/api.md).
///
/// A field holds plan.numLocal() elements in the grid plan's layout
/// (plan/grid_plan.hpp: x fastest, halo cells included around the interior).
///   gather(u)      interior -> halo cells of the neighbours, dimension by
///                  dimension, so edges and corners arrive by forwarding.
///                  Halo cells beyond a non-periodic edge are not filled by
///                  their own dimension: they keep what the caller put there
///                  (boundary values), which later dimensions forward into
///                  the neighbours' corner cells.
///   scatterAdd(u)  halo cells -> the interior cells they copy, added (pulses
///                  in reverse order): the transpose of gather, for
///                  accumulations written into halo cells (e.g. a stencil's
///                  adjoint or particle-to-grid deposits). Halo cells are not
///                  cleared; only interior cells are meaningful afterwards.
///
///   gatherPacked(u) gather, but the sends of the first batch (below) come
///                  from the send staging the caller filled (the pack hook):
///                  a caller whose own kernel computes the sent cells writes
///                  them there as it goes, and gather's pack kernel is skipped.
///   packSends(u)   gather's own pack of u into the bound staging: for slots
///                  the caller's kernel does not write (values that never
///                  change need it once), or to start from a full staging.
///
/// The pack hook. bindPackedSends<T>() (not collective; allocates once per
/// element size, in memorySpace()) returns PackedSends<T>: the staging and,
/// for each pulse of the first batch, where its sends go. Before each
/// gatherPacked<T>(u, stream), for every listed pulse p and k < p.count:
///     staging[p.offset + k] = u[plan().pulses[p.pulse].sendIndices[k]]
/// holding the value u holds there when gatherPacked runs. The first batch is
/// every pulse of a faces-only plan (GridSpec::edgesAndCorners = false); with
/// edges and corners it is the first dimension's stage-0 pulses, and the
/// later pulses, which forward what earlier ones delivered, are packed by
/// gatherPacked from u as gather does. Stream order: the writes of the
/// staging are ordered before the gatherPacked call on `stream` (enqueued on
/// it, or joined to it by an event) and after the previous gather of this
/// halo (any form, any stream) has been enqueued and ordered before them; on
/// the host, finished before the call. GridHalo never writes the staging:
/// slots keep what the caller last wrote, so values that never change (fixed
/// boundary values among the sends) may be written once. The staging stays
/// where it is for the GridHalo's life (binding the same size again returns
/// it); moving the GridHalo keeps it.
///
/// The transport serves only as the mechanism (its exchangeBlock); its own
/// particle plan plays no part, so any transport of any backend works -- a
/// device backend's transport for device-memory fields.
#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "haloex/halo/element.hpp"
#include "haloex/plan/grid_plan.hpp"
#include "haloex/transport/block_transport.hpp"

namespace haloex {

namespace halo_detail {
class PulseEngine;
}

/// Where a pulse of a packed gather's first batch takes its sends from.
struct PackedSendPulse {
    std::size_t pulse = 0;         ///< index into plan().pulses
    std::size_t offset = 0;        ///< its first element in the staging
    std::size_t count = 0;         ///< elements this rank sends in it (0: none)
    const int* indices = nullptr;  ///< its send indices in memorySpace() (count of them; null if none)
};

/// The pack hook's staging for elements of type T (see above).
template <class T>
struct PackedSends {
    T* staging = nullptr;                     ///< `elements` elements in memorySpace()
    std::size_t elements = 0;                 ///< the staging's size, in elements
    std::span<const PackedSendPulse> pulses;  ///< where each pulse of the first batch takes its sends from
};

/// gather and scatterAdd of structured-grid fields along a plan::GridHaloPlan
/// (see the file's description).
class GridHalo {
public:
    /// Not collective. Device backends upload the plan's index maps here.
    GridHalo(transport::BlockTransport& transport, const plan::GridHaloPlan& plan);
    ~GridHalo();
    GridHalo(GridHalo&&) noexcept;             ///< takes the other's plan, maps and staging
    GridHalo& operator=(GridHalo&&) noexcept;  ///< takes the other's plan, maps and staging
    GridHalo(const GridHalo&) = delete;
    GridHalo& operator=(const GridHalo&) = delete;

    const plan::GridHaloPlan& plan() const { return plan_; }  ///< the plan it was made with
    int numLocal() const { return plan_.numLocal(); }         ///< elements every field must hold
    transport::MemorySpace memorySpace() const;               ///< where the fields must live

    /// Interior cells -> the neighbours' halo cells (see the file's description).
    template <class T>
    void gather(T* field, transport::StreamHandle stream = nullptr) {
        gatherLayout(field, elementLayoutOf<T>(), stream);
    }
    /// Halo cells -> the interior cells they copy, added (see the file's description).
    template <class T>
    void scatterAdd(T* field, transport::StreamHandle stream = nullptr) {
        static_assert(ComponentWise<T>,
                      "scatterAdd adds component by component: T must be a halo scalar, a struct of x, y, z(, w) "
                      "or std::array of one, or specialise haloex::ElementComponents (haloex/halo/element.hpp)");
        scatterAddLayout(field, elementLayoutOf<T>(), stream);
    }

    /// The pack hook (see above).
    template <class T>
    PackedSends<T> bindPackedSends() {
        void* staging = bindPackedSendsLayout(elementLayoutOf<T>());
        return {static_cast<T*>(staging), packedSendElements(), packedPulses_};
    }
    /// gather, the first batch's sends taken from the staging bindPackedSends gave.
    template <class T>
    void gatherPacked(T* field, transport::StreamHandle stream = nullptr) {
        gatherPackedLayout(field, elementLayoutOf<T>(), stream);
    }
    /// gather's own pack of `field` into the staging bindPackedSends gave.
    template <class T>
    void packSends(const T* field, transport::StreamHandle stream = nullptr) {
        packSendsLayout(field, elementLayoutOf<T>(), stream);
    }
    /// The first batch's pulses, where a packed gather takes their sends from
    /// (the same for every element type; offsets and counts in elements).
    std::span<const PackedSendPulse> packedPulses() const { return packedPulses_; }
    /// The staging's size, in elements (the first batch's sends).
    std::size_t packedSendElements() const;

    // The type-erased forms the templates above call (`layout`: the element
    // type's ElementLayout), for element types known only at run time.
    /// gather<T> for elements described by `layout`.
    void gatherLayout(void* field, const ElementLayout& layout, transport::StreamHandle stream);
    /// scatterAdd<T> for elements described by `layout`.
    void scatterAddLayout(void* field, const ElementLayout& layout, transport::StreamHandle stream);
    /// bindPackedSends<T>: returns the staging of elements of layout.bytes bytes.
    void* bindPackedSendsLayout(const ElementLayout& layout);
    /// gatherPacked<T> for elements described by `layout`.
    void gatherPackedLayout(void* field, const ElementLayout& layout, transport::StreamHandle stream);
    /// packSends<T> for elements described by `layout`.
    void packSendsLayout(const void* field, const ElementLayout& layout, transport::StreamHandle stream);

private:
    transport::BlockTransport* transport_;
    plan::GridHaloPlan plan_;
    std::unique_ptr<halo_detail::PulseEngine> engine_;
    std::vector<PackedSendPulse> packedPulses_;
};

}  // namespace haloex
