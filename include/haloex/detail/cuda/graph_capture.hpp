#pragma once
// Capturing a stream's work into a CUDA graph and making it executable: one
// place for the MD proxy's step graphs, the pair search's build graph and
// the cell order's graph. Internal.
#include <cuda_runtime.h>

#include "haloex/cuda/check.hpp"

namespace haloex::cuda {

// Whether work on `stream` can be captured: the legacy and per-thread
// default streams cannot.
inline bool capturableStream(cudaStream_t stream) {
    return stream != nullptr && stream != cudaStreamLegacy && stream != cudaStreamPerThread;
}

// The graph of what `enqueue()` enqueues on `stream` (thread-local capture).
// When enqueue throws, the capture is ended (the stream stays usable) and the
// exception goes on.
template <class Enqueue>
cudaGraph_t captureGraph(cudaStream_t stream, Enqueue&& enqueue) {
    cudaGraph_t graph = nullptr;
    HALOEX_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    try {
        enqueue();
    } catch (...) {
        cudaStreamEndCapture(stream, &graph);
        if (graph != nullptr) cudaGraphDestroy(graph);
        throw;
    }
    HALOEX_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    return graph;
}

// `graph` made executable in `exec`: an existing `exec` updated in place
// where CUDA accepts it (the same kernels with new sizes and pointers), else
// instantiated anew with `flags`. Takes `graph` (destroyed here). True when
// updated.
inline bool updateOrInstantiate(cudaGraphExec_t& exec, cudaGraph_t graph, unsigned long long flags) {
    bool updated = false;
    if (exec != nullptr) {
        cudaGraphExecUpdateResultInfo info{};
        updated = cudaGraphExecUpdate(exec, graph, &info) == cudaSuccess;
        if (!updated) {
            cudaGetLastError();  // a refused update is not an error: instantiate anew
            const cudaError_t destroyed = cudaGraphExecDestroy(exec);
            exec = nullptr;
            if (destroyed != cudaSuccess) cudaGraphDestroy(graph);
            HALOEX_CUDA_CHECK(destroyed);
        }
    }
    const cudaError_t instantiated = updated ? cudaSuccess : cudaGraphInstantiate(&exec, graph, flags);
    const cudaError_t destroyed = cudaGraphDestroy(graph);
    HALOEX_CUDA_CHECK(instantiated);
    HALOEX_CUDA_CHECK(destroyed);
    return updated;
}

}  // namespace haloex::cuda
