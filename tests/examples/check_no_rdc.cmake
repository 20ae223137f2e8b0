# Proves that a CUDA translation unit was compiled as whole-program device
# code: no relocatable device code (-rdc), hence no device link step and no
# NVSHMEM device library. Run by ctest (example_fused_stencil_no_rdc):
#   cmake -DOBJECTS=<objects> -DSEPARABLE=<target's CUDA_SEPARABLE_COMPILATION>
#         -DREADELF=<readelf> -DNM=<nm> -P check_no_rdc.cmake
# nvcc puts a relocatable fatbinary in section __nv_relfatbin and registers
# it through __cudaRegisterLinkedBinary_*; a whole-program object has
# .nv_fatbin and __cudaRegisterFatBinary.
if(SEPARABLE)
  message(FATAL_ERROR "CUDA_SEPARABLE_COMPILATION is '${SEPARABLE}' on the target: its kernels would need -rdc "
                      "and a device link")
endif()
set(_checked 0)
foreach(object IN LISTS OBJECTS)
  if(NOT object MATCHES "\\.cu\\.o(bj)?$")
    continue()
  endif()
  if(NOT EXISTS "${object}")
    message(FATAL_ERROR "${object} does not exist: build the target first")
  endif()
  execute_process(COMMAND ${READELF} -S -W ${object} OUTPUT_VARIABLE sections RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${READELF} -S ${object} failed (${rc})")
  endif()
  execute_process(COMMAND ${NM} ${object} OUTPUT_VARIABLE symbols RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NM} ${object} failed (${rc})")
  endif()
  if(sections MATCHES "__nv_relfatbin" OR symbols MATCHES "__cudaRegisterLinkedBinary")
    message(FATAL_ERROR "${object} holds relocatable device code (section __nv_relfatbin or "
                        "__cudaRegisterLinkedBinary): it was compiled with -rdc")
  endif()
  if(NOT sections MATCHES "\\.nv_fatbin" OR NOT symbols MATCHES "__cudaRegisterFatBinary")
    message(FATAL_ERROR "${object} has no whole-program fatbinary (.nv_fatbin, __cudaRegisterFatBinary): "
                        "is it a CUDA object?")
  endif()
  message(STATUS "${object}: whole-program device code (.nv_fatbin), no -rdc")
  math(EXPR _checked "${_checked} + 1")
endforeach()
if(_checked EQUAL 0)
  message(FATAL_ERROR "no CUDA object among: ${OBJECTS}")
endif()
message(STATUS "no relocatable device code in ${_checked} CUDA object(s)")
