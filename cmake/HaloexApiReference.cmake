# The API reference generated from the public headers (docs/reference.md):
# docs/Doxyfile.in configured into <build>/docs/Doxyfile; where Doxygen is
# found, `cmake --build <build> --target api_reference` writes
# <build>/docs/reference/html (not part of the default build). ctest
# api_reference (tests/CMakeLists.txt) checks that it has no warning.
configure_file(${PROJECT_SOURCE_DIR}/docs/Doxyfile.in ${PROJECT_BINARY_DIR}/docs/Doxyfile @ONLY)
find_program(HALOEX_DOXYGEN NAMES doxygen DOC "Doxygen, for the API reference (optional)")
if(HALOEX_DOXYGEN)
  add_custom_target(api_reference
    COMMAND ${HALOEX_DOXYGEN} ${PROJECT_BINARY_DIR}/docs/Doxyfile
    COMMENT "The API reference from the public headers: ${PROJECT_BINARY_DIR}/docs/reference/html/index.html"
    VERBATIM)
endif()
