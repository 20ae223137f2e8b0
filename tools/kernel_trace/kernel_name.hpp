#pragma once
// The name haloex-kernel-trace gives a kernel (kernel_trace.cpp): demangled,
// without return type or parameters. Header-only and CUPTI-free, so that the
// CPU tests check it (tests/tools/kernel_trace).
#include <cxxabi.h>

#include <cstdlib>
#include <string>
#include <string_view>

namespace haloex::kernel_trace {

// "ns::(anonymous namespace)::kernel<3>" from a mangled name: without the
// return type and the parameter list. nvcc prefixes kernels of internal
// linkage with "__nv_static_<n>__<hash>_<file>_<hash>_<n>_": demangled from
// the "_Z" after it.
inline std::string kernelName(const char* mangled) {
    if (mangled == nullptr) return "?";
    std::string symbol = mangled;
    if (symbol.rfind("__nv_static_", 0) == 0) {
        if (const auto z = symbol.find("__Z"); z != std::string::npos) symbol.erase(0, z + 1);
    }
    int status = 0;
    char* plain = abi::__cxa_demangle(symbol.c_str(), nullptr, nullptr, &status);
    std::string name = status == 0 && plain != nullptr ? plain : mangled;
    std::free(plain);
    if (name.rfind("void ", 0) == 0) name.erase(0, 5);  // a function template's return type
    // Cut at the first '(' outside template brackets that does not open
    // "(anonymous namespace)".
    static constexpr std::string_view kAnonymous = "(anonymous namespace)";
    int depth = 0;
    for (std::size_t i = 0; i < name.size(); ++i) {
        if (name.compare(i, kAnonymous.size(), kAnonymous) == 0) {
            i += kAnonymous.size() - 1;
            continue;
        }
        if (name[i] == '<') ++depth;
        if (name[i] == '>') --depth;
        if (name[i] == '(' && depth == 0 && i > 0) return name.substr(0, i);
    }
    return name;
}

}  // namespace haloex::kernel_trace
