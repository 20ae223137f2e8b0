# Where `cmake --install` puts the NVSHMEM this build uses, and the RUNPATH
# entries that find it there (included by HaloexDependencies once NVSHMEM is
# found, before the targets exist).
#
# NVSHMEM usually comes from the wheel that scripts/setup.sh puts into the
# checkout's .deps, which an installed package must not rely on. With
# HALOEX_INSTALL_NVSHMEM (default ON) the install copies, into
# <libdir>/haloex/nvshmem/{lib,include}:
#   libnvshmem_host.so.3 and its bootstrap and transport plugins: NVSHMEM
#     dlopen()s them by bare name from libnvshmem_host, whose RPATH is
#     $ORIGIN, so they must sit beside it;
#   libnvshmem_device.a and the headers: a project that compiles its own
#     NVSHMEM device code (haloex/detail/nvshmem/bootstrap.hpp) must use the device
#     library of the very version whose host library gets loaded.
# A private directory, so a prefix such as /usr/local never gets a second
# libnvshmem_host.so.3 on the default library path.
set(HALOEX_NVSHMEM_BUNDLE_DIR "")
set(HALOEX_NVSHMEM_BUNDLE_LIBS "")
if(HALOEX_INSTALL_NVSHMEM AND NVSHMEM_INCLUDE_DIR MATCHES "^/usr(/local)?/include/?$")
  # Headers among the system's: copying the directory would copy them all.
  message(STATUS "NVSHMEM headers are in ${NVSHMEM_INCLUDE_DIR}: the installed package uses NVSHMEM where it is")
elseif(HALOEX_INSTALL_NVSHMEM)
  set(HALOEX_NVSHMEM_BUNDLE_DIR ${CMAKE_INSTALL_LIBDIR}/haloex/nvshmem)
  file(GLOB HALOEX_NVSHMEM_BUNDLE_LIBS LIST_DIRECTORIES false
       "${NVSHMEM_LIBRARY_DIR}/libnvshmem_host.so*" "${NVSHMEM_LIBRARY_DIR}/nvshmem_bootstrap_*.so*"
       "${NVSHMEM_LIBRARY_DIR}/nvshmem_transport_*.so*")
  list(APPEND HALOEX_NVSHMEM_BUNDLE_LIBS "${NVSHMEM_DEVICE_LIBRARY}")
endif()
if(NOT HALOEX_NVSHMEM_BUNDLE_DIR)
  foreach(tree IN ITEMS "${PROJECT_SOURCE_DIR}" "${PROJECT_BINARY_DIR}")
    string(FIND "${NVSHMEM_PREFIX}/" "${tree}/" at)
    if(at EQUAL 0)
      message(WARNING "NVSHMEM (${NVSHMEM_PREFIX}) lies inside ${tree} and HALOEX_INSTALL_NVSHMEM is OFF: "
                      "the installed haloex::nvshmem breaks when that tree is moved or deleted")
    endif()
  endforeach()
endif()

# haloex_nvshmem_install_rpath(<var> <install directory, relative to the prefix>):
# the RUNPATH entry of a binary installed there that loads libnvshmem_host.
function(haloex_nvshmem_install_rpath var dir)
  if(HALOEX_NVSHMEM_BUNDLE_DIR)
    file(RELATIVE_PATH rel "/${dir}" "/${HALOEX_NVSHMEM_BUNDLE_DIR}/lib")
    set(${var} "$ORIGIN/${rel}" PARENT_SCOPE)
  else()
    set(${var} "${NVSHMEM_LIBRARY_DIR}" PARENT_SCOPE)
  endif()
endfunction()
