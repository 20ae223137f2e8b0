#!/usr/bin/env bash
# One device call that checks merged work against the tree before it:
#   scripts/device/verify_merge.sh OLD_TREE.tar.gz STAGE...
# Builds this tree (stage build), builds haloex-jacobi of OLD_TREE in the
# background meanwhile, runs the STAGEs (with JACOBI_OLD_BIN set to the old
# binary once it is built, for the A/B of stage jacobi-api), and leaves every
# log in $OUT. Pack both trees here first: scripts/device/pack.sh, then
#   git archive --format=tar.gz -o .devsrc/old.tar.gz <commit before the merge>
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
old_tree=${1:?usage: verify_merge.sh OLD_TREE.tar.gz STAGE...}
shift
out="${OUT:-$root/out}"
old=/root/hx-old
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
mkdir -p "$out" "$old"
bash "$root/scripts/device/run.sh" build
(
  tar xzf "$old_tree" -C "$old" &&
    cmake -S "$old" -B "$old/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
      >"$out/old-configure.log" 2>&1 &&
    nice cmake --build "$old/build" --target haloex-jacobi -j "$(nproc)" >"$out/old-build.log" 2>&1
  echo $? >"$out/old-build.rc"
) &
builder=$!
for stage in "$@"; do
  if [ "$stage" = jacobi-api ]; then
    wait "$builder"
    echo "old haloex-jacobi build rc=$(cat "$out/old-build.rc")" >>"$out/summary.txt"
    JACOBI_OLD_BIN="$old/build/bin/haloex-jacobi" bash "$root/scripts/device/run.sh" jacobi-api
  else
    bash "$root/scripts/device/run.sh" "$stage"
  fi
done
wait
