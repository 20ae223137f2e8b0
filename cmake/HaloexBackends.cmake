# The backends' libraries and the files that stand in for them: each backend
# folder (src/transport/<backend>, and src/cuda for what the registry asks of
# CUDA) registers its library with haloex_backend_part(), built or not;
# src/halo/CMakeLists.txt links the libraries this build has into the
# registry's library (haloex_transports) and compiles the *_unavailable.cpp
# of the others, with HALOEX_<PART>_MISSING saying why. No source asks the
# preprocessor what the build has.

# haloex_backend_part(<PART> <target> <stub source>)
function(haloex_backend_part part target stub)
  set_property(GLOBAL APPEND PROPERTY HALOEX_BACKEND_PARTS ${part})
  set_property(GLOBAL PROPERTY HALOEX_PART_${part}_TARGET ${target})
  set_property(GLOBAL PROPERTY HALOEX_PART_${part}_STUB ${stub})
endfunction()

# Why each device part is missing from a build that lacks it, as the
# registry says it (HALOEX_<PART>_MISSING in its *_unavailable.cpp).
set(HALOEX_CUDA_MISSING "this build has no CUDA: at configure time: ${HALOEX_CUDA_REASON}; reconfigure with a CUDA toolkit")
set(HALOEX_IPC_MISSING "${HALOEX_CUDA_MISSING}")
if(NOT HALOEX_HAVE_CUDA)
  set(HALOEX_NCCL_MISSING "${HALOEX_CUDA_MISSING}")
else()
  set(HALOEX_NCCL_MISSING "this build has no NCCL: at configure time: ${HALOEX_NCCL_REASON}; reconfigure with NCCL_HOME set")
endif()
set(HALOEX_NVSHMEM_MISSING "this build has no NVSHMEM: at configure time: ${HALOEX_NVSHMEM_REASON}")
set(HALOEX_NCCL_DEVICE_MISSING "this build has no NCCL 2.28 device API: at configure time: ${HALOEX_NCCL_DEVICE_REASON}")
