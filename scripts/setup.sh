#!/usr/bin/env bash
# Installs what a profile needs and is missing, then configures and builds it.
# Idempotent: when everything is there it only runs an incremental build.
#   scripts/setup.sh [test]   everything (scripts/test.sh): the library, proxies,
#                             tools, examples and tests, in HALOEX_BUILD_DIR (build/);
#                             the test tools too (GoogleTest, clang-format,
#                             clang-tidy, MDAnalysis/h5py, matplotlib)
#   scripts/setup.sh run      haloex-md alone (scripts/run.sh), in HALOEX_RUN_BUILD_DIR
#                             (build-run/): tests off, only its target; CPU-only
#                             where no GPU is visible
#   scripts/setup.sh PROFILE --list   what the profile installs, one piece a line
# Two build directories, so that neither script reconfigures the other's:
# run.sh's tree (no tests, maybe no CUDA) would otherwise flip build/'s cache
# back and forth with test.sh's. The price is that test.sh compiles haloex-md's
# sources once more (~1.5 min of its ~8 on 2 cores).
# Environment: HALOEX_BUILD_DIR, HALOEX_RUN_BUILD_DIR, HALOEX_CMAKE_ARGS (extra
# -D..., at the first configure), HALOEX_NO_INSTALL=1 (never call apt-get/pip).
set -euo pipefail
# Never NVLink multicast, whatever the caller's environment says.
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
profile="${1:-test}"
list=0
[ "${2:-}" = --list ] && list=1
case "$profile" in
  run) build="${HALOEX_RUN_BUILD_DIR:-$root/build-run}" ;;
  test) build="${HALOEX_BUILD_DIR:-$root/build}" ;;
  *) echo "usage: $0 [run|test] [--list]" >&2; exit 2 ;;
esac
deps="$root/.deps"
nvshmem_version="3.4.5"  # the PyPI wheel used when no NVSHMEM is installed
export PATH="/usr/local/cuda/bin:$PATH"
say() { printf '[haloex setup] %s\n' "$*"; }
# shellcheck source=lib/deps.sh
. "$root/scripts/lib/deps.sh"
# shellcheck source=lib/build.sh
. "$root/scripts/lib/build.sh"

# --- system packages (Debian/Ubuntu names) -------------------------------------
deps_want required "have_cmd cmake" cmake
deps_want required "have_cmd ninja" ninja-build
deps_want required "have_cmd g++" g++
deps_want required "have_header CLI/CLI.hpp" libcli11-dev
deps_want required "have_header nlohmann/json.hpp" nlohmann-json3-dev
deps_want required "have_header fmt/core.h" libfmt-dev
deps_want optional "have_cmd mpicxx" "openmpi-bin libopenmpi-dev" \
  "no MPI: haloex-md runs one process, so one GPU or the CPU reference"
# H5MD trajectories (--traj x.h5); the build says so without it. Debian puts
# the serial library's header under hdf5/serial.
deps_want optional "have_header hdf5.h" libhdf5-dev "no HDF5: haloex-md refuses --traj *.h5 and writes .gro"
deps_want optional "have_cmd git" git "no git: the build records commit 'unknown'"
if [ "$profile" = run ]; then
  deps_want optional "have_cmd python3" python3 "no python3: NVSHMEM is not looked for in Python packages"
  deps_want optional have_pip python3-pip "no pip: the NVSHMEM wheel cannot be installed"
else
  deps_want required "have_cmd python3" python3
  deps_want optional have_pip python3-pip "no pip: neither the NVSHMEM wheel nor tests/requirements.txt can be installed"
  deps_want required "have_header gtest/gtest.h && have_header gmock/gmock.h" "libgtest-dev libgmock-dev"
  # The format and clang-tidy checks (ctest format_check and clang_tidy): skipped without them.
  deps_want optional "have_any_cmd clang-format clang-format-14" clang-format "ctest format_check skips"
  deps_want optional "have_any_cmd clang-tidy clang-tidy-14" clang-tidy "ctest clang_tidy skips"
  # The API reference from the public headers (ctest api_reference): skipped without it.
  deps_want optional "have_cmd doxygen" doxygen "ctest api_reference skips"
fi
if [ "$list" = 1 ]; then
  for i in "${!deps_checks[@]}"; do echo "${deps_kinds[$i]} apt ${deps_packages[$i]}"; done
  echo "optional pip nvidia-nvshmem-cu13==$nvshmem_version (with CUDA)"
  [ "$profile" = test ] && echo "optional pip tests/requirements.txt bench/requirements.txt"
  exit 0
fi
mkdir -p "$deps"
deps_resolve "$deps/setup-apt.log" || exit 1

# --- GPU or not ---------------------------------------------------------------
# run: without a visible GPU haloex-md runs the CPU reference, so the GPU code
# is not built (set HALOEX_CMAKE_ARGS=-DHALOEX_ENABLE_CUDA=ON to build it anyway).
cuda_args=()
if [ "$profile" = run ]; then
  gpus=0
  have_cmd nvidia-smi && gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
  if [ "$gpus" -eq 0 ]; then
    cuda_args=(-DHALOEX_ENABLE_CUDA=OFF)
    case " ${HALOEX_CMAKE_ARGS:-} " in *HALOEX_ENABLE_CUDA=ON*) cuda_args=() ;; esac
  fi
fi
want_cuda=1
[ ${#cuda_args[@]} -gt 0 ] && want_cuda=0
if [ "$want_cuda" = 1 ] && ! have_cmd nvcc; then
  say "skipped: the GPU code (no nvcc on PATH or in /usr/local/cuda/bin: install the CUDA toolkit for GPU runs)"
fi

# --- NVSHMEM (PyPI wheel) ------------------------------------------------------
# Used from NVSHMEM_ROOT or NVSHMEM_HOME, from an importable Python package, or
# installed into .deps/python (never into the system Python: Debian refuses
# that). `cmake --install` copies it under the prefix (HaloexNvshmemBundle.cmake).
if [ "$want_cuda" = 1 ] && [ -z "${NVSHMEM_ROOT:-}${NVSHMEM_HOME:-}" ] && have_cmd nvcc && have_cmd python3; then
  if ! python3 -c 'import nvidia.nvshmem' 2>/dev/null && [ ! -e "$deps/python/nvidia/nvshmem/include/nvshmem.h" ]; then
    say "installing nvidia-nvshmem-cu13==$nvshmem_version into $deps/python"
    deps_pip_install "$deps/setup-pip.log" "$deps/python" --no-deps "nvidia-nvshmem-cu13==$nvshmem_version" \
      || say "skipped: NVSHMEM (the nvshmem transport is not built): $(tail -1 "$deps/setup-pip.log")" \
             "(set NVSHMEM_HOME to an installed NVSHMEM 3, or carry the wheel)"
  fi
fi

# --- Python packages of the tests (tests/ and bench/requirements.txt) ----------
# MDAnalysis and h5py read the H5MD trajectories back, matplotlib draws the
# bench plots; into .deps/python like NVSHMEM. Without them the tests that
# need them skip, saying so.
if [ "$profile" = test ] && ! PYTHONPATH="$deps/python" python3 -c 'import MDAnalysis, h5py, matplotlib' >/dev/null 2>&1; then
  say "installing tests/requirements.txt (MDAnalysis, h5py) and bench/requirements.txt (matplotlib) into $deps/python"
  deps_pip_install "$deps/setup-pip.log" "$deps/python" -r "$root/tests/requirements.txt" -r "$root/bench/requirements.txt" \
    || say "skipped: MDAnalysis/h5py/matplotlib (the H5MD read-back and plot tests skip): $(tail -1 "$deps/setup-pip.log")"
fi

# --- configure and build -------------------------------------------------------
configure_args=(-G Ninja -DCMAKE_BUILD_TYPE=Release)
[ "$profile" = run ] && configure_args+=(-DHALOEX_BUILD_TESTS=OFF)
cached_cuda=""
[ -f "$build/CMakeCache.txt" ] && cached_cuda="$(sed -n 's/^HALOEX_ENABLE_CUDA:BOOL=//p' "$build/CMakeCache.txt")"
# A run tree configured without a GPU is reconfigured once one is visible.
if [ ! -f "$build/CMakeCache.txt" ] || { [ "$profile" = run ] && [ "$want_cuda" = 1 ] && [ "$cached_cuda" = OFF ] &&
     [[ " ${HALOEX_CMAKE_ARGS:-} " != *HALOEX_ENABLE_CUDA=OFF* ]]; }; then
  [ "$profile" = run ] && [ "$want_cuda" = 1 ] && [ "$cached_cuda" = OFF ] && configure_args+=(-DHALOEX_ENABLE_CUDA=ON)
  say "configuring $build${cuda_args:+ (no GPU visible: CPU-only)}"
  mkdir -p "$build"
  # shellcheck disable=SC2086
  cmake -S "$root" -B "$build" "${configure_args[@]}" "${cuda_args[@]}" ${HALOEX_CMAKE_ARGS:-} \
    >"$build/configure.log" 2>&1 || { cat "$build/configure.log"; say "configure failed; see $build/configure.log"; exit 1; }
  sed -n '/haloex .* configuration/,/executables/p' "$build/configure.log" | sed 's/^-- //'
fi
targets=()
[ "$profile" = run ] && targets=(haloex-md)
say "building ${targets[*]:-everything} with $(nproc) jobs (log: $build/build.log)"
build_with_progress "$build" "$build/build.log" "${targets[@]}" || exit 1
say "built: $build/bin"
