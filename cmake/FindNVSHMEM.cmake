# Finds NVSHMEM (headers, libnvshmem_host.so.3, libnvshmem_device.a).
#
# Where it looks, first match wins:
#   1. NVSHMEM_ROOT or NVSHMEM_HOME (CMake variable, else environment): the
#      user's override. When one is set, nothing else is searched, so a wrong
#      override fails loudly instead of silently finding another NVSHMEM.
#   2. HALOEX_NVSHMEM_HINTS, a list of NVSHMEM roots set by the caller:
#      haloex's own build passes the Python wheel (.deps/python or an
#      importable nvidia.nvshmem); the installed haloexConfig.cmake passes the
#      copy that `cmake --install` put under its prefix, or the NVSHMEM the
#      build used when that copy was switched off.
# Never the system's default paths, nor the calling project's source tree.
# The wheel ships libnvshmem_host.so.3 without an unversioned link.
#
# Defines NVSHMEM::host, NVSHMEM::device, NVSHMEM_FOUND, NVSHMEM_VERSION,
# NVSHMEM_INCLUDE_DIR, NVSHMEM_LIBRARY_DIR and NVSHMEM_PREFIX (the root found).
set(_nvshmem_roots)
foreach(_v IN ITEMS NVSHMEM_ROOT NVSHMEM_HOME)
  if(NOT _nvshmem_roots)
    if(DEFINED ${_v} AND NOT "${${_v}}" STREQUAL "")
      set(_nvshmem_roots "${${_v}}")
    elseif(NOT "$ENV{${_v}}" STREQUAL "")
      set(_nvshmem_roots "$ENV{${_v}}")
    endif()
  endif()
endforeach()
if(NOT _nvshmem_roots)
  set(_nvshmem_roots ${HALOEX_NVSHMEM_HINTS})
endif()

# NO_DEFAULT_PATH also turns off <Package>_ROOT and CMAKE_PREFIX_PATH: the list
# above is the whole search.
find_path(NVSHMEM_INCLUDE_DIR nvshmem.h HINTS ${_nvshmem_roots} PATH_SUFFIXES include NO_DEFAULT_PATH)
find_file(NVSHMEM_HOST_LIBRARY NAMES libnvshmem_host.so libnvshmem_host.so.3 HINTS ${_nvshmem_roots}
          PATH_SUFFIXES lib lib64 NO_DEFAULT_PATH)
find_file(NVSHMEM_DEVICE_LIBRARY NAMES libnvshmem_device.a HINTS ${_nvshmem_roots} PATH_SUFFIXES lib lib64
          NO_DEFAULT_PATH)
if(NVSHMEM_INCLUDE_DIR)
  get_filename_component(NVSHMEM_PREFIX "${NVSHMEM_INCLUDE_DIR}" DIRECTORY)
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
# One string: several roots would otherwise become several arguments.
string(JOIN ", " _nvshmem_searched ${_nvshmem_roots})
find_package_handle_standard_args(NVSHMEM REQUIRED_VARS NVSHMEM_HOST_LIBRARY NVSHMEM_DEVICE_LIBRARY
                                  NVSHMEM_INCLUDE_DIR VERSION_VAR NVSHMEM_VERSION
                                  REASON_FAILURE_MESSAGE "searched: ${_nvshmem_searched}")
if(NVSHMEM_FOUND AND NOT TARGET NVSHMEM::host)
  add_library(NVSHMEM::host SHARED IMPORTED)
  set_target_properties(NVSHMEM::host PROPERTIES IMPORTED_LOCATION "${NVSHMEM_HOST_LIBRARY}"
                        IMPORTED_SONAME "libnvshmem_host.so.3"
                        INTERFACE_INCLUDE_DIRECTORIES "${NVSHMEM_INCLUDE_DIR}")
  add_library(NVSHMEM::device STATIC IMPORTED)
  set_target_properties(NVSHMEM::device PROPERTIES IMPORTED_LOCATION "${NVSHMEM_DEVICE_LIBRARY}"
                        INTERFACE_INCLUDE_DIRECTORIES "${NVSHMEM_INCLUDE_DIR}")
endif()
