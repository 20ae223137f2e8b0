// Links haloex's nvshmem transport and calls into it without a GPU: asked for
// host memory, the transport must refuse before it touches CUDA or NVSHMEM.
// That it runs at all shows that libhaloex_nvshmem.so and the NVSHMEM host
// library it needs were found by the loader (the install's RUNPATH).
#include <haloex/core/error.hpp>
#include <haloex/runtime/world.hpp>
#include <haloex/transport/nvshmem.hpp>

#include <cstdio>
#include <string>

int main() {
    using namespace haloex;
    transport::TransportOptions options;
    options.memorySpace = transport::MemorySpace::Host;
    try {
        transport::makeNvshmemTransport(runtime::singleRankWorld(), options);
    } catch (const Error& e) {
        const bool expected =
            e.kind() == ErrorKind::InvalidInput && std::string(e.what()).find("device memory") != std::string::npos;
        std::printf("nvshmem transport linked; host memory %s: %s\n", expected ? "refused as expected" : "FAILED",
                    e.what());
        return expected ? 0 : 1;
    }
    std::printf("FAILED: the nvshmem transport accepted host memory\n");
    return 1;
}
