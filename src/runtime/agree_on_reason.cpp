#include <cstdint>
#include <span>
#include <string>

#include "haloex/runtime/world.hpp"

namespace haloex::runtime {

std::string agreeOnReason(World& world, const std::string& mine) {
    const auto first =
        static_cast<int>(world.allReduceValue<std::int64_t>(mine.empty() ? world.size() : world.rank(), ReduceOp::Min));
    if (first == world.size()) return {};
    std::int64_t length = world.rank() == first ? static_cast<std::int64_t>(mine.size()) : 0;
    world.broadcastBytes(std::as_writable_bytes(std::span(&length, 1)), first);
    std::string text = world.rank() == first ? mine : std::string(static_cast<std::size_t>(length), '\0');
    world.broadcastBytes(std::as_writable_bytes(std::span(text.data(), text.size())), first);
    return text;
}

}  // namespace haloex::runtime
