#include "core/nvidia_spellings.hpp"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <string_view>
#include <utility>

#include "haloex/core/error.hpp"

namespace haloex::jacobi {
namespace {

// The options NVIDIA's examples share with haloex-jacobi (same meaning).
constexpr std::array<std::string_view, 5> kShared = {"niter", "nccheck", "nx", "ny", "csv"};
// Options of NVIDIA's examples that haloex-jacobi has no counterpart for, and why.
constexpr std::array<std::pair<std::string_view, std::string_view>, 2> kWithout = {{
    {"use_hp_streams", "haloex-jacobi has no high-priority stream option: its boundary work is one fused kernel or "
                       "the halo API's own stream order"},
    {"skip_single_gpu", "haloex-jacobi always checks against the one-device computation (its speedup and the "
                        "bitwise check need it)"},
}};

bool isWord(std::string_view name) {
    if (name.size() < 2 || std::isalpha(static_cast<unsigned char>(name[0])) == 0) return false;
    for (char c : name) {
        if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '_') return false;
    }
    return true;
}

}  // namespace

std::vector<std::string> mapNvidiaSpellings(const std::vector<std::string>& args) {
    std::vector<std::string> out;
    out.reserve(args.size());
    for (const std::string& arg : args) {
        if (arg.size() < 3 || arg[0] != '-' || arg[1] == '-') {
            out.push_back(arg);
            continue;
        }
        const std::string_view body = std::string_view(arg).substr(1);
        const std::string_view name = body.substr(0, body.find('='));
        if (!isWord(name)) {
            out.push_back(arg);
            continue;
        }
        bool mapped = false;
        for (std::string_view shared : kShared) {
            if (name == shared) {
                std::string doubled = "-";
                doubled += arg;
                out.push_back(std::move(doubled));
                mapped = true;
            }
        }
        if (mapped) continue;
        for (const auto& [without, why] : kWithout) {
            if (name == without) {
                throwError(ErrorKind::InvalidInput,
                           fmt::format("-{} (an option of NVIDIA's Jacobi examples): {}", without, why));
            }
        }
        throwError(ErrorKind::InvalidInput,
                   fmt::format("{}: not an option. haloex-jacobi's options are double-dash (--{}? see --help); of "
                               "NVIDIA's single-dash spellings it accepts -niter, -nccheck, -nx, -ny and -csv",
                               arg, name));
    }
    return out;
}

}  // namespace haloex::jacobi
