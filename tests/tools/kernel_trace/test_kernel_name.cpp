// haloex-kernel-trace's kernel names (tools/kernel_trace/kernel_name.hpp), on
// symbols as this build's nvcc emits them: the tracer's first GPU run named
// most kernels "haloex::md::gpu::detail::" (cut at "(anonymous namespace)")
// and left nvcc's internal-linkage names mangled.
#include <gtest/gtest.h>

#include "kernel_name.hpp"

using haloex::kernel_trace::kernelName;

TEST(KernelName, KeepsAnonymousNamespacesAndTemplateArgumentsWithoutReturnTypeOrParameters) {
    // nonbondedKernel<false, true, false, true> of proxies/md/cuda/nonbonded.cu (ptxas's entry name).
    EXPECT_EQ(kernelName("_ZN6haloex2md3gpu6detail45_GLOBAL__N__20a099c7_12_nonbonded_cu_ce417c3515nonbondedKernelILb0"
                         "ELb1ELb0ELb1EEEvNS2_12KernelParamsEPKNS1_12ClusterEntryEiPKNS1_11ClusterPairEPK6float4PSC_"
                         "PdNS3_9PruneArgsE"),
              "haloex::md::gpu::detail::(anonymous namespace)::nonbondedKernel<false, true, false, true>");
}

TEST(KernelName, DemanglesNvccInternalLinkageNames) {
    // fusedForward<Vec3<float>, NvshmemPeers> of src/transport/nvshmem/fused_kernels.cu (cuobjdump -symbols).
    EXPECT_EQ(kernelName("__nv_static_43__1b467135_16_fused_kernels_cu_9f9cf565_6185__ZN6haloex14nvshmem_detail12fused"
                         "ForwardINS_4Vec3IfEENS0_54_GLOBAL__N__1b467135_16_fused_kernels_cu_9f9cf565_618512NvshmemPeer"
                         "sEEEvNS0_11FusedArgsOfIT_EE"),
              "haloex::nvshmem_detail::fusedForward<haloex::Vec3<float>, haloex::nvshmem_detail::(anonymous "
              "namespace)::NvshmemPeers>");
}

TEST(KernelName, PlainFunctionsAndWhatCannotBeDemangled) {
    EXPECT_EQ(kernelName("_ZN6haloex9particles6detail10wrapKernelEPfi"), "haloex::particles::detail::wrapKernel");
    EXPECT_EQ(kernelName("plain_c_kernel"), "plain_c_kernel");
    EXPECT_EQ(kernelName(nullptr), "?");
}
