#!/usr/bin/env bash
# One device call that runs the same ctest selection on several trees (a
# bisection of a GPU test across commits):
#   scripts/device/ctest_on_trees.sh 'CTEST_REGEX' TREE.tar.gz...
# Pack each tree here first (git archive --format=tar.gz -o .devsrc/<commit>.tar.gz <commit>).
# Builds every tree at once (the cores shared; BUILD_TARGETS="a b" builds only
# those targets, default all), then runs the selection on
# each in turn under MPS, one test at a time; a line per tree in $OUT/summary.txt,
# the logs beside it.
set -uo pipefail
regex=${1:?usage: ctest_on_trees.sh CTEST_REGEX TREE.tar.gz...}
shift
out="${OUT:-$PWD/out}"
summary="$out/summary.txt"
mkdir -p "$out"
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog
jobs=$(($(nproc) / $# > 1 ? $(nproc) / $# : 1))
trees=()
for tarball in "$@"; do
  name=$(basename "$tarball" .tar.gz)
  dir=/root/trees/$name
  mkdir -p "$dir"
  tar xzf "$tarball" -C "$dir"
  trees+=("$dir")
  (cmake -S "$dir" -B "$dir/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
     >"$out/$name-configure.log" 2>&1 && cmake --build "$dir/build" -j "$jobs" ${BUILD_TARGETS:+--target $BUILD_TARGETS} >"$out/$name-build.log" 2>&1
   echo $? >"$out/$name-build.rc") &
done
wait
mkdir -p /tmp/mps /tmp/mpslog
nvidia-cuda-mps-control -d 2>/dev/null || true
for dir in "${trees[@]}"; do
  name=$(basename "$dir")
  if [ "$(cat "$out/$name-build.rc")" != 0 ]; then
    echo "$name: build FAILED ($(grep -m1 -E 'error' "$out/$name-build.log" | cut -c1-160))" | tee -a "$summary"
    continue
  fi
  (cd "$dir/build" && ctest --output-on-failure --timeout 300 -j 1 -R "$regex" >"$out/$name-ctest.log" 2>&1)
  echo "$name: rc=$? $(grep -E 'tests passed|tests failed' "$out/$name-ctest.log")" | tee -a "$summary"
done
echo quit | nvidia-cuda-mps-control 2>/dev/null || true
