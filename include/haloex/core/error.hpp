#pragma once
/// @file
/// One exception type for the whole library. Messages say what went wrong,
/// where, and what to do; the library never calls exit(), applications catch
/// at the top and print.
#include <stdexcept>
#include <string>
#include <string_view>

namespace haloex {

/// What kind of failure an Error reports.
enum class ErrorKind {
    InvalidInput,  ///< bad options, bad files, bad coordinates
    Plan,          ///< a decomposition the planner refuses
    Runtime,       ///< MPI/world failures, rank mismatch
    Cuda,          ///< a CUDA call failed
    Nccl,          ///< an NCCL call failed
    Nvshmem,       ///< an NVSHMEM call failed
    Timeout,       ///< a device-side or host-side wait exceeded its limit
    Io,            ///< a file could not be read or written
    Internal,      ///< a broken invariant: a bug in haloex
};

/// "invalid input", "plan", "runtime", ...: the kind in words.
std::string_view toString(ErrorKind kind);

/// The exception every haloex function throws: what() is the message, kind() its kind.
class Error : public std::runtime_error {
public:
    /// An error of `kind` saying `message`.
    Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
    /// What kind of failure this is.
    ErrorKind kind() const noexcept { return kind_; }

private:
    ErrorKind kind_;
};

/// Throws Error(kind, message).
[[noreturn]] void throwError(ErrorKind kind, const std::string& message);

}  // namespace haloex

/// Checks an invariant that only a bug can break: throws Error(Internal)
/// naming the condition, the file and the line when `cond` is false.
#define HALOEX_ASSERT(cond, msg)                                                                          \
    do {                                                                                                  \
        if (!(cond))                                                                                      \
            ::haloex::throwError(::haloex::ErrorKind::Internal, std::string("internal error: ") + (msg) + \
                                                                    " (" #cond ") at " + __FILE__ + ":" + \
                                                                    std::to_string(__LINE__));            \
    } while (0)
