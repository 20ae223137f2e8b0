#include "haloex/core/error.hpp"

namespace haloex {

std::string_view toString(ErrorKind kind) {
    switch (kind) {
        case ErrorKind::InvalidInput: return "invalid input";
        case ErrorKind::Plan: return "plan";
        case ErrorKind::Runtime: return "runtime";
        case ErrorKind::Cuda: return "CUDA";
        case ErrorKind::Nccl: return "NCCL";
        case ErrorKind::Nvshmem: return "NVSHMEM";
        case ErrorKind::Timeout: return "timeout";
        case ErrorKind::Io: return "I/O";
        case ErrorKind::Internal: return "internal";
    }
    return "unknown";
}

void throwError(ErrorKind kind, const std::string& message) { throw Error(kind, message); }

}  // namespace haloex
