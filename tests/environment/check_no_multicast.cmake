# Fails unless this process's environment switches NVLink multicast off.
foreach(setting IN ITEMS NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1)
  string(REPLACE "=" ";" setting "${setting}")
  list(GET setting 0 name)
  list(GET setting 1 want)
  if(NOT "$ENV{${name}}" STREQUAL "${want}")
    message(FATAL_ERROR "${name}='$ENV{${name}}' in a test's environment (expected ${want}): "
                        "NVLink multicast would be allowed")
  endif()
endforeach()
message(STATUS "NVLink multicast off: NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1")
