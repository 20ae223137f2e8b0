#pragma once
// Text from a file, quoted in a message: control bytes (escape sequences
// could rewrite the user's terminal, a NUL or carriage return hides the rest)
// are shown as \xNN, and long text is cut with "...".
#include <cstddef>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace haloex {

inline std::string printable(std::string_view text, std::size_t maxLength = 80) {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (out.size() >= maxLength) {
            out += "...";
            break;
        }
        const auto c = static_cast<unsigned char>(text[i]);
        if (c < 0x20 || c == 0x7f) {
            out += fmt::format("\\x{:02x}", c);
        } else {
            out += static_cast<char>(c);
        }
    }
    return out;
}

}  // namespace haloex
