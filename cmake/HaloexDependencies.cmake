# Detects the optional parts (CUDA, MPI, NCCL, NVSHMEM, HDF5) and the required
# libraries. Each optional part sets HALOEX_HAVE_<PART> and a reason string
# for the configuration summary.

find_package(fmt REQUIRED)
find_package(Threads REQUIRED)
find_package(nlohmann_json REQUIRED)
if(HALOEX_BUILD_APPS)
  find_package(CLI11 CONFIG REQUIRED)
endif()

# --- CUDA -------------------------------------------------------------------
set(HALOEX_HAVE_CUDA OFF)
set(HALOEX_CUDA_REASON "disabled (HALOEX_ENABLE_CUDA=OFF)")
if(HALOEX_ENABLE_CUDA)
  include(CheckLanguage)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    # Hopper (H100/H200): TMA bulk copies need sm_90.
    set(CMAKE_CUDA_ARCHITECTURES 90)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    enable_language(CUDA)
    # CMake < 3.26 does not know nvcc's C++20 flag (the GPU machine's CMake does).
    if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    endif()
    find_package(CUDAToolkit REQUIRED)
    set(CMAKE_CUDA_STANDARD 20)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    set(HALOEX_HAVE_CUDA ON)
    set(HALOEX_CUDA_REASON "nvcc ${CMAKE_CUDA_COMPILER_VERSION}, architectures ${CMAKE_CUDA_ARCHITECTURES}")
  else()
    set(HALOEX_CUDA_REASON "no CUDA compiler found (put nvcc on PATH or set CMAKE_CUDA_COMPILER)")
  endif()
endif()

# --- MPI --------------------------------------------------------------------
set(HALOEX_HAVE_MPI OFF)
set(HALOEX_MPI_REASON "disabled (HALOEX_ENABLE_MPI=OFF)")
if(HALOEX_ENABLE_MPI)
  # The library's own version ("Open MPI v4.1.4") for --version, not only the standard's.
  set(MPI_DETERMINE_LIBRARY_VERSION TRUE)
  find_package(MPI COMPONENTS CXX)
  if(MPI_CXX_FOUND)
    set(HALOEX_HAVE_MPI ON)
    set(HALOEX_MPI_REASON "MPI ${MPI_CXX_VERSION}, launcher ${MPIEXEC_EXECUTABLE}")
    set(HALOEX_MPIEXEC "${MPIEXEC_EXECUTABLE}")
  else()
    set(HALOEX_MPI_REASON "MPI not found (Debian: apt-get install libopenmpi-dev openmpi-bin)")
  endif()
endif()

# --- NCCL -------------------------------------------------------------------
set(HALOEX_HAVE_NCCL OFF)
set(HALOEX_NCCL_REASON "disabled (HALOEX_ENABLE_NCCL=OFF)")
if(HALOEX_ENABLE_NCCL AND NOT HALOEX_HAVE_CUDA)
  set(HALOEX_NCCL_REASON "needs CUDA")
elseif(HALOEX_ENABLE_NCCL)
  include(FindNCCL)
  if(NCCL_FOUND)
    set(HALOEX_HAVE_NCCL ON)
    set(HALOEX_NCCL_REASON "NCCL ${NCCL_VERSION} in ${NCCL_LIBRARY}")
  else()
    set(HALOEX_NCCL_REASON "NCCL not found (set NCCL_HOME, or pip install nvidia-nccl-cu13)")
  endif()
endif()

# --- NCCL device API (the nccl-device provider of the device halo view) -------
# Experimental in NCCL 2.28 and changed in 2.29 (ncclDevCommRequirements), so
# pinned to 2.28.x; the code that uses it is src/transport/nccl_device/nccl_device_peer_memory.cu
# alone, which checks the same range at compile time and the loaded library's
# version at run time.
set(HALOEX_HAVE_NCCL_DEVICE OFF)
if(NOT HALOEX_HAVE_NCCL)
  set(HALOEX_NCCL_DEVICE_REASON "needs NCCL 2.28 (NCCL: ${HALOEX_NCCL_REASON})")
elseif(NCCL_VERSION VERSION_LESS 2.28)
  set(HALOEX_NCCL_DEVICE_REASON "NCCL ${NCCL_VERSION} has no device API (it came with NCCL 2.28; install 2.28.x)")
elseif(NOT NCCL_VERSION VERSION_LESS 2.29)
  set(HALOEX_NCCL_DEVICE_REASON
      "NCCL ${NCCL_VERSION}: haloex pins the experimental device API of NCCL 2.28 (2.29 changed its requirements "
      "struct): build against 2.28.x, or port src/transport/nccl_device/nccl_device_peer_memory.cu")
elseif(NOT EXISTS "${NCCL_INCLUDE_DIR}/nccl_device.h")
  set(HALOEX_NCCL_DEVICE_REASON "NCCL ${NCCL_VERSION} without its device headers (no nccl_device.h in ${NCCL_INCLUDE_DIR})")
else()
  set(HALOEX_HAVE_NCCL_DEVICE ON)
  set(HALOEX_NCCL_DEVICE_REASON "NCCL ${NCCL_VERSION} device API: windows with load/store (LSA) peer pointers, no multicast")
endif()

# --- NVSHMEM ----------------------------------------------------------------
set(HALOEX_HAVE_NVSHMEM OFF)
set(HALOEX_NVSHMEM_REASON "disabled (HALOEX_ENABLE_NVSHMEM=OFF)")
if(HALOEX_ENABLE_NVSHMEM AND NOT (HALOEX_HAVE_CUDA AND HALOEX_HAVE_MPI))
  set(HALOEX_NVSHMEM_REASON "needs CUDA and MPI (the unique id is broadcast over MPI)")
elseif(HALOEX_ENABLE_NVSHMEM)
  # Unless NVSHMEM_ROOT/NVSHMEM_HOME say otherwise: the wheel, as scripts/setup.sh
  # installs it into .deps/python, or as the python3 on PATH imports it.
  set(HALOEX_NVSHMEM_HINTS "${PROJECT_SOURCE_DIR}/.deps/python/nvidia/nvshmem")
  find_program(HALOEX_PYTHON3 NAMES python3)
  if(HALOEX_PYTHON3)
    execute_process(
      COMMAND ${HALOEX_PYTHON3} -c "import nvidia.nvshmem as m; print(list(m.__path__)[0])"
      OUTPUT_VARIABLE _nvshmem_py OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _rc)
    if(_rc EQUAL 0 AND _nvshmem_py)
      list(APPEND HALOEX_NVSHMEM_HINTS "${_nvshmem_py}")
    endif()
  endif()
  find_package(NVSHMEM)
  if(NVSHMEM_FOUND)
    set(HALOEX_HAVE_NVSHMEM ON)
    set(HALOEX_NVSHMEM_REASON "NVSHMEM ${NVSHMEM_VERSION} in ${NVSHMEM_PREFIX}")
    include(HaloexNvshmemBundle)
    if(HALOEX_NVSHMEM_BUNDLE_DIR)
      string(APPEND HALOEX_NVSHMEM_REASON ", installed with haloex")
    endif()
  else()
    set(HALOEX_NVSHMEM_REASON
        "NVSHMEM not found (set NVSHMEM_ROOT or NVSHMEM_HOME, or pip install nvidia-nvshmem-cu13==3.4.5)")
  endif()
endif()

# --- HDF5 (H5MD trajectories) -------------------------------------------------
# The C library only (Debian: libhdf5-dev, the serial build). Without it
# haloex-md refuses --traj x.h5 before its first step and says why.
set(HALOEX_HAVE_HDF5 OFF)
set(HALOEX_HDF5_REASON "disabled (HALOEX_ENABLE_HDF5=OFF): haloex-md refuses --traj *.h5")
if(HALOEX_ENABLE_HDF5)
  # FindHDF5 test-compiles C.
  enable_language(C)
  find_package(HDF5 COMPONENTS C QUIET)
  if(HDF5_FOUND)
    set(HALOEX_HAVE_HDF5 ON)
    set(HALOEX_HDF5_REASON "HDF5 ${HDF5_VERSION}: haloex-md writes H5MD trajectories (--traj *.h5)")
  else()
    set(HALOEX_HDF5_REASON
        "HDF5 not found (Debian: apt-get install libhdf5-dev): haloex-md refuses --traj *.h5")
  endif()
endif()

# --- tests ------------------------------------------------------------------
if(HALOEX_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
