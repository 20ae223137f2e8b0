#!/usr/bin/env bash
# Builds the GROMACS package that stage `gromacs` of run.sh compares against
# (GMX_TARBALL): GROMACS 2026.3 for an H200 (sm_90), relocatable, on a machine
# without a GPU, outside this repository (GROMACS is not part of haloex).
#   scripts/device/gromacs_package.sh SOURCE_DIR WORK_DIR OUT.tar.xz
# SOURCE_DIR: GROMACS at tag v2026.3 (e.g. `git archive v2026.3` of its
# repository). Needs CMake >= 3.28 (PyPI `cmake` where the system's is older),
# ninja, gcc, the CUDA toolkit in /usr/local/cuda, patchelf. About 15 minutes
# on 2 cores. Reaction-field runs need no FFT: fftpack; AVX2 runs on any host
# CPU of these machines; static, so the package needs only libcufft and the
# system's C libraries.
set -euo pipefail
src=${1:?GROMACS source}
work=${2:?work directory}
out=${3:?output .tar.xz}
mkdir -p "$work/build"
cmake -G Ninja -S "$src" -B "$work/build" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ \
  -DGMX_GPU=CUDA -DCUDAToolkit_ROOT=/usr/local/cuda -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc \
  -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DGMX_FFT_LIBRARY=fftpack -DGMX_BUILD_OWN_FFTW=OFF \
  -DGMX_SIMD=AVX2_256 -DGMX_HWLOC=OFF -DGMX_OPENMP=ON -DGMX_MPI=OFF -DGMX_THREAD_MPI=ON \
  -DBUILD_SHARED_LIBS=OFF -DGMX_PREFER_STATIC_LIBS=ON -DGMXAPI=OFF -DGMX_INSTALL_NBLIB_API=OFF \
  -DGMX_USE_PLUMED=OFF -DGMX_NNPOT=OFF -DGMX_USE_HDF5=OFF \
  -DGMX_EXTERNAL_BLAS=OFF -DGMX_EXTERNAL_LAPACK=OFF -DGMX_BUILD_TARBALL=ON -DGMX_BUILD_MANUAL=OFF \
  -DGMX_DEVELOPER_BUILD=OFF -DBUILD_TESTING=OFF -DGMX_BUILD_UNITTESTS=OFF \
  -DCMAKE_EXE_LINKER_FLAGS="-static-libstdc++ -static-libgcc" \
  -DCMAKE_INSTALL_PREFIX="$work/install"
ninja -C "$work/build" -j "$(nproc)" gmx
ninja -C "$work/build" install
strip "$work/install/bin/gmx"
# The CUDA libraries where the GPU machine has them (lib64), not only where this one does.
patchelf --set-rpath '$ORIGIN/../lib:/usr/local/cuda/lib64:/usr/local/cuda/lib:/usr/local/cuda/targets/x86_64-linux/lib' \
  "$work/install/bin/gmx"
rm -rf "$work/install/lib" "$work/install/lib64"
"$work/install/bin/gmx" --version | grep -E '^GROMACS version'
tar -C "$work/install" -cJf "$out" .
echo "wrote $out ($(du -h "$out" | cut -f1))"
