# Read by ctest before it runs any test (TEST_INCLUDE_FILES of every directory,
# tests/CMakeLists.txt): NVLink multicast off in ctest's own environment, which
# every test inherits, whatever environment ctest was started from. Never
# turn it on: NVLS can take a shared host's GPUs down.
set(ENV{NVSHMEM_DISABLE_NVLS} 1)
set(ENV{NCCL_NVLS_ENABLE} 0)
set(ENV{TORCH_SYMM_MEM_DISABLE_MULTICAST} 1)
