#pragma once
// How a kernel launch is ordered after the work before it on its stream
// (cuda::launchOrdered in dependent_launch.cuh); plain C++ for host code that
// chooses it.

namespace haloex::cuda {

// How a kernel is ordered after the work before it on its stream.
enum class StreamOrder {
    // launchDependent: may be scheduled during the previous kernel's tail.
    Programmatic,
    // A plain launch, for the first kernel after a wait on another stream's
    // launch-completion event: launched as a programmatic dependent it
    // started at that kernel's end in a kernel trace of captured steps, not
    // once its blocks had begun (haloex-md's forward-first step,
    // docs/md-engine.md).
    Full,
};

}  // namespace haloex::cuda
