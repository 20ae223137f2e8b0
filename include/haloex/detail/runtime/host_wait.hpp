#pragma once
// How long a host-side exchange of a World (a barrier, a collective, a
// point-to-point message) may wait for its peers before the job is stopped
// with a diagnostic naming the rank, the operation and, where known, the peer
// -- instead of spinning forever when a rank was stopped (SIGSTOP), hangs or
// died without its launcher noticing.
//
// The limit is generous, because a healthy peer can be busy for a while
// between exchanges (rank 0 writing a checkpoint while the others wait, a
// first CUDA launch compiling kernels), and is read from the environment when
// a World is created: HALOEX_HOST_WAIT_TIMEOUT=<seconds>, 0 for no limit.
#include <string>

namespace haloex::runtime {

inline constexpr double kDefaultHostWaitTimeoutSeconds = 600.0;

// The limit in seconds (0: none). Throws InvalidInput for a value of
// HALOEX_HOST_WAIT_TIMEOUT that is not a finite number >= 0.
double hostWaitTimeoutSeconds();

// The end of a timeout message: what may have happened and how to change the limit.
std::string hostWaitAdvice();

}  // namespace haloex::runtime
