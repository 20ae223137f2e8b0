# The backend labels of a test, from its name (as cuDecomp labels its tests
# halo;nvshmem): `ctest -L nvshmem` runs every test of one backend, with the
# labels that say what it needs (unit, mpi, gpu). Used at configure time for
# tests named then, and at test time for the GoogleTest cases, whose names
# are known only once gtest_discover_tests has listed them
# (tests/CMakeLists.txt). Labels: reference, staged, ipc, nccl, nccl_device,
# nvshmem.
function(haloex_backend_labels out name)
  string(TOLOWER "${name}" n)
  # A GoogleTest case (Prefix/Suite.Test/param  # GetParam() = ...): the
  # backend is its suite's or its parameter's, never a word of the test's own
  # name ("...MatchTheReferenceBitwise" compares with the reference, whatever
  # the backend).
  string(REGEX REPLACE "  # getparam\\(\\) = .*$" "" n "${n}")
  if(n MATCHES "^(.*/)?([^./]+)\\.([^./]+)(/(.*))?$")
    set(n "${CMAKE_MATCH_2}/${CMAKE_MATCH_5}")
    # The halo API's cases (Backends/...) name <backend>_<memory space>:
    # nccl_device is nccl in device memory, nccl_device_device nccl-device.
    if(name MATCHES "^Backends/")
      string(REGEX REPLACE "_(host|device)$" "" n "${n}")
    endif()
  endif()
  set(labels "")
  # peer_fused: nccl-device's kernels over CUDA IPC windows (one GPU's stand-in for NCCL's).
  if(n MATCHES "nccl[_-]?device|peer_fused")
    list(APPEND labels nccl_device)
    string(REGEX REPLACE "nccl[_-]?device" "" n "${n}")
  endif()
  foreach(backend IN ITEMS nccl nvshmem staged reference)
    if(n MATCHES "${backend}")
      list(APPEND labels ${backend})
    endif()
  endforeach()
  # "ipc" as a word of the name (not inside another word).
  if(n MATCHES "(^|[^a-z])ipc")
    list(APPEND labels ipc)
  endif()
  set(${out} "${labels}" PARENT_SCOPE)
endfunction()

# Appends the backend labels to every test this directory has defined so far
# (call it at the end of a tests/ CMakeLists.txt).
function(haloex_label_backends_here)
  get_property(tests DIRECTORY PROPERTY TESTS)
  foreach(test IN LISTS tests)
    haloex_backend_labels(extra "${test}")
    if(extra)
      set_property(TEST ${test} APPEND PROPERTY LABELS ${extra})
    endif()
  endforeach()
endfunction()
