# Installs the libraries, headers and a package config, so that another
# project can find_package(haloex) and link haloex::haloex (and the optional
# haloex::md, haloex::mpi, haloex::cuda, haloex::nccl, haloex::nvshmem).
include(CMakePackageConfigHelpers)

configure_file(${PROJECT_SOURCE_DIR}/cmake/config.hpp.in ${PROJECT_BINARY_DIR}/include/haloex/config.hpp @ONLY)

install(TARGETS ${HALOEX_INSTALL_TARGETS}
        EXPORT haloexTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/haloex DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_BINARY_DIR}/include/haloex/config.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/haloex)
install(EXPORT haloexTargets NAMESPACE haloex:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/haloex)

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/haloexConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/haloexConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/haloex)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/haloexConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/haloexConfig.cmake ${PROJECT_BINARY_DIR}/haloexConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/FindNCCL.cmake ${PROJECT_SOURCE_DIR}/cmake/FindNVSHMEM.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/haloex)
