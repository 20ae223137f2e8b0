# The two faces of the halo library's registry and what each says about a
# backend it does not have.
#
# haloex_halo (component halo) is the registry and the halo API built for the
# CPU: every device backend answers "not here" through its *_unavailable.cpp.
# haloex_transports (component transports) is the same code over every
# backend library this build has, with the *_unavailable.cpp of those it has
# not. Both define the registry, so a program links one of them: the
# HALOEX_BACKENDS property (cpu-only or all) must agree over everything a
# target links, and CMake stops at generate time when it does not (linking
# haloex::halo with haloex::transports or a device library).

# haloex_backends_of(<target> <cpu-only|all>)
function(haloex_backends_of target value)
  set_property(TARGET ${target} PROPERTY INTERFACE_HALOEX_BACKENDS ${value})
  set_property(TARGET ${target} APPEND PROPERTY COMPATIBLE_INTERFACE_STRING HALOEX_BACKENDS)
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
# A part this build has, asked of the CPU-only face.
set(HALOEX_CPU_ONLY_MISSING
    "haloex::halo is the CPU-only part of haloex; this build's device backends are in haloex::transports (link that instead)")

# haloex_backend_part(<PART> <target> <stub source>): a library that holds
# part of the registry's device backends, and the file that stands in for it
# where it is not built (its folder's *_unavailable.cpp). Called by each
# folder whether or not its target is built; src/halo/CMakeLists.txt links the
# target or compiles the stub, with HALOEX_<PART>_MISSING saying why.
function(haloex_backend_part part target stub)
  set_property(GLOBAL APPEND PROPERTY HALOEX_BACKEND_PARTS ${part})
  set_property(GLOBAL PROPERTY HALOEX_PART_${part}_TARGET ${target})
  set_property(GLOBAL PROPERTY HALOEX_PART_${part}_STUB ${stub})
endfunction()
