#!/usr/bin/env bash
# Installs what is missing, builds, and runs the main job: haloex-md on all
# local GPUs (one MPI rank per GPU; the nvshmem transport when there are
# several), or the CPU reference (4 virtual ranks in one process) when there
# is no GPU. Extra arguments go to haloex-md, e.g. scripts/run.sh --steps 5000.
set -euo pipefail
# Never NVLink multicast, whatever the caller's environment says.
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${HALOEX_BUILD_DIR:-$root/build}"
"$root/scripts/setup.sh"

gpus=0
if command -v nvidia-smi >/dev/null 2>&1; then
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
fi
md="$build/bin/haloex-md"
if [ "$gpus" -ge 2 ] && command -v mpirun >/dev/null 2>&1; then
  echo "[haloex run] $gpus GPUs: mpirun -np $gpus haloex-md $*"
  asroot=(); [ "$(id -u)" -eq 0 ] && asroot=(--allow-run-as-root)
  # One rank per GPU, each with room for NVSHMEM's proxy thread (--bind-to none).
  exec mpirun "${asroot[@]}" -np "$gpus" --bind-to none "$md" "$@"
elif [ "$gpus" -eq 1 ]; then
  echo "[haloex run] 1 GPU: haloex-md $*"
  exec "$md" "$@"
else
  echo "[haloex run] no GPU: the CPU reference path (virtual ranks in one process)"
  exec "$md" --device cpu "$@"
fi
