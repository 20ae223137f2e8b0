# Conformance of the typed halo operations on user arrays (haloex/halo/,
# included from tests/gpu/CMakeLists.txt): gather and scatterAdd over every
# backend this build has against the reference backend, bitwise. Ranks are
# threads of the test process (label gpu; the staged backend in host memory
# runs without a GPU, the device cases skip with the reason), or MPI ranks in
# the *_np2/_np4/_np8 variants (labels "gpu;mpi", through mpi_gpu_launch;
# nvshmem runs only there).
if(NOT TARGET haloex_transports)
  return()
endif()
add_executable(test_particle_halo_device test_transport_main.cpp test_particle_halo_device.cpp)
target_link_libraries(test_particle_halo_device PRIVATE haloex_transports GTest::gtest haloex_warnings)
target_include_directories(test_particle_halo_device PRIVATE ${PROJECT_SOURCE_DIR}/tests/mpi)
set_target_properties(test_particle_halo_device PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin/tests)
if(TARGET haloex_mpi_test_main)
  target_link_libraries(test_particle_halo_device PRIVATE haloex_mpi_test_main)
  target_compile_definitions(test_particle_halo_device PRIVATE HALOEX_TEST_WITH_MPI=1)
  haloex_add_mpi_test(NAME test_particle_halo_device RANKS 2 4 8 LABELS "gpu;mpi" GPU TIMEOUT 900)
endif()
gtest_discover_tests(test_particle_halo_device PROPERTIES LABELS gpu DISCOVERY_TIMEOUT 60)
