// Asks an installed haloex's registry for the nvshmem backend without a GPU:
// it must be in this library (libhaloex_nvshmem.so answers), and asked for
// host memory it must refuse before it touches CUDA or NVSHMEM. That it runs
// at all shows that libhaloex_nvshmem.so and the NVSHMEM host library it
// needs were found by the loader (the install's RUNPATH).
#include <haloex/core/error.hpp>
#include <haloex/runtime/world.hpp>
#include <haloex/transport/registry.hpp>

#include <cstdio>
#include <string>

int main() {
    using namespace haloex;
    if (const std::string why = transport::unavailableReason(transport::Backend::Nvshmem); !why.empty()) {
        std::printf("FAILED: the nvshmem backend is not in this library: %s\n", why.c_str());
        return 1;
    }
    transport::TransportOptions options;
    options.memorySpace = transport::MemorySpace::Host;
    try {
        transport::makeTransport(transport::Backend::Nvshmem, runtime::singleRankWorld(), options);
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
