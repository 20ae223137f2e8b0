# haloex-jacobi and haloex-commbench under mpiexec (included from
# tests/gpu/CMakeLists.txt). The GPU runs compare every transport with the
# one-GPU reference (bitwise) and exit 77 -- reported as skipped -- with the
# reason printed when no GPU is visible; several ranks share a GPU where
# there are fewer GPUs than ranks (start MPS for speed). The cpu-transport and
# bad-input runs need no GPU (label mpi).
if(NOT TARGET haloex-jacobi)
  return()
endif()

set(HALOEX_JACOBI_TEST_ENV ${HALOEX_MPI_TEST_ENV})

# haloex_jacobi_mpi_test(<name> <exe target> <ranks> <labels> <args...>)
function(haloex_jacobi_mpi_test name target ranks labels)
  add_test(NAME ${name}
           COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${ranks} --oversubscribe --bind-to none ${MPIEXEC_PREFLAGS}
                   $<TARGET_FILE:${target}> ${MPIEXEC_POSTFLAGS} ${ARGN})
  set_tests_properties(${name} PROPERTIES LABELS "${labels}" PROCESSORS ${ranks} TIMEOUT 600
                       ENVIRONMENT "${HALOEX_JACOBI_TEST_ENV}" SKIP_RETURN_CODE 77)
endfunction()

# --- GPU: every transport against the one-GPU reference ----------------------
set(_small --nx 96 --ny 64 --niter 60 --warmup 3 --allow-shared-gpus)
haloex_jacobi_mpi_test(jacobi_gpu_np1_periodic haloex-jacobi 1 gpu ${_small} --transport all --boundary periodic)
haloex_jacobi_mpi_test(jacobi_gpu_np1_fixed haloex-jacobi 1 gpu ${_small} --transport all --boundary fixed)
foreach(boundary IN ITEMS periodic fixed)
  haloex_jacobi_mpi_test(jacobi_gpu_np2_row_${boundary} haloex-jacobi 2 "gpu;mpi" ${_small} --decomp row
                         --boundary ${boundary} --transport all)
  haloex_jacobi_mpi_test(jacobi_gpu_np2_columns_${boundary} haloex-jacobi 2 "gpu;mpi" ${_small} --decomp 2x1
                         --boundary ${boundary} --transport all)
  haloex_jacobi_mpi_test(jacobi_gpu_np4_2d_${boundary} haloex-jacobi 4 "gpu;mpi" ${_small} --decomp 2x2
                         --boundary ${boundary} --transport all)
  haloex_jacobi_mpi_test(jacobi_gpu_np4_row_${boundary} haloex-jacobi 4 "gpu;mpi" ${_small} --decomp row
                         --boundary ${boundary} --transport all)
  # The put-with-signal path (strided x faces go through receive slots).
  haloex_jacobi_mpi_test(jacobi_nvshmem_put_np4_2d_${boundary} haloex-jacobi 4 "gpu;mpi" ${_small} --decomp 2x2
                         --boundary ${boundary} --transport nvshmem --nvshmem-path put)
endforeach()
# Many iterations with a norm check every 25 (host syncs between fused kernels),
# and a grid too small for one tile per block (1-cell blocks).
haloex_jacobi_mpi_test(jacobi_gpu_np2_nccheck haloex-jacobi 2 "gpu;mpi" --nx 256 --ny 128 --niter 1000 --nccheck 25
                       --allow-shared-gpus --transport all --repeat 2)
haloex_jacobi_mpi_test(jacobi_gpu_np4_tiny_blocks haloex-jacobi 4 "gpu;mpi" --nx 2 --ny 2 --niter 20 --decomp 2x2
                       --allow-shared-gpus --transport all)
# A withheld signal must end in a time-limited wait's diagnostic, not a hang
# (a test hook: only in builds with HALOEX_TEST_HOOKS).
if(HALOEX_TEST_HOOKS)
  haloex_jacobi_mpi_test(jacobi_nvshmem_wait_timeout_np2 haloex-jacobi 2 "gpu;mpi" --nx 64 --ny 64 --niter 20
                         --allow-shared-gpus --transport nvshmem --wait-timeout 2)
  set_tests_properties(jacobi_nvshmem_wait_timeout_np2 PROPERTIES
    ENVIRONMENT "${HALOEX_JACOBI_TEST_ENV};HALOEX_TEST_WITHHOLD_SIGNAL=1:0"
    PASS_REGULAR_EXPRESSION "fused Jacobi kernel waited [0-9.]+ s for the halo line of pulse"
    SKIP_REGULAR_EXPRESSION "SKIPPED: no transport could run here")
endif()

# --- CPU: the cpu transport and bad input (run anywhere) ---------------------
haloex_jacobi_mpi_test(jacobi_cpu_np2_row haloex-jacobi 2 mpi --nx 48 --ny 36 --niter 25 --transport cpu)
haloex_jacobi_mpi_test(jacobi_cpu_np4_2d_fixed haloex-jacobi 4 mpi --nx 48 --ny 36 --niter 25 --transport cpu
                       --decomp 2d --boundary fixed)
haloex_jacobi_mpi_test(jacobi_bad_not_divisible_np3 haloex-jacobi 3 mpi --nx 100 --ny 64 --decomp 3x1
                       --transport cpu)
set_tests_properties(jacobi_bad_not_divisible_np3 PROPERTIES
  PASS_REGULAR_EXPRESSION "--nx 100 is not divisible by the 3 ranks along x")
haloex_jacobi_mpi_test(jacobi_bad_zero_iterations haloex-jacobi 1 mpi --niter 0 --transport cpu)
set_tests_properties(jacobi_bad_zero_iterations PROPERTIES PASS_REGULAR_EXPRESSION "--niter 0: at least one iteration")
haloex_jacobi_mpi_test(jacobi_bad_too_many_ranks_np4 haloex-jacobi 4 mpi --nx 2 --ny 64 --decomp 4x1 --transport cpu)
set_tests_properties(jacobi_bad_too_many_ranks_np4 PROPERTIES
  PASS_REGULAR_EXPRESSION "too many ranks for the grid: 4 ranks along x but only 2 columns")
haloex_jacobi_mpi_test(jacobi_bad_grid_np3 haloex-jacobi 3 mpi --decomp 2x2 --transport cpu)
set_tests_properties(jacobi_bad_grid_np3 PROPERTIES
  PASS_REGULAR_EXPRESSION "process grid 2x2 has 4 ranks but the job has 3")

# An output that cannot be written stops the run before any work (exit 2).
haloex_jacobi_mpi_test(jacobi_bad_json_directory_np2 haloex-jacobi 2 mpi --nx 48 --ny 36 --niter 25 --transport cpu
                       --json no-such-dir/jacobi.json)
set_tests_properties(jacobi_bad_json_directory_np2 PROPERTIES
  PASS_REGULAR_EXPRESSION "--json no-such-dir/jacobi.json: the directory 'no-such-dir' does not exist"
  FAIL_REGULAR_EXPRESSION "summary \\(")

# --- commbench: one quick run (all measurements) ------------------------------
if(TARGET haloex-commbench)
  haloex_jacobi_mpi_test(commbench_quick_np2 haloex-commbench 2 "gpu;mpi" --quick --allow-shared-gpus)
  # 2^63 bytes once looped (sizes doubling past 2^64 wrapped to 0) until memory ran out.
  haloex_jacobi_mpi_test(commbench_bad_max_bytes_np2 haloex-commbench 2 mpi --max-bytes 9223372036854775808)
  set_tests_properties(commbench_bad_max_bytes_np2 PROPERTIES TIMEOUT 60
    PASS_REGULAR_EXPRESSION "--max-bytes 9223372036854775808: use a power of two from 16384 to 68719476736")
  haloex_jacobi_mpi_test(commbench_bad_csv_np2 haloex-commbench 2 mpi --quick --csv no-such-dir/bench.csv)
  set_tests_properties(commbench_bad_csv_np2 PROPERTIES TIMEOUT 60
    PASS_REGULAR_EXPRESSION "--csv no-such-dir/bench.csv: the directory 'no-such-dir' does not exist")
endif()

# --- halo-stress: options are checked before MPI and the GPU (exit 2) ---------
# (--check-every 0 divided by zero, --repartition-every 0 never advanced; both
# used to be found only after the GPU check, i.e. never where there is none.)
if(TARGET haloex-halo-stress)
  foreach(bad IN ITEMS check-every repartition-every)
    add_test(NAME halo_stress_bad_${bad} COMMAND $<TARGET_FILE:haloex-halo-stress> --${bad} 0)
    set_tests_properties(halo_stress_bad_${bad} PROPERTIES LABELS unit TIMEOUT 60
      PASS_REGULAR_EXPRESSION "haloex-halo-stress: error: --${bad} 0: use a positive number of steps")
  endforeach()
endif()
