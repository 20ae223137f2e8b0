#pragma once
// One exception type for the whole library. Messages say what went wrong,
// where, and what to do; the library never calls exit(), applications catch
// at the top and print.
#include <stdexcept>
#include <string>
#include <string_view>

namespace haloex {

enum class ErrorKind {
    InvalidInput,  // bad options, bad files, bad coordinates
    Plan,          // a decomposition the planner refuses
    Runtime,       // MPI/world failures, rank mismatch
    Cuda,
    Nccl,
    Nvshmem,
    Timeout,  // a device-side or host-side wait exceeded its limit
    Io,
    Internal,  // a broken invariant: a bug in haloex
};

std::string_view toString(ErrorKind kind);

class Error : public std::runtime_error {
public:
    Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
    ErrorKind kind() const noexcept { return kind_; }

private:
    ErrorKind kind_;
};

[[noreturn]] void throwError(ErrorKind kind, const std::string& message);

}  // namespace haloex

// Checks an invariant that only a bug can break.
#define HALOEX_ASSERT(cond, msg)                                                                          \
    do {                                                                                                  \
        if (!(cond))                                                                                      \
            ::haloex::throwError(::haloex::ErrorKind::Internal, std::string("internal error: ") + (msg) + \
                                                                    " (" #cond ") at " + __FILE__ + ":" + \
                                                                    std::to_string(__LINE__));            \
    } while (0)
