#include "haloex/detail/runtime/host_wait.hpp"

#include <cmath>
#include <cstdlib>
#include <fmt/format.h>

#include "haloex/core/error.hpp"
#include "haloex/detail/core/printable.hpp"
#include "haloex/detail/core/wait_limit.hpp"

namespace haloex::runtime {

double hostWaitTimeoutSeconds() {
    const char* text = std::getenv("HALOEX_HOST_WAIT_TIMEOUT");
    if (text == nullptr || *text == '\0') return kDefaultHostWaitTimeoutSeconds;
    char* end = nullptr;
    const double seconds = std::strtod(text, &end);
    if (end == text || *end != '\0' || !validWaitSeconds(seconds, true)) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("HALOEX_HOST_WAIT_TIMEOUT='{}': use a number of seconds >= 0 and at most {:g} (0: no "
                               "limit; default {})",
                               printable(text), kMaxWaitSeconds, kDefaultHostWaitTimeoutSeconds));
    }
    return seconds;
}

std::string hostWaitAdvice() {
    return "a peer rank stopped responding (stopped, hung, crashed without the launcher noticing, or far slower "
           "than this one); HALOEX_HOST_WAIT_TIMEOUT=<seconds> changes the limit (0: no limit)";
}

}  // namespace haloex::runtime
