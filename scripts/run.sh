#!/usr/bin/env bash
# The quick start: installs what haloex-md needs and is missing, builds
# haloex-md alone (build-run/, tests off: scripts/setup.sh run) and runs the
# main job: haloex-md on all local GPUs (one MPI rank per GPU; the transport
# chosen by measuring when there are several), or the CPU reference (4 virtual
# ranks in one process) when there is no GPU. Extra arguments go to haloex-md,
# e.g. scripts/run.sh --steps 5000. Tests, examples and tools: scripts/test.sh.
# Environment: HALOEX_RUN_BUILD_DIR (default build-run), and those of setup.sh.
set -euo pipefail
# Never NVLink multicast, whatever the caller's environment says.
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${HALOEX_RUN_BUILD_DIR:-$root/build-run}"
HALOEX_RUN_BUILD_DIR="$build" "$root/scripts/setup.sh" run
say() { printf '[haloex run] %s\n' "$*"; }

gpus=0
if command -v nvidia-smi >/dev/null 2>&1; then
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
fi
md="$build/bin/haloex-md"
cmd=("$md" "$@")
if [ "$gpus" -ge 2 ] && command -v mpirun >/dev/null 2>&1; then
  say "$gpus GPUs: mpirun -np $gpus haloex-md $*"
  asroot=(); [ "$(id -u)" -eq 0 ] && asroot=(--allow-run-as-root)
  # One rank per GPU, each with room for NVSHMEM's proxy thread (--bind-to none).
  cmd=(mpirun "${asroot[@]}" -np "$gpus" --bind-to none "$md" "$@")
elif [ "$gpus" -ge 1 ]; then
  [ "$gpus" -ge 2 ] && say "$gpus GPUs but no mpirun (install OpenMPI for one rank per GPU): one GPU"
  say "1 GPU: haloex-md $*"
else
  say "no GPU: the CPU reference path (virtual ranks in one process): haloex-md --device cpu $*"
  cmd=("$md" --device cpu "$@")
fi
# --help and --version: haloex-md's answer alone.
for a in "$@"; do
  case "$a" in -h | --help | --version) exec "${cmd[@]}" ;; esac
done
set +e
"${cmd[@]}"
status=$?
set -e
# Where the run's log went (haloex-md writes md.log unless told otherwise).
log="md.log"
args=("$@")
for i in "${!args[@]}"; do
  case "${args[$i]}" in
    --log=*) log="${args[$i]#--log=}" ;;
    --log) log="${args[$((i + 1))]:-md.log}" ;;
  esac
done
case "$log" in /*) ;; none) log="none (--log none)" ;; *) log="$PWD/$log" ;; esac
echo
if [ "$status" -eq 0 ]; then
  say "done. The run's log: $log"
else
  say "haloex-md stopped with exit status $status (its message is above; the log, if one was started: $log)"
fi
say "haloex-md is $md (--help lists its options)."
say "Next: docs/running.md (GPUs and mpirun, outputs, restarts); tests: ./scripts/test.sh"
exit "$status"
