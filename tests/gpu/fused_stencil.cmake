# examples/fused_stencil (a user's kernel on the device halo view), built here
# and run (included from tests/gpu/CMakeLists.txt). Every run compares the
# field bitwise with the host's single-process sweep. Labels:
#   gpu      ranks as threads of one process (CUDA IPC provider, one GPU, no
#            MPS needed); exit 77 = skipped, with the reason, without a GPU
#   gpu;mpi  ranks as processes under mpiexec through mpi_gpu_launch: one GPU
#            per rank, or several ranks on one GPU under MPS; skipped with the
#            reason otherwise
#   unit     the build-level proof that the example's kernels are compiled
#            without -rdc (no device link, no NVSHMEM device library)
# The nccl-device backend (NCCL 2.28's device API) runs one process per GPU:
# 1 process (its own neighbour) and 1 thread rank run anywhere with a GPU;
# 2 processes skip with the reason where the GPUs are fewer (NCCL refuses two
# ranks on one GPU, MPS or not); 2 thread ranks are refused with the reason.
if(NOT TARGET haloex_transports OR NOT TARGET haloex_cuda OR NOT TARGET haloex_mpi)
  return()
endif()
add_subdirectory(${PROJECT_SOURCE_DIR}/examples/fused_stencil ${CMAKE_BINARY_DIR}/examples/fused_stencil)
set_target_properties(fused_stencil PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin/examples)
target_link_libraries(fused_stencil PRIVATE haloex_warnings)

find_program(HALOEX_READELF NAMES readelf)
find_program(HALOEX_NM NAMES nm)
if(HALOEX_READELF AND HALOEX_NM)
  add_test(NAME example_fused_stencil_no_rdc
           COMMAND ${CMAKE_COMMAND} "-DOBJECTS=$<TARGET_OBJECTS:fused_stencil>"
                   "-DSEPARABLE=$<TARGET_PROPERTY:fused_stencil,CUDA_SEPARABLE_COMPILATION>"
                   -DREADELF=${HALOEX_READELF} -DNM=${HALOEX_NM} -P ${CMAKE_CURRENT_SOURCE_DIR}/check_no_rdc.cmake)
  set_tests_properties(example_fused_stencil_no_rdc PROPERTIES LABELS unit TIMEOUT 60
                       PASS_REGULAR_EXPRESSION "no relocatable device code in [1-9][0-9]* CUDA object")
  # The check itself: it refuses an object compiled with -rdc.
  add_library(haloex_rdc_probe OBJECT rdc_probe.cu)
  set_target_properties(haloex_rdc_probe PROPERTIES CUDA_SEPARABLE_COMPILATION ON)
  add_test(NAME check_no_rdc_refuses_rdc
           COMMAND ${CMAKE_COMMAND} "-DOBJECTS=$<TARGET_OBJECTS:haloex_rdc_probe>" -DSEPARABLE=OFF
                   -DREADELF=${HALOEX_READELF} -DNM=${HALOEX_NM} -P ${CMAKE_CURRENT_SOURCE_DIR}/check_no_rdc.cmake)
  set_tests_properties(check_no_rdc_refuses_rdc PROPERTIES LABELS unit TIMEOUT 60
                       PASS_REGULAR_EXPRESSION "holds relocatable device code")
endif()

set(_match "fused stencil matches the host reference bitwise")
string(CONCAT _report "waited [0-9.]+ s in block 0 thread 0 for rank [01] on receive link [01] "
       "\\(tag [01]\\): signal expected >= [0-9]+, seen [0-9]+")
foreach(_threads IN ITEMS 1 2 4)
  add_test(NAME example_fused_stencil_threads_np${_threads}
           COMMAND fused_stencil --threads ${_threads} --backend ipc --steps 300)
  set_tests_properties(example_fused_stencil_threads_np${_threads} PROPERTIES LABELS gpu TIMEOUT 300
                       SKIP_RETURN_CODE 77 PASS_REGULAR_EXPRESSION "${_match}")
endforeach()
if(TARGET haloex_nccl AND HALOEX_HAVE_NCCL_DEVICE)
  # One rank is refused with the reason (NCCL 2.28 gives a one-rank
  # communicator no symmetric memory); skipped only without a GPU.
  add_test(NAME example_fused_stencil_threads_np1_nccl_device_refused
           COMMAND fused_stencil --threads 1 --backend nccl-device --steps 10)
  set_tests_properties(example_fused_stencil_threads_np1_nccl_device_refused PROPERTIES LABELS gpu TIMEOUT 120
    SKIP_REGULAR_EXPRESSION "SKIPPED: the fused stencil needs a GPU"
    PASS_REGULAR_EXPRESSION "a communicator of one rank no symmetric memory")
  # Passes on the refusal's reason (exit 77); skipped only without a GPU.
  add_test(NAME example_fused_stencil_threads_np2_nccl_device_refused
           COMMAND fused_stencil --threads 2 --backend nccl-device --steps 10)
  set_tests_properties(example_fused_stencil_threads_np2_nccl_device_refused PROPERTIES LABELS gpu TIMEOUT 120
    SKIP_REGULAR_EXPRESSION "SKIPPED: the fused stencil needs a GPU"
    PASS_REGULAR_EXPRESSION "these 2 ranks are threads of one process; use the ipc backend")
endif()
# A rank that stops signalling: the neighbour's timed wait reports who waited
# on whom and the values seen, instead of hanging.
add_test(NAME example_fused_stencil_wait_timeout
         COMMAND fused_stencil --threads 2 --backend ipc --steps 20 --withhold-from 6 --wait-timeout 1)
set_tests_properties(example_fused_stencil_wait_timeout PROPERTIES LABELS gpu TIMEOUT 120
  SKIP_REGULAR_EXPRESSION "SKIPPED: "
  PASS_REGULAR_EXPRESSION "${_report}")

if(TARGET mpi_gpu_launch)
  set(_runs ipc:2 ipc:4)
  if(TARGET haloex_nvshmem)
    list(APPEND _runs nvshmem:2 nvshmem:4)
  endif()
  if(TARGET haloex_nccl AND HALOEX_HAVE_NCCL_DEVICE)
    list(APPEND _runs nccl-device:2)  # one rank: refused, above
  endif()
  foreach(_run IN LISTS _runs)
    string(REPLACE ":" ";" _run "${_run}")
    list(GET _run 0 _backend)
    list(GET _run 1 _ranks)
    string(REPLACE "-" "_" _label ${_backend})
    set(_name example_fused_stencil_${_label}_np${_ranks})
    add_test(NAME ${_name}
             COMMAND $<TARGET_FILE:mpi_gpu_launch> ${_ranks} ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${_ranks}
                     --oversubscribe --bind-to none ${MPIEXEC_PREFLAGS} $<TARGET_FILE:fused_stencil>
                     ${MPIEXEC_POSTFLAGS} --backend ${_backend} --steps 300 --wait-timeout 20)
    # Skipped (77, "SKIPPED: " and the reason) where the backend cannot run here.
    set_tests_properties(${_name} PROPERTIES LABELS "gpu;mpi" PROCESSORS ${_ranks} TIMEOUT 300
                         ENVIRONMENT "${HALOEX_MPI_TEST_ENV}" SKIP_RETURN_CODE 77
                         SKIP_REGULAR_EXPRESSION "SKIPPED: " PASS_REGULAR_EXPRESSION "${_match}")
  endforeach()
  # The timed wait's report across processes: the watchdog ends the job with it.
  add_test(NAME example_fused_stencil_ipc_np2_wait_timeout
           COMMAND $<TARGET_FILE:mpi_gpu_launch> 2 ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2
                   --oversubscribe --bind-to none ${MPIEXEC_PREFLAGS} $<TARGET_FILE:fused_stencil>
                   ${MPIEXEC_POSTFLAGS} --backend ipc --steps 20 --withhold-from 6 --wait-timeout 1)
  set_tests_properties(example_fused_stencil_ipc_np2_wait_timeout PROPERTIES LABELS "gpu;mpi" PROCESSORS 2 TIMEOUT 120
    ENVIRONMENT "${HALOEX_MPI_TEST_ENV}" SKIP_REGULAR_EXPRESSION "SKIPPED: "
    PASS_REGULAR_EXPRESSION "${_report}")
endif()
