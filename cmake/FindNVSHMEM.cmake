# Finds NVSHMEM: NVSHMEM_HOME (variable or environment) or the Python wheel
# nvidia-nvshmem-cu13 (python3 -c 'import nvidia.nvshmem', or installed by
# scripts/setup.sh into .deps/python). The wheel ships
# libnvshmem_host.so.3 (no unversioned link) and libnvshmem_device.a.
# Defines NVSHMEM::host, NVSHMEM::device, NVSHMEM_FOUND, NVSHMEM_HOME,
# NVSHMEM_LIBRARY_DIR and NVSHMEM_VERSION.
set(_nvshmem_hints)
foreach(_h IN ITEMS "${NVSHMEM_HOME}" "$ENV{NVSHMEM_HOME}" "${PROJECT_SOURCE_DIR}/.deps/python/nvidia/nvshmem")
  if(_h)
    list(APPEND _nvshmem_hints "${_h}")
  endif()
endforeach()
# The python3 on PATH (the one a user's `python3 -c 'import nvidia.nvshmem'` uses).
find_program(HALOEX_PYTHON3 NAMES python3)
if(HALOEX_PYTHON3)
  execute_process(
    COMMAND ${HALOEX_PYTHON3} -c "import nvidia.nvshmem as m; print(list(m.__path__)[0])"
    OUTPUT_VARIABLE _nvshmem_py OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _rc)
  if(_rc EQUAL 0 AND _nvshmem_py)
    list(APPEND _nvshmem_hints "${_nvshmem_py}")
  endif()
endif()
find_path(NVSHMEM_INCLUDE_DIR nvshmem.h HINTS ${_nvshmem_hints} PATH_SUFFIXES include NO_DEFAULT_PATH)
find_file(NVSHMEM_HOST_LIBRARY NAMES libnvshmem_host.so libnvshmem_host.so.3 HINTS ${_nvshmem_hints}
          PATH_SUFFIXES lib lib64 NO_DEFAULT_PATH)
find_file(NVSHMEM_DEVICE_LIBRARY NAMES libnvshmem_device.a HINTS ${_nvshmem_hints} PATH_SUFFIXES lib lib64
          NO_DEFAULT_PATH)
if(NVSHMEM_INCLUDE_DIR)
  get_filename_component(NVSHMEM_HOME "${NVSHMEM_INCLUDE_DIR}" DIRECTORY)
  set(_vfile "${NVSHMEM_INCLUDE_DIR}/non_abi/nvshmem_version.h")
  if(EXISTS "${_vfile}")
    file(STRINGS "${_vfile}" _v REGEX "#define NVSHMEM_VENDOR_(MAJOR|MINOR|PATCH)_VERSION ")
    string(REGEX MATCH "MAJOR_VERSION ([0-9]+)" _m "${_v}")
    set(_maj ${CMAKE_MATCH_1})
    string(REGEX MATCH "MINOR_VERSION ([0-9]+)" _m "${_v}")
    set(_min ${CMAKE_MATCH_1})
    string(REGEX MATCH "PATCH_VERSION ([0-9]+)" _m "${_v}")
    set(NVSHMEM_VERSION "${_maj}.${_min}.${CMAKE_MATCH_1}")
  endif()
endif()
if(NVSHMEM_HOST_LIBRARY)
  get_filename_component(NVSHMEM_LIBRARY_DIR "${NVSHMEM_HOST_LIBRARY}" DIRECTORY)
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(NVSHMEM REQUIRED_VARS NVSHMEM_HOST_LIBRARY NVSHMEM_DEVICE_LIBRARY
                                  NVSHMEM_INCLUDE_DIR VERSION_VAR NVSHMEM_VERSION)
if(NVSHMEM_FOUND AND NOT TARGET NVSHMEM::host)
  add_library(NVSHMEM::host SHARED IMPORTED)
  set_target_properties(NVSHMEM::host PROPERTIES IMPORTED_LOCATION "${NVSHMEM_HOST_LIBRARY}"
                        IMPORTED_SONAME "libnvshmem_host.so.3"
                        INTERFACE_INCLUDE_DIRECTORIES "${NVSHMEM_INCLUDE_DIR}")
  add_library(NVSHMEM::device STATIC IMPORTED)
  set_target_properties(NVSHMEM::device PROPERTIES IMPORTED_LOCATION "${NVSHMEM_DEVICE_LIBRARY}"
                        INTERFACE_INCLUDE_DIRECTORIES "${NVSHMEM_INCLUDE_DIR}")
endif()
