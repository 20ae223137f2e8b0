# haloex-halo-stress under mpiexec (labels gpu;mpi; included from
# tests/gpu/CMakeLists.txt): thousands of forward/reverse exchanges back to
# back, every halo coordinate and accumulated force checked on the device each
# step, atoms redrawn and repartitioned every 500 steps. Grids 2x1x1 (2 ranks),
# 2x2x1 (4) and 2x2x2 (8); every nvshmem path, fused and per-pulse
# (halo_stress_nvshmem_<path>_perpulse_*), and every other device transport
# this build has. mpi_gpu_launch runs them one rank per GPU where there are
# enough GPUs and several ranks per GPU under MPS, else they are skipped with
# the reason; so is a transport that cannot run here (exit 77: NCCL refuses
# two ranks on one GPU).
if(NOT TARGET haloex-halo-stress OR NOT TARGET mpi_gpu_launch)
  return()
endif()

set(_variants staged/auto ipc/auto)
if(TARGET haloex_nccl)
  list(APPEND _variants nccl/auto)
endif()
if(TARGET haloex_nvshmem)
  list(APPEND _variants nvshmem/direct nvshmem/tma nvshmem/put)
  # The per-pulse ablation (--nvshmem-launch per-pulse): the same checks, then
  # 200 timed exchanges, which capture the exchanges in a CUDA graph and
  # replay it (any device-side wait that times out fails the run).
  list(APPEND _variants nvshmem/direct/per-pulse nvshmem/tma/per-pulse nvshmem/put/per-pulse)
endif()
foreach(_case IN ITEMS 2:2x1x1 4:2x2x1 8:2x2x2)
  string(REPLACE ":" ";" _case "${_case}")
  list(GET _case 0 _ranks)
  list(GET _case 1 _grid)
  foreach(_variant IN LISTS _variants)
    string(REPLACE "/" ";" _v "${_variant}")
    list(GET _v 0 _transport)
    list(GET _v 1 _path)
    set(_launch fused)
    set(_extra "")
    list(LENGTH _v _parts)
    if(_parts GREATER 2)
      list(GET _v 2 _launch)
      set(_extra --time-exchanges 200)
    endif()
    # nccl is captured in CUDA graphs too: the timed exchanges replay a graph.
    if(_transport STREQUAL "nccl")
      set(_extra --time-exchanges 200)
    endif()
    # The fused kernels get the long runs; the CPU-orchestrated transports
    # block the host at every pulse and are slower per step.
    if(_transport STREQUAL "nvshmem" AND _launch STREQUAL "fused")
      set(_steps 3000)
      set(_name halo_stress_nvshmem_${_path}_np${_ranks}_${_grid})
    elseif(_transport STREQUAL "nvshmem")
      set(_steps 3000)
      set(_name halo_stress_nvshmem_${_path}_perpulse_np${_ranks}_${_grid})
    else()
      set(_steps 500)
      set(_name halo_stress_${_transport}_np${_ranks}_${_grid})
    endif()
    add_test(NAME ${_name}
             COMMAND $<TARGET_FILE:mpi_gpu_launch> ${_ranks} ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${_ranks}
                     --oversubscribe --bind-to none ${MPIEXEC_PREFLAGS} $<TARGET_FILE:haloex-halo-stress>
                     ${MPIEXEC_POSTFLAGS} --allow-shared-gpus --transport ${_transport} --nvshmem-path ${_path}
                     --nvshmem-launch ${_launch} --grid ${_grid} --atoms 6000 --steps ${_steps} --repartition-every 500
                     --wait-timeout 20 ${_extra})
    set_tests_properties(${_name} PROPERTIES LABELS "gpu;mpi" PROCESSORS ${_ranks} TIMEOUT 600
                         ENVIRONMENT "${HALOEX_MPI_TEST_ENV}" SKIP_RETURN_CODE 77)
  endforeach()
endforeach()
