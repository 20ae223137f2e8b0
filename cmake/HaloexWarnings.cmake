# Warning flags for host C++ code (CUDA device code gets nvcc's defaults).
# Installed with the plan component (static libraries name it in their link
# interface): cmake/HaloexInstall.cmake.
add_library(haloex_warnings INTERFACE)
target_compile_options(haloex_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast -Wcast-align
                            -Woverloaded-virtual -Wnull-dereference -Wimplicit-fallthrough>
  $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<BOOL:${HALOEX_WARNINGS_AS_ERRORS}>>:-Werror>)
