#include "haloex/detail/core/environment_switch.hpp"

#include <cstdlib>
#include <fmt/format.h>
#include <string>
#include <string_view>

#include "haloex/core/error.hpp"
#include "haloex/detail/core/printable.hpp"

namespace haloex::detail {

bool environmentSwitch(const char* name, bool fallback, const char* what, const char* whenUnset) {
    const char* text = std::getenv(name);
    if (text == nullptr || *text == '\0') return fallback;
    const std::string_view value(text);
    if (value == "0") return false;
    if (value == "1") return true;
    const std::string unset = whenUnset != nullptr ? std::string(whenUnset) : std::string(fallback ? "1" : "0");
    throwError(ErrorKind::InvalidInput,
               fmt::format("{}='{}': use 0 or 1 ({}; unset: {}), or unset it", name, printable(value), what, unset));
}

}  // namespace haloex::detail
