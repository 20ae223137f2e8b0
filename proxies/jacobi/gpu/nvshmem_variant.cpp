// The fused NVSHMEM kernel as a Variant (nvshmem_variant.hpp).
#include "nvshmem_variant.hpp"

#include "haloex/cuda/check.hpp"
#include "haloex/cuda/device_buffer.hpp"

namespace haloex::jacobi::gpu {
namespace {

class Nvshmem final : public Variant {
public:
    Nvshmem(const stencil::LocalStencil& s, runtime::World& world, const stencil::NvshmemJacobiOptions& options)
        : stream_(cuda::Stream::highestPriority()), impl_(stencil::makeNvshmemJacobi(world, s, options)) {}
    double* field(int parity) override { return impl_->field(parity); }
    void iterate(int parity, double* norm) override { impl_->iterate(parity, norm, stream_.get()); }
    void finish() override {
        const cudaError_t st = cudaStreamSynchronize(stream_);
        impl_->checkForFailure();  // a timeout explains an error better than the error
        HALOEX_CUDA_CHECK(st);
    }
    cudaStream_t stream() override { return stream_; }
    std::string path() const override { return impl_->pathSummary(); }
    std::vector<std::string> notes() const override { return impl_->describe(); }

private:
    cuda::Stream stream_;
    std::unique_ptr<stencil::NvshmemJacobi> impl_;
};

}  // namespace

std::unique_ptr<Variant> makeNvshmemVariant(const stencil::LocalStencil& stencil, runtime::World& world,
                                            const stencil::NvshmemJacobiOptions& options) {
    return std::make_unique<Nvshmem>(stencil, world, options);
}

}  // namespace haloex::jacobi::gpu
