// The halo plan built on the GPU (device_plan_builder.hpp): the
// orchestration, mirroring plan::ParticlePlanBuilder step by step; the
// kernels are in particle_kernels.cu.
#include "haloex/particles/device_plan_builder.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <fmt/format.h>
#include <span>

#include "haloex/core/error.hpp"
#include "neighbour_values.hpp"
#include "particle_kernels.hpp"

namespace haloex::particles {
namespace {

using namespace detail;

int alignUp(int n, int alignment) { return (n + alignment - 1) / alignment * alignment; }

// Grows `buffer` to `count` elements keeping the first `keep`.
template <class T>
void growKeeping(cuda::DeviceBuffer<T>& buffer, std::size_t count, std::size_t keep, cudaStream_t stream) {
    if (count <= buffer.capacity()) {
        buffer.resize(std::max(buffer.size(), count));
        return;
    }
    cuda::DeviceBuffer<T> grown(count);
    if (keep > 0) {
        HALOEX_CUDA_CHECK(
            cudaMemcpyAsync(grown.data(), buffer.data(), keep * sizeof(T), cudaMemcpyDeviceToDevice, stream));
    }
    // The old array may still be read by queued work.
    HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
    buffer = std::move(grown);
}

}  // namespace

const Vec3f* DevicePlanBuilder::localPositions() const { return positions_.data(); }
const std::uint8_t* DevicePlanBuilder::localImages() const { return images_.data(); }
const plan::ZoneMask* DevicePlanBuilder::localZoneMasks() const { return masks_.data(); }
const void* DevicePlanBuilder::localField(int k) const { return fields_.at(static_cast<std::size_t>(k)).data(); }

void DevicePlanBuilder::reserveLocal(int atoms, int keep, cudaStream_t stream) {
    if (atoms <= capacity_) return;
    const int capacity = static_cast<int>(std::ceil(atoms * 1.25)) + 64;
    const auto c = static_cast<std::size_t>(capacity), k = static_cast<std::size_t>(keep);
    growKeeping(positions_, c, k, stream);
    growKeeping(images_, c, k, stream);
    growKeeping(masks_, c, k, stream);
    for (std::size_t f = 0; f < fields_.size(); ++f) {
        growKeeping(fields_[f], c * fieldBytes_[f], k * fieldBytes_[f], stream);
    }
    capacity_ = capacity;
}

void DevicePlanBuilder::reserveIndices(std::size_t entries, std::size_t keep, cudaStream_t stream) {
    if (entries <= indices_.capacity()) return;
    growKeeping(indices_, entries + entries / 4 + 64, keep, stream);
}

const plan::ParticleHaloPlan& DevicePlanBuilder::build(const plan::Decomposition& decomposition,
                                                       const Vec3f* homePositions, int numHome,
                                                       std::span<const DeviceField> carried, int alignment,
                                                       runtime::World& world, transport::BlockTransport& transport,
                                                       cudaStream_t stream) {
    const plan::RankGrid& grid = decomposition.grid();
    plan::requireGridMatchesRanks(grid, world.size());
    const int rank = world.rank();
    PartClock clock(parts_);
    if (alignment < 1) {
        throwError(ErrorKind::InvalidInput, fmt::format("receive alignment {} must be at least 1 atom", alignment));
    }
    const auto& order = decomposition.pulseOrder();
    const int numPulses = static_cast<int>(order.size());
    if (numPulses > kMaxSourcePulses) {
        throwError(ErrorKind::Plan, fmt::format("the decomposition has {} pulses; the device plan builder supports "
                                                "at most {}",
                                                numPulses, kMaxSourcePulses));
    }
    // The carried fields decide the local arrays' layout.
    std::vector<std::size_t> bytes;
    for (const DeviceField& f : carried) bytes.push_back(f.elementBytes);
    if (bytes != fieldBytes_) {
        fieldBytes_ = bytes;
        fields_.clear();
        fields_.resize(bytes.size());
        positions_ = {};
        images_ = {};
        masks_ = {};
        capacity_ = 0;
    }

    plan_ = plan::ParticleHaloPlan{};
    plan_.rank = rank;
    plan_.coord = grid.coordOf(rank);
    plan_.alignment = alignment;
    plan_.numHome = numHome;

    // Home atoms first: positions, no image, zone 0, their carried values;
    // with no pulse also the padding that ends the local atoms (as
    // ParticlePlanBuilder::finish). One kernel for all of it.
    const int homeEnd = numPulses == 0 ? alignUp(numHome, alignment) : numHome;
    reserveLocal(std::max(homeEnd, 1), 0, stream);
    for (std::size_t first = 0; first == 0 || first < carried.size(); first += kFieldCopies) {
        FieldCopies prefix{};
        for (std::size_t f = first; f < carried.size() && prefix.count < kFieldCopies; ++f, ++prefix.count) {
            prefix.in[prefix.count] = carried[f].data;
            prefix.out[prefix.count] = fields_[f].data();
            prefix.bytes[prefix.count] = static_cast<int>(fieldBytes_[f]);
        }
        writeHomePrefix(homePositions, numHome, homeEnd, first == 0, positions_.data(), images_.data(), masks_.data(),
                        prefix, stream);
    }
    int size = homeEnd;  // local atoms so far
    clock.mark("home");
    const auto pad = [&](int upTo) {
        if (upTo <= size) return;
        reserveLocal(upTo, size, stream);
        // The first kFieldCopies fields zeroed by the padding's kernel, any others by a memset each.
        FieldCopies zeroed{};
        for (std::size_t f = 0; f < fields_.size(); ++f) {
            if (zeroed.count < kFieldCopies) {
                zeroed.out[zeroed.count] = fields_[f].data();
                zeroed.bytes[zeroed.count] = static_cast<int>(fieldBytes_[f]);
                ++zeroed.count;
                continue;
            }
            HALOEX_CUDA_CHECK(cudaMemsetAsync(fields_[f].data() + static_cast<std::size_t>(size) * fieldBytes_[f], 0,
                                              static_cast<std::size_t>(upTo - size) * fieldBytes_[f], stream));
        }
        fillPadding(size, upTo, positions_.data(), images_.data(), masks_.data(), zeroed, stream);
        size = upTo;
    };
    // A block carries positions, images, zone masks, then each field.
    const auto blockBytes = [&](int count) {
        const auto n = static_cast<std::size_t>(count);
        std::size_t total = alignedSection(n * sizeof(Vec3f)) + 2 * alignedSection(n);
        for (std::size_t b : fieldBytes_) total += alignedSection(n * b);
        return total;
    };

    counters_.resize(kPlanCounters);
    countersHost_.reserve(kPlanCounters);
    std::vector<std::size_t> mapOffset(static_cast<std::size_t>(numPulses) + 1, 0);
    const auto& L = decomposition.box().length;
    for (int p = 0; p < numPulses; ++p) {
        plan::Pulse pulse;
        pulse.id = p;
        pulse.dim = order[p].dim;
        pulse.stage = order[p].stage;
        pulse.direction = plan::Direction::Down;
        pulse.sendRank = grid.neighbour(rank, pulse.dim, -1);
        pulse.recvRank = grid.neighbour(rank, pulse.dim, +1);
        pulse.shiftSign = plan_.coord[pulse.dim] == 0 ? 1 : 0;
        const int d = pulse.dim;

        // The candidates ParticlePlanBuilder::selectSend takes: everything so
        // far, or for forwarding what the previous pulse delivered.
        int first = 0, last = size;
        if (pulse.stage > 0) {
            const plan::Pulse& previous = plan_.pulses.back();
            first = previous.recvOffset;
            last = previous.recvOffset + previous.recvCount;
        }
        const std::size_t offset = mapOffset[p];
        reserveIndices(offset + static_cast<std::size_t>(std::max(last - first, 1)), offset, stream);
        int* map = indices_.data() + offset;
        SourceSlots slots{};
        slots.count = p;
        for (int q = 0; q < p; ++q) {
            slots.offset[q] = plan_.pulses[q].recvOffset;
            slots.size[q] = plan_.pulses[q].recvCount;
        }
        const HaloSelection selection{positions_.data(),
                                      images_.data(),
                                      masks_.data(),
                                      {L[0], L[1], L[2]},
                                      plan::sendRuleOf(decomposition, rank, d)};
        selectHaloCandidates(selection, first, last - first, numHome, slots, map, counters_.data(), cubTemp_, stream);
        HALOEX_CUDA_CHECK(
            cudaMemcpyAsync(countersHost_.data(), counters_.data(), counters_.bytes(), cudaMemcpyDeviceToHost, stream));
        HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
        const int sendCount = countersHost_[kSelected];
        pulse.deviceSendCount = sendCount;
        pulse.numIndependent = countersHost_[kIndependent];
        int attributed = pulse.numIndependent;
        for (int q = 0; q < p; ++q) {
            attributed += countersHost_[kFirstSource + q];
            if (countersHost_[kFirstSource + q] > 0) pulse.waitsForward.push_back(q);
        }
        HALOEX_ASSERT(attributed == sendCount, "every selected atom is home or arrived through an earlier pulse");
        mapOffset[p + 1] = offset + static_cast<std::size_t>(sendCount);
        clock.mark("select");

        // The receiver places the slot and learns the count, the sender where
        // its atoms will land (the slot's place does not depend on the
        // count), and every rank the largest block: one collective, after
        // the synchronisation above (the blocks' call then makes none of
        // its own). Then the atoms travel.
        pad(alignUp(size, alignment));
        pulse.recvOffset = size;
        std::array<ValueExchange, 2> values{
            {{sendCount, pulse.sendRank, pulse.recvRank, 0}, {pulse.recvOffset, pulse.recvRank, pulse.sendRank, -1}}};
        const std::size_t sendBytes = blockBytes(sendCount);
        const auto agreedBlockBytes =
            static_cast<std::size_t>(exchangeValuesAgreeing(world, values, static_cast<std::int64_t>(sendBytes)));
        pulse.recvCount = static_cast<int>(values[0].received);
        pulse.remoteRecvOffset = static_cast<int>(values[1].received);
        pulse.recvCapacity = alignUp(pulse.recvCount, alignment);
        clock.mark("counts");
        reserveLocal(pulse.recvOffset + pulse.recvCapacity, size, stream);

        const std::size_t recvBytes = blockBytes(pulse.recvCount);
        if (sendBlock_.capacity() < sendBytes || recvBlock_.capacity() < recvBytes) {
            HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));  // queued puts may read the old blocks
            sendBlock_.reserve(std::max<std::size_t>(sendBytes, 16));
            recvBlock_.reserve(std::max<std::size_t>(recvBytes, 16));
        }
        std::byte* out = sendBlock_.data();
        auto* outX = reinterpret_cast<Vec3f*>(out);
        auto* outImage = reinterpret_cast<std::uint8_t*>(out + alignedSection(sendCount * sizeof(Vec3f)));
        auto* outMask = outImage + alignedSection(static_cast<std::size_t>(sendCount));
        packHaloRecords(map, sendCount, positions_.data(), images_.data(), masks_.data(),
                        static_cast<std::uint8_t>(pulse.shiftSign != 0 ? 1u << d : 0u),
                        static_cast<std::uint8_t>(1u << d), outX, outImage, outMask, stream);
        std::byte* section =
            reinterpret_cast<std::byte*>(outMask) + alignedSection(static_cast<std::size_t>(sendCount));
        FieldCopyBatch packFields;
        for (std::size_t f = 0; f < fields_.size(); ++f) {
            packFields.add(fields_[f].data(), section, fieldBytes_[f]);
            section += alignedSection(static_cast<std::size_t>(sendCount) * fieldBytes_[f]);
        }
        packFields.gather(map, sendCount, stream);
        const transport::BlockExchange block{sendBlock_.data(), sendBytes, pulse.sendRank,
                                             recvBlock_.data(), recvBytes, pulse.recvRank};
        const void* landed = nullptr;
        transport.exchangeAgreedBlocksInPlace(std::span(&block, 1), std::span(&landed, 1), agreedBlockBytes, stream);
        // What arrived, every section into its local array by one kernel,
        // read where the transport left it (no copy out of its staging).
        const auto n = static_cast<std::size_t>(pulse.recvCount);
        const auto* in = static_cast<const std::byte*>(landed);
        const auto at = static_cast<std::size_t>(pulse.recvOffset);
        FieldCopyBatch unpack;
        const auto arrived = [&](void* localArray, std::size_t elementBytes) {
            unpack.add(in, static_cast<std::byte*>(localArray) + at * elementBytes, elementBytes);
            in += alignedSection(n * elementBytes);
        };
        arrived(positions_.data(), sizeof(Vec3f));
        arrived(images_.data(), 1);
        arrived(masks_.data(), 1);
        for (std::size_t f = 0; f < fields_.size(); ++f) arrived(fields_[f].data(), fieldBytes_[f]);
        unpack.gather(nullptr, pulse.recvCount, stream);
        size = pulse.recvOffset + pulse.recvCount;
        pad(pulse.recvOffset + pulse.recvCapacity);
        plan_.pulses.push_back(std::move(pulse));
        clock.mark("blocks");
    }
    plan_.numLocal = size;

    for (const plan::Pulse& pulse : plan_.pulses) {
        for (int q : pulse.waitsForward) plan_.pulses[static_cast<std::size_t>(q)].waitsReverse.push_back(pulse.id);
    }
    // The index maps and masks stay where they are until the next build.
    for (int p = 0; p < numPulses; ++p) plan_.pulses[p].deviceSendIndices = indices_.data() + mapOffset[p];
    plan_.deviceZoneMask = masks_.data();
    if (numPulses > 0) {
        HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
        clock.mark("synchronise");
    }
    return plan_;
}

}  // namespace haloex::particles
