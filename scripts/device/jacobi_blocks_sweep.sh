#!/usr/bin/env bash
# The fused Jacobi kernel's time per iteration against its block count, on
# 2 ranks sharing the GPU under MPS (after stage build):
#   scripts/device/jacobi_blocks_sweep.sh [SIZES] [MAX_BLOCKS...]
# e.g. jacobi_blocks_sweep.sh "1024 4096" 0 264 396 528 792; one line per run
# in $OUT/summary.txt.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${OUT:-$root/out}"
sizes=${1:-"1024 2048 4096"}
shift || true
blocks=("$@")
[ ${#blocks[@]} -gt 0 ] || blocks=(0 264 396 528 792)
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog
mkdir -p "$out" /tmp/mps /tmp/mpslog
# The one launcher line, bench/bench_common.py's (as run.sh takes it).
read -r -a mpirun_np <<<"$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import bench_common as b; print(b.MPIRUN, b.MPIRUN_ARGS, "-np")' "$root/bench")"
nvidia-cuda-mps-control -d 2>/dev/null || true
echo "== fused Jacobi: time per iteration against --max-blocks (2 ranks, MPS)" | tee -a "$out/summary.txt"
for n in $sizes; do
  for mb in "${blocks[@]}"; do
    log="$out/jacobi-blocks-$n-$mb.log"
    timeout 90 "${mpirun_np[@]}" 2 "$root/build-gpu/bin/haloex-jacobi" \
      --per-rank --nx "$n" --ny "$n" --niter 500 --warmup 20 --repeat 3 --allow-shared-gpus --transport nvshmem \
      --max-blocks "$mb" >"$log" 2>&1
    printf '  %s^2 --max-blocks %s: %s | %s\n' "$n" "$mb" \
      "$(grep -E '^nvshmem ' "$log" | cut -c1-70)" "$(grep -o 'fused kernel: [0-9]* blocks[^,]*' "$log" | head -1)" \
      | tee -a "$out/summary.txt"
  done
done
echo quit | nvidia-cuda-mps-control 2>/dev/null || true
