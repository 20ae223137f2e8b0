#!/usr/bin/env bash
# Installs what haloex needs and is missing, then configures and builds it.
# Idempotent: when everything is there it only runs an incremental build.
#   scripts/setup.sh            # install + configure + build (preset "default", build/)
# Environment: HALOEX_BUILD_DIR (default build), HALOEX_CMAKE_ARGS (extra -D...),
#              HALOEX_NO_INSTALL=1 (never call apt-get/pip; report what is missing).
set -euo pipefail
# Never NVLink multicast, whatever the caller's environment says.
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${HALOEX_BUILD_DIR:-$root/build}"
deps="$root/.deps"
say() { printf '[haloex setup] %s\n' "$*"; }

# --- system packages (Debian/Ubuntu) -----------------------------------------
# Each entry: a check that succeeds when the piece is present, and the package.
have_header() { # header found in the usual include directories?
  local h="$1"
  for d in /usr/include /usr/local/include /usr/include/x86_64-linux-gnu /usr/include/hdf5/serial; do
    [ -e "$d/$h" ] && return 0
  done
  return 1
}
missing=()
command -v cmake >/dev/null || missing+=(cmake)
command -v ninja >/dev/null || missing+=(ninja-build)
command -v g++ >/dev/null || missing+=(g++)
command -v git >/dev/null || missing+=(git)
command -v python3 >/dev/null || missing+=(python3)
python3 -m pip --version >/dev/null 2>&1 || missing+=(python3-pip)
command -v mpicxx >/dev/null || missing+=(openmpi-bin libopenmpi-dev)
# The format and clang-tidy checks (ctest format_check and clang_tidy,
# scripts/check_format.sh and run_clang_tidy.sh): skipped without them.
command -v clang-format >/dev/null || command -v clang-format-14 >/dev/null || missing+=(clang-format)
command -v clang-tidy >/dev/null || command -v clang-tidy-14 >/dev/null || missing+=(clang-tidy)
have_header CLI/CLI.hpp || missing+=(libcli11-dev)
have_header nlohmann/json.hpp || missing+=(nlohmann-json3-dev)
have_header fmt/core.h || missing+=(libfmt-dev)
have_header gtest/gtest.h || missing+=(libgtest-dev libgmock-dev)
have_header benchmark/benchmark.h || missing+=(libbenchmark-dev)
# H5MD trajectories (--traj x.h5); optional for the build, which says so
# without it. Debian puts the serial library's header under hdf5/serial.
have_header hdf5.h || missing+=(libhdf5-dev)

if [ ${#missing[@]} -gt 0 ]; then
  if [ "${HALOEX_NO_INSTALL:-0}" = 1 ] || ! command -v apt-get >/dev/null; then
    say "missing: ${missing[*]} (install them, or unset HALOEX_NO_INSTALL)"; exit 1
  fi
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  say "installing: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# --- NVSHMEM (PyPI wheel) ------------------------------------------------------
# Used from NVSHMEM_ROOT or NVSHMEM_HOME, from an importable Python package, or
# installed into .deps/python (never into the system Python: Debian refuses
# that). `cmake --install` copies it under the prefix (HaloexNvshmemBundle.cmake).
nvshmem_version="3.4.5"
if [ -z "${NVSHMEM_ROOT:-}${NVSHMEM_HOME:-}" ] && command -v nvcc >/dev/null 2>&1; then
  if ! python3 -c 'import nvidia.nvshmem' 2>/dev/null && [ ! -e "$deps/python/nvidia/nvshmem/include/nvshmem.h" ]; then
    if [ "${HALOEX_NO_INSTALL:-0}" = 1 ]; then
      say "NVSHMEM not found; the nvshmem transport will not be built"
    else
      say "installing nvidia-nvshmem-cu13==$nvshmem_version into $deps/python"
      python3 -m pip install -q --disable-pip-version-check --no-deps --target "$deps/python" \
        "nvidia-nvshmem-cu13==$nvshmem_version"
    fi
  fi
fi

# --- Python packages of the tests (tests/requirements.txt) --------------------
# MDAnalysis and h5py read the H5MD trajectories back; into .deps/python like
# NVSHMEM. Without a registry the tests that need them skip, saying so.
if ! PYTHONPATH="$deps/python" python3 -c 'import MDAnalysis, h5py' >/dev/null 2>&1; then
  if [ "${HALOEX_NO_INSTALL:-0}" = 1 ]; then
    say "MDAnalysis/h5py not found; the H5MD read-back tests will skip (tests/requirements.txt)"
  else
    say "installing tests/requirements.txt (MDAnalysis, h5py) into $deps/python"
    python3 -m pip install -q --disable-pip-version-check --target "$deps/python" -r "$root/tests/requirements.txt" \
      || say "could not install tests/requirements.txt; the H5MD read-back tests will skip"
  fi
fi

# --- configure and build -------------------------------------------------------
export PATH="/usr/local/cuda/bin:$PATH"
if [ ! -f "$build/CMakeCache.txt" ]; then
  say "configuring $build"
  # shellcheck disable=SC2086
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release ${HALOEX_CMAKE_ARGS:-} >"$root/.setup-configure.log" 2>&1 \
    || { cat "$root/.setup-configure.log"; exit 1; }
  sed -n '/haloex .* configuration/,/executables/p' "$root/.setup-configure.log" | sed 's/^-- //'
fi
say "building with $(nproc) jobs (log: $build/build.log)"
if ! cmake --build "$build" -j "$(nproc)" >"$build/build.log" 2>&1; then
  grep -E -B2 -A12 'error|Error' "$build/build.log" | head -80
  say "build failed; see $build/build.log"; exit 1
fi
grep -E 'warning' "$build/build.log" | head -20 || true
say "built: $build/bin"
