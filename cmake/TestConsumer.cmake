# ctest script (consumer_find_package): the installed package works on its own.
#   cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DGENERATOR=... -DMAKE_PROGRAM=...
#         -DHAVE_NVSHMEM=ON|OFF -DNVSHMEM_BUNDLED=ON|OFF -DHAVE_FUSED_STENCIL=ON|OFF
#         [-DCUDA_BIN=<dir of nvcc>] [-DMPIEXEC=<mpiexec>] -P TestConsumer.cmake
# 1. cmake --install into a scratch prefix, then move the prefix elsewhere
#    (outside the checkout and the build tree): nothing may point back.
# 2. No installed CMake file and no RUNPATH/RPATH of an installed binary names
#    the source or the build tree.
# 3. examples/consumer (COMPONENTS plan) configures with CUDA, MPI, NCCL and
#    NVSHMEM all switched off (CMAKE_DISABLE_FIND_PACKAGE_*: any lookup of them
#    fails), builds and runs. No example sets a C++ standard: the installed
#    targets carry C++20 (cxx_std_20).
# 4. examples/hello_halo (COMPONENTS halo launch: the halo API on the CPU)
#    configures, builds and runs with PATH=/usr/bin:/bin -- no CUDA there,
#    and CUDA, NCCL and NVSHMEM lookups switched off -- on 4 thread ranks and,
#    with MPIEXEC, on 2 processes under mpiexec; each rank's ghosts are all
#    lattice sites. examples/particle_halo (COMPONENTS transports: the halo
#    API over every backend) configures, builds and runs (reference backend,
#    thread ranks).
# 5. examples/consumer_nvshmem (COMPONENTS transports nvshmem: the nvshmem
#    backend through the registry) configures, builds and runs; ldd resolves
#    libhaloex_nvshmem and (when the install copied NVSHMEM) libnvshmem_host
#    inside the moved prefix, with NVSHMEM's bootstrap plugin beside the latter.
# 6. examples/fused_stencil (COMPONENTS transports mpi: the device halo view in
#    a user's own .cu file, no -rdc) configures, builds and runs on thread
#    ranks; without a GPU its run is skipped (exit 77), the build still counts.
# Every configure, build and run happens under `env -i` with only PATH, HOME
# and (for configure) -DCMAKE_PREFIX_PATH: no NVSHMEM_HOME, CMAKE_PREFIX_PATH,
# LD_LIBRARY_PATH or Python site from the caller.
foreach(var IN ITEMS BUILD_DIR SOURCE_DIR GENERATOR MAKE_PROGRAM)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "TestConsumer.cmake needs -D${var}=...")
  endif()
endforeach()
find_program(ENV_EXE env REQUIRED)
find_program(READELF readelf REQUIRED)
find_program(LDD ldd REQUIRED)

# Outside both trees (a temporary directory), fresh each run.
if(DEFINED ENV{TMPDIR} AND IS_DIRECTORY "$ENV{TMPDIR}")
  set(tmp "$ENV{TMPDIR}")
else()
  set(tmp "/tmp")
endif()
string(RANDOM LENGTH 8 ALPHABET "abcdefghijklmnopqrstuvwxyz0123456789" tag)
set(scratch "${tmp}/haloex-consumer-${tag}")
set(staging "${scratch}/staging")
set(prefix "${scratch}/moved/prefix")
file(REMOVE_RECURSE "${scratch}")
file(MAKE_DIRECTORY "${scratch}/home" "${scratch}/moved")

macro(fail what)
  message(FATAL_ERROR "${what}\n(scratch directory kept for inspection: ${scratch})")
endmacro()

# A minimal PATH: the system's, the build tool's and nvcc's directories.
set(path "/usr/local/bin:/usr/bin:/bin")
get_filename_component(dir "${MAKE_PROGRAM}" DIRECTORY)
string(PREPEND path "${dir}:")
if(CUDA_BIN)
  string(PREPEND path "${CUDA_BIN}:")
endif()
set(clean ${ENV_EXE} -i "PATH=${path}" "HOME=${scratch}/home")
# The CPU-only consumer's: the system's directories and nothing else.
set(cpu_path "/usr/bin:/bin")
if(NOT dir MATCHES "^(/usr/bin|/bin)$")
  string(APPEND cpu_path ":${dir}")  # the build tool, where it lives elsewhere
endif()
set(cpu_clean ${ENV_EXE} -i "PATH=${cpu_path}" "HOME=${scratch}/home")

# --- 1. install, then move --------------------------------------------------
execute_process(COMMAND ${clean} ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${staging}"
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  fail("cmake --install failed (${rc})")
endif()
file(RENAME "${staging}" "${prefix}")
message(STATUS "installed, then moved to ${prefix}")

# --- 2. nothing points back into the trees ---------------------------------
set(trees "${SOURCE_DIR}" "${BUILD_DIR}")
foreach(t IN ITEMS "${SOURCE_DIR}" "${BUILD_DIR}")
  get_filename_component(real "${t}" REALPATH)
  list(APPEND trees "${real}")
endforeach()
list(REMOVE_DUPLICATES trees)
file(GLOB_RECURSE cmake_files "${prefix}/*.cmake")
if(NOT cmake_files)
  fail("no CMake package files under ${prefix}")
endif()
foreach(f IN LISTS cmake_files)
  file(READ "${f}" text)
  foreach(t IN LISTS trees)
    string(FIND "${text}" "${t}" at)
    if(NOT at EQUAL -1)
      fail("${f} names ${t}: the installed package depends on the source or build tree")
    endif()
  endforeach()
endforeach()
file(GLOB_RECURSE all_files LIST_DIRECTORIES false "${prefix}/*")
set(elf_count 0)
foreach(f IN LISTS all_files)
  if(IS_SYMLINK "${f}")
    continue()
  endif()
  file(READ "${f}" magic LIMIT 4 HEX)
  if(NOT magic STREQUAL "7f454c46")
    continue()
  endif()
  math(EXPR elf_count "${elf_count} + 1")
  execute_process(COMMAND ${READELF} -d "${f}" OUTPUT_VARIABLE dyn ERROR_QUIET)
  string(REGEX MATCHALL "\\((RPATH|RUNPATH)\\)[^\n]*" paths "${dyn}")
  foreach(t IN LISTS trees)
    string(FIND "${paths}" "${t}" at)
    if(NOT at EQUAL -1)
      fail("${f} has ${paths}: it would load libraries from ${t}")
    endif()
  endforeach()
endforeach()
list(LENGTH cmake_files cmake_count)
message(STATUS "${cmake_count} installed CMake files and ${elf_count} binaries name neither tree")

# --- 3 and 4: the consumers ---------------------------------------------------
# consumer(<example dir> <program> <expected output regex> [extra configure args])
# consumer_env: the environment it runs in (default: ${clean}).
function(consumer example program expect)
  if(consumer_env)
    set(clean ${consumer_env})
  endif()
  set(src "${scratch}/src/${example}")
  set(work "${scratch}/build-${example}")
  file(COPY "${SOURCE_DIR}/examples/${example}/" DESTINATION "${src}")
  execute_process(COMMAND ${clean} ${CMAKE_COMMAND} -S "${src}" -B "${work}" -G "${GENERATOR}"
                          "-DCMAKE_PREFIX_PATH=${prefix}" ${ARGN}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    fail("configuring ${example} against the installed haloex failed (${rc}):\n${out}")
  endif()
  execute_process(COMMAND ${clean} ${CMAKE_COMMAND} --build "${work}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    fail("building ${example} failed (${rc}):\n${out}")
  endif()
  # consumer_run_args: the program's arguments; consumer_may_skip: exit 77
  # with "SKIPPED: " (no GPU here) passes once it has built.
  execute_process(COMMAND ${clean} "${work}/${program}" ${consumer_run_args}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  message(STATUS "${example}: ${out}")
  if(consumer_may_skip AND rc EQUAL 77 AND out MATCHES "SKIPPED: ")
    return()
  endif()
  if(NOT rc EQUAL 0 OR NOT out MATCHES "${expect}")
    fail("${example}/${program} failed (${rc}):\n${out}")
  endif()
endfunction()

consumer(consumer plan_summary "rank 3: [0-9]+ home, [1-9][0-9]* halo atoms"
         -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON
         -DCMAKE_DISABLE_FIND_PACKAGE_NCCL=ON -DCMAKE_DISABLE_FIND_PACKAGE_NVSHMEM=ON --no-warn-unused-cli)

set(no_device -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON -DCMAKE_DISABLE_FIND_PACKAGE_NCCL=ON
              -DCMAKE_DISABLE_FIND_PACKAGE_NVSHMEM=ON --no-warn-unused-cli)

# The halo API on the CPU (COMPONENTS halo launch), as a newcomer writes it,
# with no CUDA in PATH: examples/hello_halo on 4 thread ranks, then under mpiexec.
set(lattice "0 off the lattice")
set(consumer_env ${cpu_clean})
consumer(hello_halo hello_halo "rank 3 of 4 \\(reference\\): 128 home atoms, [1-9][0-9]* ghosts, ${lattice}" ${no_device})
unset(consumer_env)
if(MPIEXEC)
  execute_process(COMMAND ${cpu_clean} OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
                          OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl=self,vader
                          OMPI_MCA_btl_vader_single_copy_mechanism=none
                          ${MPIEXEC} -n 2 "${scratch}/build-hello_halo/hello_halo"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  message(STATUS "hello_halo under mpiexec -n 2: ${out}")
  string(REGEX MATCHALL "of 2 \\(staged\\): 256 home atoms, [1-9][0-9]* ghosts, ${lattice}" ranks "${out}")
  list(LENGTH ranks n)
  if(NOT rc EQUAL 0 OR NOT n EQUAL 2)
    fail("hello_halo under mpiexec -n 2 failed (${rc}):\n${out}")
  endif()
endif()

# The halo API over every backend (COMPONENTS transports) from the outside:
# examples/particle_halo builds against the installed package and checks its forces.
consumer(particle_halo particle_halo "forces match the direct sum")

if(HAVE_NVSHMEM)
  consumer(consumer_nvshmem nvshmem_probe "nvshmem transport linked; host memory refused as expected")
  set(probe "${scratch}/build-consumer_nvshmem/nvshmem_probe")
  execute_process(COMMAND ${clean} ${LDD} "${probe}" OUTPUT_VARIABLE deps RESULT_VARIABLE rc)
  set(libs libhaloex_nvshmem.so)
  if(NVSHMEM_BUNDLED)
    list(APPEND libs libnvshmem_host.so.3)
  endif()
  foreach(lib IN LISTS libs)
    string(REGEX MATCH "${lib} => [^ ]+" line "${deps}")
    string(REPLACE "${lib} => " "" where "${line}")
    string(FIND "${where}" "${prefix}/" at)
    if(NOT at EQUAL 0)
      fail("ldd nvshmem_probe: ${lib} resolves to '${where}', not inside ${prefix}:\n${deps}")
    endif()
    if(lib MATCHES "nvshmem_host")
      # NVSHMEM dlopen()s its bootstrap by bare name from libnvshmem_host ($ORIGIN).
      get_filename_component(dir "${where}" DIRECTORY)
      if(NOT EXISTS "${dir}/nvshmem_bootstrap_uid.so.3")
        fail("NVSHMEM's bootstrap plugin is not beside ${where}")
      endif()
    endif()
  endforeach()
  message(STATUS "ldd: ${libs} load from the moved prefix")
endif()

# The device halo view from the outside: the user's own kernel file, built
# with nothing but nvcc and the installed headers (no -rdc, no NVSHMEM device
# library).
if(HAVE_FUSED_STENCIL)
  set(consumer_run_args --threads 2 --steps 50)
  set(consumer_may_skip ON)
  consumer(fused_stencil fused_stencil "fused stencil matches the host reference bitwise")
endif()

file(REMOVE_RECURSE "${scratch}")
