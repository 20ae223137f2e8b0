# Installs the halo library -- its libraries (src/), its headers
# (include/haloex) and a package config with components -- so that another
# project can find_package(haloex [COMPONENTS ...]) with nothing but
# CMAKE_PREFIX_PATH, also after this build and its checkout are gone. The
# proxies (proxies/: MD, Jacobi) and the tools are not part of the installed
# API: their libraries and headers stay in the build (their executables are
# installed under bin/ by their own CMakeLists).
#
# One export set per component (lib/cmake/haloex/haloex-<component>-targets.cmake);
# haloexConfig.cmake loads the requested ones and finds only what they need:
#   component   target(s)                        needs
#   plan        haloex::haloex                   fmt, Threads
#   mpi         haloex::mpi                      plan, MPI (C++)
#   launch      haloex::launch                   plan, and mpi in a build with MPI
#   cuda        haloex::cuda, ipc, peer          plan, CUDAToolkit
#   particles   haloex::particles                plan, CUDAToolkit (device migration, device plan builder)
#   nccl        haloex::nccl, nccl_device        cuda, NCCL
#   nvshmem     haloex::nvshmem                  plan, CUDAToolkit, NVSHMEM
#   halo        haloex::halo                     plan (the registry and the halo API for the CPU)
#   transports  haloex::transports               plan and the backend libraries built (cuda, nccl, nvshmem)
# Without COMPONENTS every component this build has is loaded.
include(CMakePackageConfigHelpers)

configure_file(${PROJECT_SOURCE_DIR}/cmake/config.hpp.in ${PROJECT_BINARY_DIR}/include/haloex/config.hpp @ONLY)

set(HALOEX_CMAKE_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/haloex)
set(_haloex_component_targets
    plan:haloex plan:haloex_warnings mpi:haloex_mpi launch:haloex_launch cuda:haloex_cuda cuda:haloex_ipc
    cuda:haloex_peer particles:haloex_particles nccl:haloex_nccl nccl:haloex_nccl_device nvshmem:haloex_nvshmem
    halo:haloex_halo transports:haloex_transports)
set(HALOEX_COMPONENTS)
foreach(pair IN LISTS _haloex_component_targets)
  string(REPLACE ":" ";" pair "${pair}")
  list(GET pair 0 component)
  list(GET pair 1 target)
  if(NOT TARGET ${target})
    continue()
  endif()
  install(TARGETS ${target}
          EXPORT haloex-${component}-targets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
          RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  list(APPEND HALOEX_COMPONENTS ${component})
endforeach()
list(REMOVE_DUPLICATES HALOEX_COMPONENTS)
foreach(component IN LISTS HALOEX_COMPONENTS)
  install(EXPORT haloex-${component}-targets NAMESPACE haloex:: DESTINATION ${HALOEX_CMAKE_INSTALL_DIR})
endforeach()
# Every library target of the halo library (src/ appends each to
# HALOEX_INSTALL_TARGETS; the proxies' and tools' targets are not there) must
# belong to a component (a new layer needs a line above).
foreach(target IN LISTS HALOEX_INSTALL_TARGETS)
  if(NOT ";${_haloex_component_targets};" MATCHES ":${target};")
    message(FATAL_ERROR "library ${target} has no install component: add it in cmake/HaloexInstall.cmake")
  endif()
endforeach()

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/haloex DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_BINARY_DIR}/include/haloex/config.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/haloex)

# NVSHMEM under the prefix (HaloexNvshmemBundle.cmake decides what and where).
if(HALOEX_NVSHMEM_BUNDLE_DIR)
  install(FILES ${HALOEX_NVSHMEM_BUNDLE_LIBS} DESTINATION ${HALOEX_NVSHMEM_BUNDLE_DIR}/lib)
  install(DIRECTORY "${NVSHMEM_INCLUDE_DIR}/" DESTINATION ${HALOEX_NVSHMEM_BUNDLE_DIR}/include)
endif()

# What the config needs to know about this build. Outside the tree, only what
# cannot vanish with it: the NVSHMEM the build used is recorded only when it
# was not copied under the prefix (HALOEX_INSTALL_NVSHMEM=OFF).
set(HALOEX_CONFIG_NVSHMEM_HINT "")
if(HALOEX_HAVE_NVSHMEM AND NOT HALOEX_NVSHMEM_BUNDLE_DIR)
  set(HALOEX_CONFIG_NVSHMEM_HINT "${NVSHMEM_PREFIX}")
endif()
string(REGEX MATCH "^[0-9]+" HALOEX_NVSHMEM_VERSION_MAJOR "${NVSHMEM_VERSION}")
set(HALOEX_CONFIG_NCCL_HINT "")
if(HALOEX_HAVE_NCCL)
  get_filename_component(HALOEX_CONFIG_NCCL_HINT "${NCCL_INCLUDE_DIR}" DIRECTORY)
endif()
# Without CUDA, haloex::transports is an interface over haloex::halo.
get_property(HALOEX_TRANSPORTS_OVER_HALO GLOBAL PROPERTY HALOEX_TRANSPORTS_OVER_HALO)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/haloexConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/haloexConfig.cmake
                              INSTALL_DESTINATION ${HALOEX_CMAKE_INSTALL_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/haloexConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/haloexConfig.cmake ${PROJECT_BINARY_DIR}/haloexConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/FindNCCL.cmake ${PROJECT_SOURCE_DIR}/cmake/FindNVSHMEM.cmake
        DESTINATION ${HALOEX_CMAKE_INSTALL_DIR})
