# Finds NCCL: NCCL_HOME (variable or environment), the CUDA toolkit, the
# roots in HALOEX_NCCL_HINTS (the installed haloexConfig.cmake passes the NCCL
# the build used), or the Python wheel nvidia-nccl-cu13.
# Defines NCCL::nccl, NCCL_FOUND, NCCL_VERSION.
set(_nccl_hints)
foreach(_h IN ITEMS "${NCCL_HOME}" "$ENV{NCCL_HOME}" "${CUDAToolkit_LIBRARY_ROOT}" "${CUDAToolkit_TARGET_DIR}"
                    ${HALOEX_NCCL_HINTS})
  if(_h)
    list(APPEND _nccl_hints "${_h}")
  endif()
endforeach()
# The python3 on PATH (the one a user's `python3 -c 'import nvidia.nccl'` uses).
find_program(HALOEX_PYTHON3 NAMES python3)
if(HALOEX_PYTHON3)
  execute_process(
    COMMAND ${HALOEX_PYTHON3} -c "import nvidia.nccl as m; print(list(m.__path__)[0])"
    OUTPUT_VARIABLE _nccl_py OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _rc)
  if(_rc EQUAL 0 AND _nccl_py)
    list(APPEND _nccl_hints "${_nccl_py}")
  endif()
endif()
find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${_nccl_hints} ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include)
find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2 HINTS ${_nccl_hints} ${CUDAToolkit_LIBRARY_DIR}
             PATH_SUFFIXES lib lib64)
if(NCCL_INCLUDE_DIR AND EXISTS "${NCCL_INCLUDE_DIR}/nccl.h")
  file(STRINGS "${NCCL_INCLUDE_DIR}/nccl.h" _v REGEX "#define NCCL_(MAJOR|MINOR|PATCH) ")
  string(REGEX MATCH "NCCL_MAJOR ([0-9]+)" _m "${_v}")
  set(_maj ${CMAKE_MATCH_1})
  string(REGEX MATCH "NCCL_MINOR ([0-9]+)" _m "${_v}")
  set(_min ${CMAKE_MATCH_1})
  string(REGEX MATCH "NCCL_PATCH ([0-9]+)" _m "${_v}")
  set(NCCL_VERSION "${_maj}.${_min}.${CMAKE_MATCH_1}")
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(NCCL REQUIRED_VARS NCCL_LIBRARY NCCL_INCLUDE_DIR VERSION_VAR NCCL_VERSION)
if(NCCL_FOUND AND NOT TARGET NCCL::nccl)
  add_library(NCCL::nccl SHARED IMPORTED)
  set_target_properties(NCCL::nccl PROPERTIES IMPORTED_LOCATION "${NCCL_LIBRARY}"
                        INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
endif()
