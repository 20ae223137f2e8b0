// The fused kernel as a Variant (fused_variant.hpp).
#include "fused_variant.hpp"

#include "haloex/cuda/check.hpp"
#include "haloex/cuda/device_buffer.hpp"

namespace haloex::jacobi::gpu {
namespace {

class Fused final : public Variant {
public:
    Fused(const stencil::LocalStencil& s, runtime::World& world, const stencil::FusedJacobiOptions& options)
        : stream_(cuda::Stream::highestPriority()), impl_(stencil::makeFusedJacobi(world, s, options)) {}
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
    std::unique_ptr<stencil::FusedJacobi> impl_;
};

}  // namespace

std::unique_ptr<Variant> makeFusedVariant(const stencil::LocalStencil& stencil, runtime::World& world,
                                          const stencil::FusedJacobiOptions& options) {
    return std::make_unique<Fused>(stencil, world, options);
}

}  // namespace haloex::jacobi::gpu
