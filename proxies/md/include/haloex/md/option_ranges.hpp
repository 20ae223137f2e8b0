#pragma once
// The accepted range of every numeric haloex-md option, checked before any
// of them is used (resolveOptions calls this first): a value outside it, a
// NaN or an infinity is refused with InvalidInput naming the option, the
// value and the range, never replaced by a default. 0 keeps its documented
// "automatic" meaning where an option has one.
#include "haloex/md/options.hpp"

namespace haloex::md {

void requireOptionRanges(const MdOptions& options);

}  // namespace haloex::md
