#!/usr/bin/env bash
# Everything haloex does on the GPU machine, in one call of the device tool:
#   scripts/device/run.sh STAGE...
#   stages: build build-other pack-out stress-tma multi-gpu multi-gpu-quick multi-gpu-1 multi-gpu-2 multi-gpu-3 multi-gpu-4 multi-gpu-ab strong-scaling exchange-account exchange-ab search-ab signals-ab forward-first-ab cell-order-graph-ab graph-upload-ab halo-records-check halo-records-quick halo-records-ab md-nvshmem-tests home-stores-check home-stores-ab home-signals-ab home-signals-quick mutation-bind-advance fused-kernels-check steps-per-graph steps-per-graph-ab kernel-trace step-tests fused-halo multi-rank-nstlist fused-update-large short-list-radius entry-length outer-radius roofline kernel-ab kernel-variants md-estimate test test-gpu ctest-select mps-refusal switch-refusals md-ab-bins ablation-check cli-refusals ab syncs search-tests list-search search-timeline search-trace profile-search rdc-cost search nve-drift nve-sizes short-lists fused-update md-variants conserve sanitize-search gromacs gromacs-dd stress stress-gpus exchange-timing timeout mps-nan md-check md-quality auto-select
#           md-single md-dd nstlist-fit
#           md-scaling md-stability sanitize jacobi-tiles jacobi jacobi-api commbench
# On two or more GPUs (issue 18, 13): build test-gpu md-check stress-gpus md-dd jacobi commbench runs
# On x2/x4/x8: build multi-gpu (issue 33's measurements first, in priority order, then the rest),
#   or its parts multi-gpu-1 .. multi-gpu-4, one device call each
# nccl-device beside every transport (md-check compares its energies with the others).
# Run committed code: scripts/device/pack.sh here, carry .devsrc, and there
#   mkdir -p /root/hx && tar xzf .devsrc/src.tar.gz -C /root/hx &&
#   cp .devsrc/commit /root/hx/.commit && cd /root/hx && bash scripts/device/run.sh STAGE...
# Logs and results go to $OUT (or ./out); with more than 8 files there, they
# end up in $OUT/results.tar.gz beside summary.txt (pack_out, at the end). Stages run
# in the order given; a failing stage is reported and the next one still runs.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${OUT:-$root/out}"
mkdir -p "$out"
build="$root/build-gpu"
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c GPU || true)
summary="$out/summary.txt"
note() { printf '%s\n' "$*" | tee -a "$summary"; }
# "N OK, M FAILED lines (any rank), K SKIPPED" of a GoogleTest log; under
# mpirun another rank's failure reads "[rank R] ... failed at".
gtest_counts() {
  echo "$(grep -E -c '^\[       OK' "$1") OK, $(grep -E -c '^\[  FAILED|^\[rank [0-9]+\] .* failed at' "$1") FAILED lines (any rank), $(grep -E -c '^\[  SKIPPED' "$1") SKIPPED"
}
# The one launcher line, bench/bench_common.py's (MPIRUN, MPIRUN_ARGS): the stages' own runs and the bench drivers' alike.
read -r -a mpirun_np <<<"$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import bench_common as b; print(b.MPIRUN, b.MPIRUN_ARGS, "-np")' "$root/bench")"

start_mps() {
  mkdir -p /tmp/mps /tmp/mpslog
  nvidia-cuda-mps-control -d 2>/dev/null && note "MPS started" || note "MPS not started (already running?)"
}
stop_mps() { echo quit | nvidia-cuda-mps-control 2>/dev/null || true; }

# compute-sanitizer TOOL on the gtest binary TEST (build-gpu/bin/tests) with
# --gtest_filter=FILTER: log sanitize-TAG-TOOL.log, a note "LABEL (TOOL)"
# with the exit status and the summary line. TIMEOUT: seconds (300).
sanitize_test() {
  local tool=$1 test=$2 filter=$3 label=$5 log="$out/sanitize-$4-$1.log"
  timeout "${6:-300}" compute-sanitizer --tool "$tool" --error-exitcode 9 "$build/bin/tests/$test" \
    --gtest_filter="$filter" >"$log" 2>&1
  note "  $label ($tool): rc=$? $(grep -m1 -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log")"
}

stage_build() {
  note "== build ($(nproc) cores, $ngpu GPU(s): $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1))"
  if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
      >"$out/configure.log" 2>&1 || { tail -40 "$out/configure.log"; note "configure FAILED"; return 1; }
    sed -n '/haloex .* configuration/,/executables/p' "$out/configure.log" | tee -a "$summary"
  fi
  local t0=$SECONDS
  # BUILD_TARGETS: only these (a short lease), e.g. "haloex-halo-stress haloex-md".
  # shellcheck disable=SC2086
  cmake --build "$build" -j "$(nproc)" ${BUILD_TARGETS:+--target $BUILD_TARGETS} >"$out/build.log" 2>&1 \
    || { grep -E -A8 'error' "$out/build.log" | head -60; note "build FAILED"; return 1; }
  note "build ok ($((SECONDS - t0)) s)"
}

stage_test() {
  note "== ctest (gpu + unit)"
  start_mps
  (cd "$build" && ctest --output-on-failure --timeout 300 -j 4 -L 'gpu|unit' >"$out/ctest.log" 2>&1)
  local rc=$?
  grep -E 'tests passed|tests failed|\*\*\*Failed|Timeout|Not Run' "$out/ctest.log" | tee -a "$summary"
  [ $rc -eq 0 ] || grep -E -B5 -A30 'FAILED|Failure' "$out/ctest.log" | head -120
  stop_mps
}

# The ctest tests whose names match CTEST_R (a regex), under MPS;
# CTEST_REPEAT=N runs each up to N times (until one fails: flaky tests).
stage_ctest_select() {
  note "== ctest -R '${CTEST_R:?set CTEST_R}'${CTEST_REPEAT:+ (each up to $CTEST_REPEAT times, until it fails)}"
  start_mps
  (cd "$build" && ctest --output-on-failure --timeout 300 -j "${CTEST_J:-4}" -R "$CTEST_R" \
    ${CTEST_REPEAT:+--repeat until-fail:$CTEST_REPEAT} >"$out/ctest-select.log" 2>&1)
  local rc=$?
  grep -E 'tests passed|tests failed|\*\*\*Failed|Timeout|Not Run|Skipped' "$out/ctest-select.log" | tee -a "$summary"
  # ctest exits 0 when nothing matches: say so (gtest cases are named Suite.Case, not by executable).
  grep -q 'No tests were found' "$out/ctest-select.log" && note "  no test matched '$CTEST_R' (names: ctest -N)"
  [ $rc -eq 0 ] || grep -E -B5 -A30 'FAILED|Failure' "$out/ctest-select.log" | head -80
  stop_mps
}

# Only the GPU-labelled tests (the unit label runs on any machine; CI runs it).
stage_test_gpu() {
  note "== ctest -L gpu"
  start_mps
  (cd "$build" && ctest --output-on-failure --timeout 300 -j "${CTEST_J:-4}" -L gpu >"$out/ctest-gpu.log" 2>&1)
  local rc=$?
  grep -E 'tests passed|tests failed|\*\*\*Failed|Timeout|Not Run' "$out/ctest-gpu.log" | tee -a "$summary"
  [ $rc -eq 0 ] || grep -E -B5 -A30 'FAILED|Failure' "$out/ctest-gpu.log" | head -150
  stop_mps
}

stress_one() {  # np grid transport path steps [tag [more options of haloex-halo-stress]]
  local np=$1 grid=$2 transport=$3 path=$4 steps=$5 tag=${6:-}
  shift $(($# < 6 ? $# : 6))
  local log="$out/stress-$transport-$path-$grid-$np${tag:+-$tag}.log"
  timeout 300 "${mpirun_np[@]}" "$np" "$build/bin/haloex-halo-stress" --allow-shared-gpus --transport "$transport" \
    --nvshmem-path "$path" --grid "$grid" --steps "$steps" --repartition-every 500 --atoms "${STRESS_ATOMS:-6000}" \
    --wait-timeout 20 "$@" >"$log" 2>&1
  local rc=$?
  note "stress np=$np $grid $transport/$path${tag:+ ($tag)}: rc=$rc $(grep -E 'PASSED|FAILED|SKIPPED' "$log" | head -1 | cut -c1-160)"
  [ $rc -eq 0 ] || [ $rc -eq 77 ] || tail -15 "$log"
}

stage_stress() {
  note "== stress (every halo element checked every step)"
  start_mps
  local steps=${STRESS_STEPS:-3000}
  local np2=2 t path
  for t in ${STRESS_TRANSPORTS:-nvshmem staged ipc nccl}; do
    if [ "$t" = nvshmem ]; then
      for path in direct tma put; do
        stress_one $np2 2x1x1 nvshmem $path "$steps"
        stress_one 4 4x1x1 nvshmem $path "$steps"
        stress_one 4 2x2x1 nvshmem $path "$steps"
        stress_one 4 1x2x2 nvshmem $path "$steps"
      done
    else
      stress_one $np2 2x1x1 $t auto 500
      stress_one 4 4x1x1 $t auto 500
      stress_one 4 2x2x1 $t auto 500
      stress_one 4 1x2x2 $t auto 500
    fi
  done
  stop_mps
}

# The nvshmem tma path on 2 ranks sharing a GPU (MPS): STRESS_TMA_REPEATS
# runs each of the fused exchange alone and replayed from a CUDA graph, one
# at a time, the direct path once beside them, then compute-sanitizer
# memcheck on each rank of a short tma run (the graph's illegal address of
# ctest -L gpu under -j4 on 2026-12-05).
stage_stress_tma() {
  note "== stress, nvshmem tma on 2 ranks (MPS), ${STRESS_TMA_REPEATS:-3} runs each, then memcheck"
  start_mps
  local k graph log
  for k in $(seq "${STRESS_TMA_REPEATS:-3}"); do
    stress_one 2 2x1x1 nvshmem tma 3000 "run$k"
    stress_one 2 2x1x1 nvshmem tma 3000 "run$k-graph" --cuda-graph
  done
  stress_one 2 2x1x1 nvshmem direct 3000
  for graph in "" --cuda-graph; do
    log="$out/stress-tma-memcheck${graph:+-graph}.log"
    timeout 300 "${mpirun_np[@]}" 2 compute-sanitizer --tool memcheck --error-exitcode 9 --print-limit 20 \
      "$build/bin/haloex-halo-stress" --allow-shared-gpus --transport nvshmem --nvshmem-path tma --grid 2x1x1 \
      --steps "${STRESS_TMA_MEMCHECK_STEPS:-600}" --repartition-every 500 --atoms 6000 --wait-timeout 120 $graph >"$log" 2>&1
    note "  tma${graph:+ graph} memcheck: rc=$? $(grep -E -m1 'ERROR SUMMARY' "$log") $(grep -E -m1 'PASSED|FAILED' "$log" | cut -c1-120)"
  done
  stop_mps
}

# The fused exchange kernels after a change to them: their GPU tests (the
# load/store kernels alone, the device transports and the MD engine on 2 and
# 4 ranks under MPS), compute-sanitizer memcheck and racecheck of the
# load/store test, and memcheck of each rank of a short nvshmem direct run
# of haloex-halo-stress on 2 ranks. ~3 min.
stage_fused_kernels_check() {
  CTEST_R='test_fused_exchange_loadstore|test_transport_device_np[24]|test_md_transports_gpu_np[24]' stage_ctest_select
  note "== compute-sanitizer on the fused exchange kernels"
  sanitize_test memcheck test_fused_exchange_loadstore '*' fused-loadstore "load/store fused kernels"
  sanitize_test racecheck test_fused_exchange_loadstore '*' fused-loadstore "load/store fused kernels"
  start_mps
  local log="$out/fused-direct-memcheck.log"
  timeout 300 "${mpirun_np[@]}" 2 compute-sanitizer --tool memcheck --error-exitcode 9 --print-limit 20 \
    "$build/bin/haloex-halo-stress" --allow-shared-gpus --transport nvshmem --nvshmem-path direct --grid 2x1x1 \
    --steps 600 --repartition-every 500 --atoms 6000 --wait-timeout 120 --cuda-graph >"$log" 2>&1
  note "  nvshmem direct (2 ranks, graph) memcheck: rc=$? $(grep -E -m1 'ERROR SUMMARY' "$log") $(grep -E -m1 'PASSED|FAILED' "$log" | cut -c1-120)"
  stop_mps
}

# One rank per GPU on 4- and 8-GPU machines (the 4/8-GPU issue): every
# transport and path on the grids that need that many GPUs.
stage_stress_gpus() {
  note "== stress, one rank per GPU ($ngpu GPUs): nvshmem paths, nccl-device, the CPU-orchestrated ones"
  # 24 000 atoms: a 6.2 nm box, so 8x1x1 slabs (0.78 nm) need 2 pulses of rlist 1 nm.
  local grids=() grid np t path
  export STRESS_ATOMS=${STRESS_ATOMS:-24000}
  [ "$ngpu" -ge 2 ] && grids+=(2:2x1x1)
  [ "$ngpu" -ge 4 ] && grids+=(4:4x1x1 4:2x2x1)
  [ "$ngpu" -ge 8 ] && grids+=(8:2x2x2 8:4x2x1 8:8x1x1)
  if [ ${#grids[@]} -eq 0 ]; then
    note "stress-gpus: SKIPPED, needs 2 or more GPUs ($ngpu visible)"
    return 0
  fi
  for grid in "${grids[@]}"; do
    np=${grid%%:*}
    for path in direct tma put; do stress_one "$np" "${grid#*:}" nvshmem $path "${STRESS_STEPS:-3000}"; done
    stress_one "$np" "${grid#*:}" nccl-device auto "${STRESS_STEPS:-3000}"
    for t in staged ipc nccl; do stress_one "$np" "${grid#*:}" $t auto 500; done
  done
}

# Strong scaling over 1, 2, 4, 8 GPUs (as many as visible, or SCALING_RANKS), all transports.
stage_md_scaling() {
  note "== haloex-md strong scaling (bench/md_bench.py scaling)"
  python3 "$root/bench/md_bench.py" scaling --build "$build" --out "$out" ${QUICK:+--quick} \
    ${DD_SIZES:+--sizes $DD_SIZES} ${DD_VARIANTS:+--variants $DD_VARIANTS} \
    ${SCALING_RANKS:+--rank-counts $SCALING_RANKS} 2>&1 | tee -a "$summary"
  local record
  record=$(ls -t "$out"/md-scaling-*.json 2>/dev/null | head -1)
  # Beside the record, so that the plot comes back with it.
  [ -n "$record" ] && python3 "$root/bench/plot_scaling.py" "$record" --out "${record%.json}.png" 2>&1 | tee -a "$summary"
}

# Issue 33's multi-GPU measurement for whatever kind is lent (x2, x4, x8), in
# priority order, every grid's record written as soon as its runs end (a
# cut-short lease keeps them; bench/md_bench.py dd also rewrites its record
# after every size): pass 1, the essentials -- nvshmem fused against the
# CPU-orchestrated transports that matter (nccl with graphs, ipc), and
# nvshmem with the home atoms in cell order (--sort-atoms 1), at 11 250
# and 22 500 atoms per GPU on the first grid of each GPU count; pass 2,
# every grid the GPUs allow -- 1-D (2x1x1, 4x1x1), 2-D (2x2x1, 4x2x1), 3-D
# (2x2x2) and two pulses (8x1x1) -- with nvshmem fused (direct, tma),
# without CUDA graphs and per pulse (what graphs and fusion each
# contribute), staged, nccl without graphs and nccl-device. Each run is set
# against one GPU with the same system. Records packed into
# strong-scaling.tar.gz. SS_SIZES (per GPU), SS_GRIDS ("4:2x2x1 ..."),
# SS_PASSES ("1", "2" or "1 2") override; SS_RAN1=1: pass 1 of this series
# already ran in this lease (its records are kept and packed again).
strong_scaling_grids() {
  local specs=(2:2x1x1)
  [ "$ngpu" -ge 4 ] && specs+=(4:4x1x1 4:2x2x1)
  [ "$ngpu" -ge 8 ] && specs+=(8:2x2x2 8:4x2x1 8:8x1x1)
  [ -n "${SS_GRIDS:-}" ] && read -r -a specs <<<"$SS_GRIDS"
  printf '%s\n' "${specs[@]}"
}
stage_strong_scaling() {
  note "== strong scaling at 11 250 atoms per GPU ($ngpu GPUs; bench/md_bench.py dd per grid)"
  [ "$ngpu" -ge 2 ] || { note "  needs two or more GPUs: $ngpu visible"; return 1; }
  local essentials="nvshmem/direct,nccl+graphs=1,ipc,nvshmem/direct+unsorted+unfused-update"
  local rest="nvshmem/tma,nvshmem/direct+graphs=0,nvshmem/direct+per-pulse,staged,nccl,nccl-device"
  local specs spec n grid sizes per dir pass variants first seen ran1=0
  mapfile -t specs < <(strong_scaling_grids)
  [[ " ${SS_PASSES:-1 2} " == *" 1 "* || -n "${SS_RAN1:-}" ]] && ran1=1
  # A later pass of the same series (SS_RAN1) adds to the records and the tarball.
  [ -n "${SS_RAN1:-}" ] || rm -rf "$out/strong-scaling"
  for pass in ${SS_PASSES:-1 2}; do
    seen=""
    for spec in "${specs[@]}"; do
      n=${spec%%:*}; grid=${spec#*:}; sizes=""
      first=0; [[ " $seen " == *" $n "* ]] || first=1
      seen+=" $n"
      # Pass 1: the first grid of each GPU count, the essentials; pass 2: everything not measured yet.
      if [ "$pass" = 1 ]; then
        [ "$first" = 1 ] || continue
        variants=$essentials
      elif [ "$first" = 1 ] && [ "$ran1" = 1 ]; then
        variants=$rest
      else
        variants="$essentials,$rest"
      fi
      for per in ${SS_SIZES:-11250 22500}; do sizes+="${sizes:+,}$((per * n))"; done
      # The 11 250-atom system itself once, on two GPUs: its one-GPU step is the per-GPU reference.
      if [ "$n" = 2 ] && [ "$first" = 1 ] && [ -z "${SS_SIZES:-}" ] && { [ "$pass" = 1 ] || [ "$ran1" = 0 ]; }; then
        sizes="11250,$sizes"
      fi
      dir="$out/strong-scaling/pass$pass-$n-$grid"
      note "  pass $pass: $n GPUs, grid $grid, $sizes atoms: $variants"
      python3 "$root/bench/md_bench.py" dd --build "$build" --ranks "$n" --grid "$grid" --sizes "$sizes" \
        --variants "$variants" --out "$dir" ${QUICK:+--quick} 2>&1 | tee -a "$summary"
      (cd "$out" && tar czf strong-scaling.tar.gz strong-scaling)
    done
  done
}

# Issue 33 part 1: the multi-rank step's account from device timestamps --
# the step's parts and the exchange kernels' own (--timeline-parts: stores,
# signal, the wait for the peer, clearing, accumulation per pulse) -- at
# 11 250 and 22 500 atoms per GPU, nvshmem direct with and without the home
# atoms in cell order: 2x1x1 (one pulse), then 2x2x1 (two pulses, the second
# forwarding what the first brought: the dependency waits) where 4 GPUs are
# lent. On fewer GPUs than ranks the ranks share them under MPS (not a
# multi-GPU figure: the timestamps still split the kernels). ~4 min.
stage_exchange_account() {
  local spec ranks grid sizes shared mps
  for spec in 2:2x1x1:22500,45000 4:2x2x1:45000,90000; do
    IFS=: read -r ranks grid sizes <<<"$spec"
    shared=(); mps=0
    if [ "$ngpu" -lt "$ranks" ]; then shared=(--shared-gpus); mps=1; start_mps; fi
    note "== the multi-rank step's account (--timeline-parts), $ranks ranks $grid on $([ $mps = 1 ] && echo "one GPU under MPS" || echo "$ranks GPUs")"
    python3 "$root/bench/md_bench.py" dd --build "$build" --ranks "$ranks" --grid "$grid" --sizes "$sizes" \
      --variants nvshmem/direct+unsorted+unfused-update,nvshmem/direct --timeline-parts "${shared[@]}" \
      --out "$out/exchange-account-$grid" ${QUICK:+--quick} 2>&1 | tee -a "$summary"
    [ $mps = 1 ] && stop_mps
  done
  return 0
}

# Issue 33: an exchange-kernel change A/B-measured where it acts: the other
# commit's haloex-md (pack.sh --other COMMIT; built here by build-other)
# against this build, nvshmem direct and tma, alternating, 3 repeats: 2x1x1
# on 2 ranks (one pulse) and 2x2x1 on 4 (two pulses, the second forwarding
# the first's atoms), sharing the GPUs under MPS where they are fewer. ~7 min.
stage_exchange_ab() {
  stage_build_other || return 1
  MD_AB_OTHER=/tmp/haloex-md-A MD_AB_TRANSPORTS="nvshmem:direct nvshmem:tma" MD_AB_REPEATS=3 \
    MD_AB_RANKS=2 MD_AB_GRID=2x1x1 MD_AB_ATOMS="22500 45000" stage_md_ab_bins
  MD_AB_OTHER=/tmp/haloex-md-A MD_AB_TRANSPORTS="nvshmem:direct nvshmem:tma" MD_AB_REPEATS=3 \
    MD_AB_RANKS=4 MD_AB_GRID=2x2x1 MD_AB_ATOMS="45000 90000" stage_md_ab_bins
}

# Issue 33 part 3: the search step of two ranks against the other commit's
# (pack.sh --other COMMIT, e.g. one before a search-step change), nvshmem
# direct on 2x1x1 under MPS at 11 250 and 22 500 atoms per rank, nstlist 50
# (40 search steps a run), alternating, 3 repeats (~3 min).
stage_search_ab() {
  stage_build_other || return 1
  MD_AB_OTHER=/tmp/haloex-md-A MD_AB_TRANSPORTS="nvshmem:direct" MD_AB_REPEATS=3 MD_AB_NSTLIST=50 \
    MD_AB_RANKS=2 MD_AB_GRID=2x1x1 MD_AB_ATOMS="22500 45000" stage_md_ab_bins
}

# Issue 33: signals per block (HALOEX_EXCHANGE_SIGNALS=block, B) against one
# signal per pulse (A), the same build, as exchange-ab measures a commit. ~5 min.
stage_signals_ab() {
  MD_AB_OTHER="$build/bin/haloex-md" MD_AB_B_ENV=HALOEX_EXCHANGE_SIGNALS=block MD_AB_REPEATS=3 \
    MD_AB_TRANSPORTS="nvshmem:direct nvshmem:tma" MD_AB_RANKS=2 MD_AB_GRID=2x1x1 MD_AB_ATOMS="22500 45000" \
    stage_md_ab_bins
  MD_AB_OTHER="$build/bin/haloex-md" MD_AB_B_ENV=HALOEX_EXCHANGE_SIGNALS=block MD_AB_REPEATS=3 \
    MD_AB_TRANSPORTS="nvshmem:direct nvshmem:tma" MD_AB_RANKS=4 MD_AB_GRID=2x2x1 MD_AB_ATOMS="45000 90000" \
    stage_md_ab_bins
}

# Issue 33: the forward exchange's kernel launched before the local force
# kernel, which waits for its launch-completion event (the default, A), against
# the local kernel first (HALOEX_FORWARD_FIRST=0, B), the same build: the GPU
# tests (test_md_transports_gpu on 2 and 4 ranks, both orders), then two ranks
# on 2x1x1 at 22 500 atoms with half the SMs each (the estimate's setting) and
# without a cap, and four ranks on 2x2x1 at 45 000 (two pulses), 3 alternating
# repeats; then the default's kernel trace (the forward's start in every
# step). ~3 min.
stage_forward_first_ab() {
  CTEST_R='test_md_transports_gpu_np[24]' stage_ctest_select
  MD_AB_B_ENV=HALOEX_FORWARD_FIRST=0 switch_ab_runs
  TRACE_SM=50 TRACE_SIZES=11250 TRACE_RANK_SIZES=22500 stage_kernel_trace
}

# An issue-33 switch's A/B inside one build (B with MD_AB_B_ENV or
# MD_AB_B_ARGS as the caller sets them): two ranks 2x1x1 at 22 500 atoms with
# half the SMs each (the estimate's setting) and without a cap, then four
# ranks 2x2x1 at 45 000 (two pulses), nvshmem direct, 3 alternating repeats.
switch_ab_runs() {
  local sm
  for sm in 50 ""; do
    MD_AB_OTHER="$build/bin/haloex-md" MD_AB_REPEATS=3 MD_AB_STEPS=3000 MD_AB_TRANSPORTS="nvshmem:direct" \
      MD_AB_RANKS=2 MD_AB_GRID=2x1x1 MD_AB_ATOMS=22500 MD_AB_SM="$sm" stage_md_ab_bins
  done
  MD_AB_OTHER="$build/bin/haloex-md" MD_AB_REPEATS=3 MD_AB_STEPS=3000 MD_AB_TRANSPORTS="nvshmem:direct" \
    MD_AB_RANKS=4 MD_AB_GRID=2x2x1 MD_AB_ATOMS=45000 stage_md_ab_bins
}

# The update storing the next forward's home entries into the receivers
# (HALOEX_HOME_STORES, on by default: B) against the forward storing them
# itself (=0: A), the same build: the transport tests on 2 and 4 ranks (and
# the home-stores case on 8: 2x2x2, three pulses with forwarded entries),
# the MD transports against the CPU reference, memcheck of two ranks' MD
# steps through the table (stage home-stores-check, ~4 min), then
# switch_ab_runs (stage home-stores-ab, ~4 min).
# The home-stores case of test_transport_device (every device transport) on
# $1 ranks under the running MPS, into log $2, within $3 seconds (default
# 120); returns its rc.
run_home_stores_case() {
  timeout "${3:-120}" "${mpirun_np[@]}" "$1" "$build/bin/tests/test_transport_device" \
    --gtest_filter='*ForwardAfterHomeStores*' --gtest_color=no >"$2" 2>&1
}
stage_home_stores_check() {
  CTEST_R='test_transport_device_np[24]|test_md_transports_gpu_np[24]|test_fused_exchange_loadstore' stage_ctest_select
  start_mps
  local log="$out/home-stores-np8.log"
  run_home_stores_case 8 "$log" 300
  note "  the home-stores case (with and without the storing kernel's signals) on 8 ranks: rc=$? $(gtest_counts "$log")"
  # Without CUDA graphs, then with them but without the explicit upload
  # after a search (HALOEX_GRAPH_UPLOAD=0): with it compute-sanitizer crashes
  # inside cudaGraphUpload on an H100 (results.md, Known problems).
  local graphs
  for graphs in 0 1; do
    log="$out/home-stores-md-memcheck-graphs$graphs.log"
    HALOEX_GRAPH_UPLOAD=0 timeout 300 "${mpirun_np[@]}" 2 -x HALOEX_GRAPH_UPLOAD compute-sanitizer --tool memcheck \
      --error-exitcode 9 --print-limit 20 \
      "$build/bin/haloex-md" --allow-shared-gpus --quiet --log none --transport nvshmem --nvshmem-path direct \
      --grid 2x1x1 --atoms 6000 --steps 120 --nstlist 20 --cuda-graphs $graphs >"$log" 2>&1
    note "  haloex-md, 2 ranks, home stores, --cuda-graphs $graphs (memcheck): rc=$? $(grep -E -m1 'ERROR SUMMARY' "$log")"
  done
  stop_mps
}
stage_home_stores_ab() { MD_AB_A_ENV=HALOEX_HOME_STORES=0 switch_ab_runs; }

# Does the home-stores test catch a bind that no longer moves the coordinate
# counter on? Runs the home-stores case on 2 ranks as built (it must pass),
# builds test_transport_device without HomeStores::rebuild's advance, runs
# it again (it must fail, in its "after a stale signal and a new bind"
# check), then restores the file and rebuilds. ~1.5 min on a warm build
# (BUILD_TARGETS=test_transport_device is enough for it).
stage_mutation_bind_advance() {
  local file="$root/src/transport/fused/home_stores.cu" log="$out/mutation-bind-advance.log" failed=0 rc
  note "== mutation: HomeStores::rebuild without the coordinate counter's advance"
  # First as built: the case must pass.
  start_mps
  run_home_stores_case 2 "$out/mutation-unmutated.log"
  rc=$?
  note "  as built, 2 ranks: rc=$rc $(gtest_counts "$out/mutation-unmutated.log")"
  stop_mps
  [ "$rc" = 0 ] || { note "  the case fails as built: no mutation run"; return 1; }
  cp "$file" "$out/home_stores.cu.orig"
  # Restored however the stage ends (a call cut short included), and touched,
  # so that the next build recompiles it.
  trap 'cp "$out/home_stores.cu.orig" "$file"; touch "$file"' EXIT
  sed -i 's|^    advanceKernel<<<1, 1, 0, cudaStreamLegacy>>>(sequence);|    (void)advanceKernel;  // mutation: no advance|' "$file"
  if cmp -s "$file" "$out/home_stores.cu.orig"; then note "  the advance's line was not found: nothing mutated"; return 1; fi
  if cmake --build "$build" --target test_transport_device >"$out/mutation-build.log" 2>&1; then
    start_mps
    run_home_stores_case 2 "$log"
    rc=$?
    failed=$(grep -c 'after a stale signal and a new bind' "$log")
    note "  mutated, 2 ranks: rc=$rc $(gtest_counts "$log"), $failed lines naming the stale signal"
    stop_mps
  else
    note "  the mutated build FAILED"; tail -20 "$out/mutation-build.log"
  fi
  cp "$out/home_stores.cu.orig" "$file" && touch "$file"
  trap - EXIT
  cmake --build "$build" --target test_transport_device >>"$out/mutation-build.log" 2>&1
  rc=$?
  note "  restored and rebuilt: rc=$rc"
  [ "$rc" = 0 ] || return 1
  [ "$failed" -gt 0 ] || { note "  the mutation was NOT detected"; return 1; }
}

# The few-minute subset of home-stores-check and home-signals-ab for a short lease: the
# home-stores case on 2 and 4 ranks, haloex-md's nvshmem tests against the
# CPU reference on 2 ranks (the default, and HALOEX_HOME_SIGNALS=1), then
# two ranks 2x1x1 at 22 500 atoms with half the SMs each, 2 alternating
# repeats. ~1.5 min after the build.
stage_home_signals_quick() {
  start_mps
  local np log
  for np in 2 4; do
    log="$out/home-signals-np$np.log"
    run_home_stores_case "$np" "$log"
    note "  the home-stores case (with the storing kernel's signals) on $np ranks: rc=$? $(gtest_counts "$log")"
  done
  log="$out/home-signals-md-np2.log"
  timeout 200 "${mpirun_np[@]}" 2 "$build/bin/tests/test_md_transports_gpu" \
    --gtest_filter='*nvshmem*:*Nvshmem*' --gtest_color=no >"$log" 2>&1
  note "  haloex-md's nvshmem tests on 2 ranks: rc=$? $(gtest_counts "$log"); $(grep -m1 -o 'the update.s last block also signals[^;]*' "$log" | head -1)"
  grep -E -A12 '^\[  FAILED|Failure' "$log" | head -40
  stop_mps
  MD_AB_B_ENV=HALOEX_HOME_SIGNALS=1 MD_AB_OTHER="$build/bin/haloex-md" MD_AB_REPEATS=2 MD_AB_STEPS=3000 \
    MD_AB_TRANSPORTS="nvshmem:direct" MD_AB_RANKS=2 MD_AB_GRID=2x1x1 MD_AB_ATOMS=22500 MD_AB_SM=50 stage_md_ab_bins
}
# The update's last block signalling the receivers of the pulses that send
# home atoms alone (HALOEX_HOME_SIGNALS=1: B) against the forward signalling
# them (the default: A; B measured slower on one GPU), the same build: first
# memcheck of two ranks' MD steps with B (graphs uploaded by their first
# launch), then two ranks 2x1x1 at 22 500 atoms with half the SMs each and
# four ranks 2x2x1 at 45 000, 3 alternating repeats (~4 min). Its tests are
# home-stores-check's (ForwardAfterHomeStoresMatchesReference has rounds with
# the storing kernel's signals; test_md_transports_gpu has
# MdTransportsGpuWithHomeSignals).
stage_home_signals_ab() {
  start_mps
  local log="$out/home-signals-md-memcheck.log"
  HALOEX_HOME_SIGNALS=1 HALOEX_GRAPH_UPLOAD=0 timeout 300 "${mpirun_np[@]}" 2 -x HALOEX_HOME_SIGNALS -x HALOEX_GRAPH_UPLOAD \
    compute-sanitizer --tool memcheck --error-exitcode 9 --print-limit 20 \
    "$build/bin/haloex-md" --allow-shared-gpus --quiet --log none --transport nvshmem --nvshmem-path direct \
    --grid 2x1x1 --atoms 6000 --steps 120 --nstlist 20 >"$log" 2>&1
  note "  haloex-md, 2 ranks, HALOEX_HOME_SIGNALS=1, graphs without the explicit upload (memcheck): rc=$? $(grep -E -m1 'ERROR SUMMARY' "$log")"
  stop_mps
  MD_AB_B_ENV=HALOEX_HOME_SIGNALS=1 MD_AB_OTHER="$build/bin/haloex-md" MD_AB_REPEATS=3 MD_AB_STEPS=3000 \
    MD_AB_TRANSPORTS="nvshmem:direct" MD_AB_RANKS=2 MD_AB_GRID=2x1x1 MD_AB_ATOMS=22500 MD_AB_SM=50 stage_md_ab_bins
  MD_AB_B_ENV=HALOEX_HOME_SIGNALS=1 MD_AB_OTHER="$build/bin/haloex-md" MD_AB_REPEATS=3 MD_AB_STEPS=3000 \
    MD_AB_TRANSPORTS="nvshmem:direct" MD_AB_RANKS=4 MD_AB_GRID=2x2x1 MD_AB_ATOMS=45000 stage_md_ab_bins
}

# The exchange moving the halo through the non-local kernel's slots: the
# forward copying the positions in (HALOEX_FORWARD_COPY=1) and the reverse
# taking the forces out (HALOEX_REVERSE_RECORDS=1), both off by default
# (slower on one GPU under MPS): test_transport_device's case
# (HaloRecordsMatchTheReference, every device transport) and the
# home-stores case beside it on 2, 4 and 8 ranks, haloex-md's nvshmem tests
# against the CPU reference on 2 ranks (MdTransportsGpuWithHaloRecords runs
# each switch and both), NonbondedGpu's fused update with the halo moved by
# an exchange (the prune counter), and memcheck of two ranks' MD steps with
# both on (graphs uploaded by their first launch) and of four ranks 2x2x1
# (two pulses). ~3 min (BUILD_TARGETS="haloex-md test_transport_device
# test_md_transports_gpu test_md_nonbonded_gpu").
# haloex-md's nvshmem tests (test_md_transports_gpu, every variant) on 2
# ranks under the running MPS. ~1 min.
md_nvshmem_tests() {
  local log="$out/md-nvshmem-np2.log"
  timeout 240 "${mpirun_np[@]}" 2 "$build/bin/tests/test_md_transports_gpu" \
    --gtest_filter='*nvshmem*:*Nvshmem*' --gtest_color=no >"$log" 2>&1
  note "  haloex-md's nvshmem tests on 2 ranks: rc=$? $(gtest_counts "$log")"
  grep -E -A12 '^\[  FAILED|Failure' "$log" | head -40
}
# The same as a stage of its own (BUILD_TARGETS=test_md_transports_gpu).
stage_md_nvshmem_tests() {
  start_mps
  md_nvshmem_tests
  stop_mps
}
# The halo records' tests: NonbondedGpu's fused update with the halo moved
# by an exchange, then under MPS (left running) the halo-records and
# home-stores cases on each of the rank counts given, and haloex-md's
# nvshmem tests on 2 ranks.
halo_records_tests() {
  timeout 120 "$build/bin/tests/test_md_nonbonded_gpu" --gtest_filter='*FusedUpdateWithAHalo*' --gtest_color=no \
    >"$out/halo-records-nonbonded.log" 2>&1
  note "  NonbondedGpu's fused update with a halo: rc=$? $(gtest_counts "$out/halo-records-nonbonded.log")"
  grep -E -m10 'Failure|Expected|mismatch' "$out/halo-records-nonbonded.log"
  start_mps
  local np log
  for np in "$@"; do
    log="$out/halo-records-np$np.log"
    timeout 240 "${mpirun_np[@]}" "$np" "$build/bin/tests/test_transport_device" \
      --gtest_filter='*HaloRecordsMatchTheReference*:*ForwardAfterHomeStores*' --gtest_color=no >"$log" 2>&1
    note "  the halo-records and home-stores cases on $np ranks: rc=$? $(gtest_counts "$log")"
    grep -E -m10 'failed at|Failure|mismatch' "$log"
  done
  md_nvshmem_tests
}
stage_halo_records_check() {
  note "== the exchange moving the halo through the non-local kernel's slots: correctness"
  halo_records_tests 2 4 8
  local grid log
  for grid in 2x1x1:2 2x2x1:4; do
    log="$out/halo-records-md-memcheck-${grid%%:*}.log"
    HALOEX_GRAPH_UPLOAD=0 HALOEX_FORWARD_COPY=1 HALOEX_REVERSE_RECORDS=1 timeout 300 "${mpirun_np[@]}" "${grid##*:}" \
      -x HALOEX_GRAPH_UPLOAD -x HALOEX_FORWARD_COPY -x HALOEX_REVERSE_RECORDS \
      compute-sanitizer --tool memcheck --error-exitcode 9 --print-limit 20 \
      "$build/bin/haloex-md" --allow-shared-gpus --quiet --log none --transport nvshmem --nvshmem-path direct \
      --grid "${grid%%:*}" --atoms 6000 --steps 120 --nstlist 20 >"$log" 2>&1
    note "  haloex-md ${grid%%:*}, the halo through the slots, graphs (memcheck): rc=$? $(grep -E -m1 'ERROR SUMMARY' "$log")"
  done
  stop_mps
}
# The two-minute subset of halo-records-check for a short lease: NonbondedGpu's
# fused update with the halo moved by an exchange, the halo-records and
# home-stores cases on 2 ranks, and haloex-md's nvshmem tests on 2 ranks
# (BUILD_TARGETS="haloex-md test_transport_device test_md_transports_gpu
# test_md_nonbonded_gpu").
stage_halo_records_quick() {
  note "== the halo records, quick"
  halo_records_tests 2
  stop_mps
}
# The exchange moving the halo through the slots (B: HALOEX_FORWARD_COPY=1
# HALOEX_REVERSE_RECORDS=1) against the gather and scatter kernels (the
# default, A), then each half alone, the same build: two ranks 2x1x1 at
# 22 500 atoms with half the SMs each (and the pair at four ranks 2x2x1,
# 45 000), 3 alternating repeats (~6 min).
stage_halo_records_ab() {
  local b
  for b in "HALOEX_FORWARD_COPY=1 HALOEX_REVERSE_RECORDS=1" HALOEX_FORWARD_COPY=1 HALOEX_REVERSE_RECORDS=1; do
    MD_AB_B_ENV="$b" MD_AB_OTHER="$build/bin/haloex-md" MD_AB_REPEATS=3 MD_AB_STEPS=3000 \
      MD_AB_TRANSPORTS="nvshmem:direct" MD_AB_RANKS=2 MD_AB_GRID=2x1x1 MD_AB_ATOMS=22500 MD_AB_SM=50 stage_md_ab_bins
  done
  MD_AB_B_ENV="HALOEX_FORWARD_COPY=1 HALOEX_REVERSE_RECORDS=1" MD_AB_OTHER="$build/bin/haloex-md" MD_AB_REPEATS=3 \
    MD_AB_STEPS=3000 MD_AB_TRANSPORTS="nvshmem:direct" MD_AB_RANKS=4 MD_AB_GRID=2x2x1 MD_AB_ATOMS=45000 stage_md_ab_bins
}

# The step graph uploaded by its first launch after a search (the default
# since the 30th session, A) against the upload beside the first step
# (HALOEX_GRAPH_UPLOAD=1, B; with it compute-sanitizer crashes, results.md
# Known problems), the same build: one rank at 11 250 atoms and two ranks at
# 22 500 with half the SMs each, nstlist 50 (more searches, so more
# uploads), 3 alternating repeats. ~2.5 min.
stage_graph_upload_ab() {
  MD_AB_OTHER="$build/bin/haloex-md" MD_AB_B_ENV=HALOEX_GRAPH_UPLOAD=1 MD_AB_REPEATS=3 MD_AB_STEPS=3000 \
    MD_AB_NSTLIST=50 MD_AB_TRANSPORTS="nvshmem:direct" MD_AB_RANKS=1 MD_AB_ATOMS=11250 stage_md_ab_bins
  MD_AB_OTHER="$build/bin/haloex-md" MD_AB_B_ENV=HALOEX_GRAPH_UPLOAD=1 MD_AB_REPEATS=3 MD_AB_STEPS=3000 \
    MD_AB_NSTLIST=50 MD_AB_TRANSPORTS="nvshmem:direct" MD_AB_RANKS=2 MD_AB_GRID=2x1x1 MD_AB_ATOMS=22500 \
    MD_AB_SM=50 stage_md_ab_bins
}

# The search step: the cell order as one CUDA graph launch (the default, A)
# against its twelve launches (HALOEX_CELL_ORDER_GRAPH=0, B), the same
# build: its GPU test, then one rank at 11 250 and 90 000 atoms and two
# ranks at 22 500 (under MPS a launch costs 8-9 us), nstlist 50, 3
# alternating repeats; then the default's kernel trace (the cell order's CUDA
# calls, and whether the graph is captured again at every search). ~3 min.
stage_cell_order_graph_ab() {
  CTEST_R='CellOrderGpu' stage_ctest_select
  MD_AB_OTHER="$build/bin/haloex-md" MD_AB_B_ENV=HALOEX_CELL_ORDER_GRAPH=0 MD_AB_REPEATS=3 MD_AB_STEPS=3000 \
    MD_AB_NSTLIST=50 MD_AB_TRANSPORTS="nvshmem:direct" MD_AB_RANKS=1 MD_AB_ATOMS="11250 90000" stage_md_ab_bins
  MD_AB_OTHER="$build/bin/haloex-md" MD_AB_B_ENV=HALOEX_CELL_ORDER_GRAPH=0 MD_AB_REPEATS=3 MD_AB_STEPS=3000 \
    MD_AB_NSTLIST=50 MD_AB_TRANSPORTS="nvshmem:direct" MD_AB_RANKS=2 MD_AB_GRID=2x1x1 MD_AB_ATOMS=22500 stage_md_ab_bins
  TRACE_SIZES=11250 TRACE_RANK_SIZES=22500 stage_kernel_trace
}

# One command per multi-GPU kind: the measurements first (a lease may be
# short), then the correctness the GPUs add (nccl and nccl-device, which MPS
# cannot share), the micro-benchmarks, Jacobi and GROMACS where its package
# was carried (GMX_TARBALL). Run as: run.sh build multi-gpu -- or, where one
# call cannot hold it all (a device call ends after 10 minutes), its four
# parts in priority order, one call each, every call ending with pack-out:
#   run.sh build multi-gpu-1; run.sh pack-out   (then -2, -3, -4 on the warm build)
# For a lease with only a few minutes of device time left: the headline of
# issue 33 alone -- two GPUs at 22 500 atoms (11 250 per GPU) and the
# 11 250-atom system on one of them (md_bench dd runs each size on one GPU
# first; 5 625 per GPU gives that size), the strong-scaling essentials
# (nvshmem direct, nccl with graphs, ipc, nvshmem without the cell order and
# fused update), 600 steps each (--quick). Run as
# `BUILD_TARGETS=haloex-md run.sh build multi-gpu-quick`: ~2 min.
stage_multi_gpu_quick() {
  QUICK=1 SS_PASSES=1 SS_SIZES="5625 11250" SS_GRIDS=2:2x1x1 stage_strong_scaling
}
stage_multi_gpu_1() {
  note "== multi-GPU part 1 ($ngpu GPUs): strong-scaling essentials, exchange-account, kernel-trace"
  SS_PASSES=1 stage_strong_scaling || note "stage strong-scaling (essentials) FAILED"
  stage_exchange_account || note "stage exchange-account FAILED"
  TRACE_SIZES=11250 stage_kernel_trace || note "stage kernel-trace FAILED"
  stage_multi_gpu_ab || note "stage multi-gpu-ab FAILED"
}
# The switches the one-GPU estimate chose, on real GPUs (one rank per GPU, no
# MPS): the local kernel first (HALOEX_FORWARD_FIRST=0), a graph per step
# (--steps-per-graph 1; the default is graphs of four) and the forward
# storing the home entries itself (HALOEX_HOME_STORES=0; the default is the
# update storing them over NVLink), and the update's last block signalling
# the receivers (HALOEX_HOME_SIGNALS=1, off by default: slower on one GPU), and
# the exchange moving the halo through the slots instead of the gather and
# scatter kernels (HALOEX_FORWARD_COPY=1 HALOEX_REVERSE_RECORDS=1; off by
# default: slower on one GPU), each against the defaults, two ranks at 22 500 and
# 45 000 atoms, 3 alternating repeats. ~6 min.
stage_multi_gpu_ab() {
  [ "$ngpu" -ge 2 ] || { note "multi-gpu-ab: needs two GPUs ($ngpu visible)"; return 1; }
  # One A/B of the build against itself with B changed by: an environment
  # variable (env:VAR=value) or options (args:...).
  local change
  for change in env:HALOEX_FORWARD_FIRST=0 "args:--steps-per-graph 1" env:HALOEX_HOME_STORES=0 \
    env:HALOEX_HOME_SIGNALS=1 "env:HALOEX_FORWARD_COPY=1 HALOEX_REVERSE_RECORDS=1"; do
    MD_AB_B_ENV=$([ "${change%%:*}" = env ] && echo "${change#*:}") \
      MD_AB_B_ARGS=$([ "${change%%:*}" = args ] && echo "${change#*:}") \
      MD_AB_NO_MPS=1 MD_AB_OTHER="$build/bin/haloex-md" MD_AB_REPEATS=3 MD_AB_STEPS=3000 \
      MD_AB_TRANSPORTS="nvshmem:direct" MD_AB_RANKS=2 MD_AB_GRID=2x1x1 MD_AB_ATOMS="22500 45000" stage_md_ab_bins
  done
}
# What each part of the non-local chain costs the step, bounded by leaving
# it out (docs/results.md, "The non-local chain's parts bounded"): the
# branch-only patch kept in its record (HALOEX_BOUND_SKIP) applied to a copy
# of this tree, built, and each part's A/B run inside that build (A without
# the variable, B with it). The forces are then wrong, so both sides run at
# --dt 0.0001 and nstlist 50 to stay finite: timing bounds, never results.
# BOUND_PARTS: comma lists, one A/B each; one rank per GPU where there are
# two, else two ranks under MPS with half the SMs each. ~2 min.
stage_bound_chain() {
  local record="$root/bench/results/md-bound-nonlocal-chain-1xH100-2026-12-06.txt" src=/tmp/hx-bound part
  note "== the non-local chain's parts bounded (the patch of $(basename "$record"))"
  rm -rf "$src" && mkdir -p "$src"
  tar -C "$root" --exclude=./build-gpu --exclude=./.devsrc -cf - . | tar -C "$src" -xf -
  sed -n '/^== the patch/,/^== call 3/p' "$record" | sed '1d;$d' >"$src/bound.patch"
  (cd "$src" && patch -p1 <bound.patch) >"$out/bound-patch.log" 2>&1 \
    || { tail -5 "$out/bound-patch.log"; note "bound-chain: the patch does not apply to this tree"; return 1; }
  build_md_tree "$src" "$out/bound-build.log" || { note "bound-chain: build FAILED"; return 1; }
  # stage_md_ab_bins runs B from $build: this function's build, by bash's dynamic scope.
  local build="$src/build" sm=50 nomps=""
  [ "$ngpu" -ge 2 ] && { sm=""; nomps=1; }
  for part in ${BOUND_PARTS:-gather,scatter reverse forward,reverse}; do
    MD_AB_SM="$sm" MD_AB_NO_MPS="$nomps" MD_AB_OTHER="$build/bin/haloex-md" MD_AB_B_ENV="HALOEX_BOUND_SKIP=$part" \
      MD_AB_ARGS="--dt 0.0001" MD_AB_NSTLIST=50 MD_AB_REPEATS=2 MD_AB_STEPS=3000 MD_AB_TRANSPORTS=nvshmem:direct \
      MD_AB_RANKS=2 MD_AB_GRID=2x1x1 MD_AB_ATOMS=22500 stage_md_ab_bins
  done
}
stage_multi_gpu_2() {
  note "== multi-GPU part 2 ($ngpu GPUs): strong-scaling rest, test-gpu"
  SS_PASSES=2 SS_RAN1=1 stage_strong_scaling || note "stage strong-scaling (the rest) FAILED"
  stage_test_gpu || note "stage test-gpu FAILED"
}
stage_multi_gpu_3() {
  note "== multi-GPU part 3 ($ngpu GPUs): commbench, jacobi, md-dd (all sizes), bound-chain"
  stage_commbench || note "stage commbench FAILED"
  JACOBI_NP=$ngpu stage_jacobi || note "stage jacobi FAILED"
  DD_RANKS=2 stage_md_dd || note "stage md-dd FAILED"
  stage_bound_chain || note "stage bound-chain FAILED"
}
stage_multi_gpu_4() {
  note "== multi-GPU part 4 ($ngpu GPUs): gromacs-dd, gromacs"
  stage_gromacs_dd || note "stage gromacs-dd FAILED"
  stage_gromacs || note "stage gromacs FAILED"
}
stage_multi_gpu() {
  stage_multi_gpu_1
  stage_multi_gpu_2
  stage_multi_gpu_3
  stage_multi_gpu_4
}

# One forward and one reverse exchange alone, every transport and path, one
# rank per GPU (the coordinate-exchange latency goal of the nvshmem issue).
stage_exchange_timing() {
  note "== exchange timing (haloex-halo-stress --time-exchanges), 2 ranks, 2x1x1"
  local atoms t
  for atoms in ${TIMING_SIZES:-22500 90000}; do
    for t in ${TIMING_VARIANTS:-staged/auto ipc/auto nccl/auto nvshmem/direct nvshmem/tma nvshmem/put}; do
      timeout 120 "${mpirun_np[@]}" 2 "$build/bin/haloex-halo-stress" --transport "${t%/*}" --nvshmem-path "${t#*/}" \
        --grid 2x1x1 --atoms $atoms --rlist 0.985 --steps 100 --repartition-every 1000 --time-exchanges 2000 \
        >"$out/timing-${t/\//-}-$atoms.log" 2>&1
      note "  rc=$? $(grep -E 'TIMING|FAILED|SKIPPED' "$out/timing-${t/\//-}-$atoms.log" | head -3)"
    done
  done
  python3 "$root/bench/exchange_timing.py" "$out"/timing-*.log --commit "$(cat "$root/.commit" 2>/dev/null || echo unknown)" \
    --machine "$ngpu x $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" \
    --build "$build" --launcher "${mpirun_np[*]} 2" \
    --out "$out/exchange-timing-$(date +%F).json" 2>&1 | tee -a "$summary"
}

# Independent single-rank runs sharing GPU 0 under MPS, ending at different
# times (the NaN of issue 3 showed up only like this).
stage_mps_nan() {
  note "== single-rank haloex-md processes sharing GPU 0 under MPS"
  start_mps
  local round i bad=0 runs=0
  for round in 1 2 3; do
    local pids=()
    for i in 1 2 3 4; do
      CUDA_VISIBLE_DEVICES=0 timeout 300 "$build/bin/haloex-md" --device gpu --atoms $((6000 * (1 + (i + round) % 2))) \
        --steps $((20000 - 3000 * i + 1000 * round)) --thermo-every 1000 --seed $((10 * round + i)) \
        >"$out/mps-nan-$round-$i.log" 2>&1 &
      pids+=($!)
    done
    for i in 1 2 3 4; do
      wait "${pids[$((i - 1))]}"
      local rc=$?
      runs=$((runs + 1))
      if [ $rc -ne 0 ] || grep -qiE 'nan|non-finite' "$out/mps-nan-$round-$i.log"; then
        bad=$((bad + 1))
        note "  round $round run $i: rc=$rc $(grep -m1 -iE 'nan|non-finite|error' "$out/mps-nan-$round-$i.log" | cut -c1-200)"
      fi
    done
  done
  note "mps-nan: $bad of $runs runs failed"
  stop_mps
}

stage_md_dd() {
  note "== haloex-md on ${DD_RANKS:-2} ranks: 1 GPU, staged, ipc, nccl, nvshmem paths (bench/md_bench.py dd)"
  python3 "$root/bench/md_bench.py" dd --build "$build" --ranks "${DD_RANKS:-2}" --out "$out" ${QUICK:+--quick} \
    ${DD_SIZES:+--sizes $DD_SIZES} ${DD_VARIANTS:+--variants $DD_VARIANTS} 2>&1 | tee -a "$summary"
}

stage_timeout() {
  note "== timeout diagnostic (a withheld signal must abort the job, not hang)"
  start_mps
  local log="$out/timeout.log"
  HALOEX_TEST_WITHHOLD_SIGNAL=1:0 timeout 120 "${mpirun_np[@]}" 2 "$build/bin/haloex-halo-stress" --allow-shared-gpus \
    --transport nvshmem --grid 2x1x1 --steps 50 --wait-timeout 3 >"$log" 2>&1
  note "timeout run rc=$? $(grep -m1 -o 'nvshmem wait timed out: .*' "$log" | cut -c1-300)"
  stop_mps
}

md_json() {  # np out.json args...  (haloex-md under mpirun, shared GPU)
  local np=$1 json=$2; shift 2
  timeout 300 "${mpirun_np[@]}" "$np" "$build/bin/haloex-md" --allow-shared-gpus --quiet --json "$json" "$@" \
    >"$json.log" 2>&1
  local rc=$?
  note "  md np=$np $*: rc=$rc $(grep -E 'Performance:|Search step:' "$json.log" | sed 's/^ *//' | cut -c1-160 | tr '\n' ' ')"
  [ $rc -eq 0 ] || tail -20 "$json.log"
}

stage_md_check() {
  note "== MD on 2 ranks (one per GPU, or sharing one under MPS): transports agree (first 50 steps), long nvshmem runs complete"
  start_mps
  local common=(--atoms 22500 --steps 60 --thermo-every 1 --grid 2x1x1)
  md_json 2 "$out/dd-ipc.json" --transport ipc "${common[@]}"
  md_json 2 "$out/dd-staged.json" --transport staged "${common[@]}"
  for path in direct tma put; do
    md_json 2 "$out/dd-nvshmem-$path.json" --transport nvshmem --nvshmem-path $path "${common[@]}"
  done
  md_json 2 "$out/dd-nvshmem-nograph.json" --transport nvshmem --cuda-graphs 0 "${common[@]}"
  # nccl-device needs one rank per GPU (NCCL refuses ranks sharing one).
  local others=("$out"/dd-staged.json "$out"/dd-nvshmem-*.json)
  if [ "$ngpu" -ge 2 ]; then
    md_json 2 "$out/dd-nccl-device.json" --transport nccl-device "${common[@]}"
    others+=("$out/dd-nccl-device.json")
  else
    note "  nccl-device: not run (one GPU: NCCL refuses two ranks on it)"
  fi
  python3 "$root/bench/compare_energies.py" "$out/dd-ipc.json" "${others[@]}" \
    --steps 50 --rtol 1e-5 2>&1 | tee -a "$summary"
  note "-- 10 000 steps, repartitioning every nstlist = 50 steps"
  md_json 2 "$out/long-nvshmem-2.json" --transport nvshmem --atoms 22500 --steps 10000 --nstlist 50 --grid 2x1x1
  md_json 4 "$out/long-nvshmem-4.json" --transport nvshmem --atoms 45000 --steps 10000 --nstlist 50 --grid 4x1x1
  md_json 4 "$out/long-nvshmem-2x2.json" --transport nvshmem --nvshmem-path tma --atoms 45000 --steps 3000 --grid 2x2x1
  stop_mps
}

# A/B of two haloex-md binaries on the device transports (a change to the
# transports or their kernels): MD_AB_OTHER is the other build's haloex-md
# (A), this build's is B; MD_AB_RANKS (2) ranks sharing the GPU under MPS on
# MD_AB_GRID (2x1x1), MD_AB_TRANSPORTS (nvshmem paths as nvshmem:PATH),
# MD_AB_ATOMS atoms, MD_AB_REPEATS (2) repeats each in alternating order
# (MD_AB_NSTLIST: a fixed nstlist), the steady state, all steps and the
# search step as the runs report them. MD_AB_SM=P: every rank gets P % of
# the SMs (the one-GPU estimate's setting). MD_AB_B_ENV / MD_AB_B_ARGS: an
# environment variable / options for B alone (an A/B inside one build).
# MD_AB_NO_MPS=1: no MPS daemon (one rank per GPU on a machine of several).
stage_md_ab_bins() {
  local other=${MD_AB_OTHER:?set MD_AB_OTHER to the other haloex-md}
  local where="under MPS"
  [ -n "${MD_AB_NO_MPS:-}" ] && where="no MPS"
  note "== MD A/B of two builds: A = $other${MD_AB_A_ENV:+ with $MD_AB_A_ENV}, B = $build/bin/haloex-md${MD_AB_B_ENV:+ with $MD_AB_B_ENV}${MD_AB_B_ARGS:+ and $MD_AB_B_ARGS} (${MD_AB_ARGS:+both with $MD_AB_ARGS, }${MD_AB_RANKS:-2} rank(s), grid ${MD_AB_GRID:-2x1x1}, $where${MD_AB_SM:+, $MD_AB_SM % of the SMs per rank})"
  [ -n "${MD_AB_NO_MPS:-}" ] || start_mps
  local t n r v w exe path json benv bargs both cap=()
  [ -n "${MD_AB_SM:-}" ] && cap=(-x "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$MD_AB_SM")
  for n in ${MD_AB_ATOMS:-22500 90000}; do
    for t in ${MD_AB_TRANSPORTS:-nvshmem:direct nvshmem:tma ipc}; do
      path=(); [ "${t%%:*}" = nvshmem ] && path=(--nvshmem-path "${t#*:}")
      for r in $(seq "${MD_AB_REPEATS:-2}"); do
        for v in $([ $((r % 2)) = 1 ] && echo A B || echo B A); do
          exe=$([ $v = A ] && echo "$other" || echo "$build/bin/haloex-md")
          json="$out/mdab-${MD_AB_RANKS:-2}r-${MD_AB_GRID:-2x1x1}-$n-${t/:/-}-$v-$r.json"
          # MD_AB_B_ENV="VAR=value ...": B runs with them (an A/B of a switch inside one build).
          # MD_AB_A_ENV="VAR=value ...": A runs with them (switches on by default, off in A).
          benv=()
          for w in $([ $v = B ] && echo "${MD_AB_B_ENV:-}" || echo "${MD_AB_A_ENV:-}"); do benv+=(-x "$w"); done
          # MD_AB_B_ARGS="--option value ...": B runs with these options too.
          bargs=(); [ $v = B ] && [ -n "${MD_AB_B_ARGS:-}" ] && read -r -a bargs <<<"$MD_AB_B_ARGS"
          # MD_AB_ARGS="--option value ...": both sides run with these (e.g. --dt).
          [ -n "${MD_AB_ARGS:-}" ] && read -r -a both <<<"$MD_AB_ARGS" && bargs+=("${both[@]}")
          if [ "${MD_AB_RANKS:-2}" = 1 ]; then  # one rank: no launcher, no transport (there is no halo)
            # benv/cap hold "-x VAR=value" pairs (mpirun's form): every value for env.
            local envs=() k
            for ((k = 1; k < ${#benv[@]}; k += 2)); do envs+=("${benv[k]}"); done
            [ -n "${cap[1]:-}" ] && envs+=("${cap[1]}")
            timeout 200 env "${envs[@]}" "$exe" --device gpu --quiet --log none --atoms "$n" --steps "${MD_AB_STEPS:-2000}" \
              ${MD_AB_NSTLIST:+--nstlist $MD_AB_NSTLIST} "${bargs[@]}" --json "$json" >"$json.log" 2>&1
          else
            timeout 200 "${mpirun_np[@]}" "${MD_AB_RANKS:-2}" "${benv[@]}" "${cap[@]}" "$exe" --allow-shared-gpus --quiet --log none --transport "${t%%:*}" "${path[@]}" \
              --atoms "$n" --steps "${MD_AB_STEPS:-2000}" ${MD_AB_NSTLIST:+--nstlist $MD_AB_NSTLIST} --grid "${MD_AB_GRID:-2x1x1}" "${bargs[@]}" --json "$json" >"$json.log" 2>&1
          fi
          note "  $n atoms $t $v (repeat $r): rc=$? $(grep -E 'Performance:|Steady state:|Search step' "$json.log" | sed 's/^ *//' | cut -c1-300 | tr '\n' ' ')"
        done
      done
    done
  done
  stop_mps
}

# What --transport auto measured, from a haloex-md JSON record: the choice,
# every candidate's time per step, the skipped ones and why.
auto_selection_lines() {  # record.json
  python3 - "$1" <<'PY' 2>&1 | tee -a "$summary"
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except (OSError, ValueError) as e:
    sys.exit(f"    no record: {e}")
a = r.get("auto_selection") or {}
print(f"    transport {r.get('transport')} ({a.get('source', 'not auto')}): {r.get('transport_reason', '')[:300]}")
for c in a.get("candidates", []):
    repeats = ", ".join(f"{x:.1f}" for x in c["repeats_us_per_step"])
    print(f"      {c['backend']}: {c['us_per_step']:.1f} us/step (repeats {repeats})")
for s in a.get("skipped", []):
    print(f"      {s['backend']}: skipped: {s['reason'][:200]}")
for w in a.get("warnings", []):
    print(f"      warning: {w[:200]}")
print(f"    the run on {r.get('transport')}: {r.get('us_per_step_steady', 0):.1f} us/step steady, "
      f"{r.get('us_per_step', 0):.1f} all steps")
PY
}

# --transport auto (issue 15): haloex-md times every device transport that
# can run here inside its own MD steps and runs with the fastest: 2 and 4
# ranks sharing the GPU under MPS (NCCL refuses shared GPUs: skipped with
# the reason), AUTO_ATOMS atoms (22 500); each again with the cache file the
# first run wrote (the choice read back, nothing measured); then the measured
# Auto's gpu-labelled tests (test_auto_select_gpu, 2 and 4 ranks).
stage_auto_select() {
  note "== --transport auto: transports measured inside MD steps (2 and 4 ranks under MPS, ${AUTO_ATOMS:-22500} atoms)"
  start_mps
  local np json cache=/tmp/auto-select-cache.json
  rm -f "$cache"
  for np in 2 4; do
    json="$out/auto-select-$np.json"
    timeout 150 "${mpirun_np[@]}" "$np" "$build/bin/haloex-md" --allow-shared-gpus --transport auto \
      --atoms "${AUTO_ATOMS:-22500}" --steps "${AUTO_STEPS:-300}" --auto-cache "$cache" --quiet --log none \
      --json "$json" >"$json.log" 2>&1
    note "  np=$np measured: rc=$? $(grep -E 'Performance:' "$json.log" | sed 's/^ *//')"
    auto_selection_lines "$json"
    timeout 150 "${mpirun_np[@]}" "$np" "$build/bin/haloex-md" --allow-shared-gpus --transport auto \
      --atoms "${AUTO_ATOMS:-22500}" --steps 100 --auto-cache "$cache" --quiet --log none \
      --json "$out/auto-select-$np-cached.json" >"$out/auto-select-$np-cached.log" 2>&1
    note "  np=$np from the cache file: rc=$?"
    auto_selection_lines "$out/auto-select-$np-cached.json"
    grep -m3 -E 'warning|error' "$json.log" "$out/auto-select-$np-cached.log" | cut -c1-240 | tee -a "$summary"
  done
  (cd "$build" && ctest -V --timeout 300 -R '^test_auto_select_gpu_np' >"$out/ctest-auto-select.log" 2>&1)
  local rc=$?
  grep -E 'tests passed|tests failed|\*\*\*Failed|Timeout|Not Run|Skipped|SKIPPED' "$out/ctest-auto-select.log" \
    | tee -a "$summary"
  grep -E '^[0-9]+: (auto: |  [a-z]+: )' "$out/ctest-auto-select.log" | cut -c1-240 | tee -a "$summary"
  [ $rc -eq 0 ] || grep -E -B5 -A30 'FAILED|Failure' "$out/ctest-auto-select.log" | head -80
  stop_mps
}

# The search step on the device (issue: end-to-end throughput): its GPU tests
# (device plan builder and migration against the host, device vs host search
# energies, NVE drift on both paths), then haloex-md on one GPU with the
# search on the device and on the host (the parts of each search step), and
# 2/4 ranks sharing the GPU under MPS (device vs host search energies).
stage_search_tests() {
  note "== search-step GPU tests"
  local t
  for t in test_particles_device test_md_engine_gpu; do
    # The stop tests each need a process of their own (the signal count is
    # process-wide; ctest runs them so): not in this one-process run.
    timeout 600 "$build/bin/tests/$t" --gtest_filter='-*MdEngineGpuStop*' >"$out/$t.log" 2>&1
    note "  $t: rc=$? $(grep -E '^\[  (PASSED|FAILED)  \]' "$out/$t.log" | tr '\n' ' ')"
    grep -E 'NVE|FAILED|Failure|error' "$out/$t.log" | head -20 | tee -a "$summary"
  done
}

# The pair-list search: its GPU tests (lists element by element against the
# CPU reference) and the sanitizer on them.
stage_list_search() {
  note "== pair-list search: tests, sanitizer"
  local t
  for t in test_md_nonbonded_gpu test_md_prune_gpu; do
    timeout 600 "$build/bin/tests/$t" >"$out/$t.log" 2>&1
    note "  $t: rc=$? $(grep -E '^\[  (PASSED|FAILED)  \]' "$out/$t.log" | tr '\n' ' ')"
    grep -E 'FAILED|Failure' "$out/$t.log" | head -20 | tee -a "$summary"
  done
  for t in memcheck synccheck; do
    sanitize_test $t test_md_nonbonded_gpu "${SANITIZE_SEARCH_FILTER:-*Lattice*:*g2x2x1*:*UniformRandom*:*SearchGraph*}" \
      search "search kernels"
  done
}

# The build's GPU timeline (HALOEX_SEARCH_TIMELINE=1: events between its
# parts, call by call), the last two search steps of a short run per size.
stage_search_timeline() {
  local n
  for n in ${TIMELINE_SIZES:-22500 720000}; do
    note "== search timeline, $n atoms"
    HALOEX_SEARCH_TIMELINE=1 timeout 300 "$build/bin/haloex-md" --device gpu --atoms $n --steps 200 --nstlist 50 \
      --quiet --log none 2>&1 | grep 'search timeline' | tail -2 | cut -c1-600 | tee -a "$summary"
  done
}

# The search steps' GPU timeline without nsys (the image has none):
# haloex-kernel-trace (tools/kernel_trace, CUPTI injected through
# CUDA_INJECTION64_PATH, the NVTX ranges through libcupti) on one rank at
# TRACE_SIZES and on two ranks (one per GPU where two are visible, else
# sharing GPU 0 under MPS) at TRACE_RANK_SIZES atoms in all (nvshmem direct,
# 2x1x1), nstlist 50; a CSV per rank and
# bench/kernel_trace.py's account of each phase (wall, GPU busy, blocking,
# launches). TRACE_SM=P: every run under MPS with P % of the SMs per rank
# (the one-GPU estimate's setting: its normal steps' timelines side by side);
# TRACE_ENV="VAR=value": every run gets it (a switch under test);
# TRACE_ARGS="--option value ...": haloex-md options for every run.
# ~1 min.
stage_kernel_trace() {
  local lib="$build/lib/libhaloex-kernel-trace.so" cupti n v run_env=() mpi_env=()
  [ -f "$lib" ] || { note "kernel-trace: no $lib (built only where the toolkit has CUPTI)"; return 1; }
  cupti=$(ldd "$lib" | awk '/libcupti/ {print $3; exit}')
  if [ -n "${TRACE_SM:-}" ]; then
    start_mps
    run_env=(CUDA_MPS_ACTIVE_THREAD_PERCENTAGE="$TRACE_SM")
    note "kernel-trace: every run under MPS with $TRACE_SM % of the SMs per rank"
  fi
  if [ -n "${TRACE_ENV:-}" ]; then
    run_env+=("$TRACE_ENV")
    note "kernel-trace: every run with $TRACE_ENV"
  fi
  local args=()  # TRACE_ARGS: haloex-md options for every run
  if [ -n "${TRACE_ARGS:-}" ]; then
    read -r -a args <<<"$TRACE_ARGS"
    note "kernel-trace: every run with $TRACE_ARGS"
  fi
  for v in "${run_env[@]}"; do mpi_env+=(-x "$v"); done
  for n in ${TRACE_SIZES:-11250 90000}; do
    note "== kernel trace of search steps, one rank, $n atoms"
    env "${run_env[@]}" CUDA_INJECTION64_PATH="$lib" NVTX_INJECTION64_PATH="$cupti" HALOEX_KERNEL_TRACE="$out/ktrace-1r-$n" \
      timeout 300 "$build/bin/haloex-md" --device gpu --atoms "$n" --steps 600 --nstlist 50 --quiet --log none \
      "${args[@]}" >"$out/ktrace-1r-$n.log" 2>&1
    note "  rc=$? $(grep -m1 'haloex-kernel-trace' "$out/ktrace-1r-$n.log")"
    python3 "$root/bench/kernel_trace.py" "$out/ktrace-1r-$n.csv" --json "$out/ktrace-1r-$n.json" 2>&1 | tee -a "$summary"
  done
  # Two ranks: one per GPU where there are two, else sharing GPU 0 under MPS.
  local where="two GPUs" shared=()
  if [ "$ngpu" -lt 2 ]; then
    where="two ranks under MPS"; shared=(--allow-shared-gpus)
    start_mps
  fi
  for n in ${TRACE_RANK_SIZES:-22500}; do
    note "== kernel trace of search steps, $where, $n atoms"
    timeout 300 "${mpirun_np[@]}" 2 "${mpi_env[@]}" -x CUDA_INJECTION64_PATH="$lib" -x NVTX_INJECTION64_PATH="$cupti" \
      -x HALOEX_KERNEL_TRACE="$out/ktrace-2r-$n" "$build/bin/haloex-md" "${shared[@]}" --quiet --log none \
      --transport nvshmem --nvshmem-path direct --grid 2x1x1 --atoms "$n" --steps 600 --nstlist 50 \
      "${args[@]}" >"$out/ktrace-2r-$n.log" 2>&1
    note "  rc=$?"
    # Both ranks' accounts, then how far apart they start their exchange
    # kernels (one host: one clock).
    python3 "$root/bench/kernel_trace.py" "$out/ktrace-2r-$n.rank0.csv" "$out/ktrace-2r-$n.rank1.csv" \
      --skew fusedForward --skew fusedReverse --json "$out/ktrace-2r-$n.json" 2>&1 | tee -a "$summary"
  done
  { [ "$ngpu" -lt 2 ] || [ -n "${TRACE_SM:-}" ]; } && stop_mps
  return 0
}

# An nsys timeline of search steps (kernels, copies, API calls, NVTX
# ranges) as CSV, to see where a search step's time goes between kernels;
# TRACE_RANKS=2 adds two ranks under MPS (a report per rank).
stage_search_trace() {
  local nsys; nsys=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
  [ -n "$nsys" ] || { note "search-trace: no nsys"; return 1; }
  local n
  for n in ${TRACE_SIZES:-22500}; do
    note "== nsys trace of search steps, $n atoms ($nsys)"
    timeout 300 "$nsys" profile -o "/tmp/trace-$n" --force-overwrite true --trace cuda,nvtx,osrt \
      "$build/bin/haloex-md" --device gpu --atoms $n --steps 300 --nstlist 50 --quiet --log none >"$out/trace-$n.log" 2>&1
    note "  profile rc=$?"
    "$nsys" stats -q -r cuda_gpu_trace,cuda_api_trace,nvtx_pushpop_trace -f csv -o "$out/trace-$n" "/tmp/trace-$n.nsys-rep" \
      >>"$out/trace-$n.log" 2>&1
    note "  stats rc=$? $(find "$out" -maxdepth 1 -name "trace-$n*" | wc -l) files"
  done
  # TRACE_RANKS=2: the same for the search steps of two ranks sharing GPU 0
  # under MPS (nvshmem direct, 2x1x1, TRACE_RANK_SIZES atoms in all), a
  # report per rank: what the multi-rank search step waits on.
  local ranks=${TRACE_RANKS:-1} r
  [ "$ranks" -gt 1 ] || return 0
  start_mps
  for n in ${TRACE_RANK_SIZES:-22500}; do
    note "== nsys trace of search steps, $ranks ranks under MPS, $n atoms"
    timeout 300 "${mpirun_np[@]}" "$ranks" "$nsys" profile -o "/tmp/trace-${ranks}r-$n-%q{OMPI_COMM_WORLD_RANK}" \
      --force-overwrite true --trace cuda,nvtx,osrt "$build/bin/haloex-md" --allow-shared-gpus --quiet --log none \
      --transport nvshmem --nvshmem-path direct --grid "${ranks}x1x1" --atoms $n --steps 300 --nstlist 50 \
      >"$out/trace-${ranks}r-$n.log" 2>&1
    note "  profile rc=$?"
    for r in $(seq 0 $((ranks - 1))); do
      "$nsys" stats -q -r cuda_gpu_trace,cuda_api_trace,nvtx_pushpop_trace -f csv -o "$out/trace-${ranks}r-$n-r$r" \
        "/tmp/trace-${ranks}r-$n-$r.nsys-rep" >>"$out/trace-${ranks}r-$n.log" 2>&1
      note "  stats of rank $r: rc=$?"
    done
  done
  stop_mps
}

# Nsight Compute on the search step's kernels: each kernel's duration per
# search step (PROFILE_SIZES, default 22 500 and 720 000 atoms: what the
# kernels cost apart from launch gaps and host reads), and with
# PROFILE_STALLS=1 the pair search kernel's stall profile at 720 000 atoms.
stage_profile_search() {
  local ncu; ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /usr/local/cuda/nsight-compute*/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  note "== profile search kernels (ncu: ${ncu:-none})"
  [ -n "$ncu" ] || return 1
  local n steps
  for n in ${PROFILE_SIZES:-22500 720000}; do
    steps=$(( n > 200000 ? 160 : 400 ))
    timeout 240 "$ncu" --nvtx --nvtx-include "search step/" --launch-count ${PROFILE_LAUNCHES:-600} \
      --metrics gpu__time_duration.sum --csv \
      "$build/bin/haloex-md" --device gpu --atoms $n --steps $steps --nstlist 50 --quiet --log none --cuda-graphs 0 \
      >"$out/ncu-durations-$n.csv" 2>"$out/ncu-durations-$n.err"
    note "  $n atoms: ncu rc=$? ($(wc -l <"$out/ncu-durations-$n.csv") lines)"
    python3 "$root/scripts/device/ncu_durations.py" "$out/ncu-durations-$n.csv" 2>&1 | head -40 | tee -a "$summary"
  done
  [ "${PROFILE_STALLS:-0}" = 1 ] || return 0
  # PROFILE_STALL_ATOMS: the sizes whose search kernel (either kind) is profiled in detail.
  for n in ${PROFILE_STALL_ATOMS:-720000}; do
    timeout 300 "$ncu" --kernel-name regex:'search(Group)?Kernel' --launch-skip 1 --launch-count 1 \
      --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis --section Occupancy \
      --section SchedulerStats --section LaunchStats --section InstructionStats \
      "$build/bin/haloex-md" --device gpu --atoms $n --steps 60 --nstlist 50 --quiet --log none \
      >"$out/ncu-search-$n.txt" 2>&1
    note "  search kernel profile, $n atoms: rc=$?"
    grep -E 'searchKernel|searchGroupKernel|Duration|Warp Cycles Per Issued|Issue Slots Busy|Executed Instructions  |Memory Throughput|L1/TEX Hit|L2 Hit|Achieved Occupancy|Waves Per SM|Registers Per|Stall|Compute \(SM\) Throughput' \
      "$out/ncu-search-$n.txt" | head -30 | tee -a "$summary"
  done
}

# The non-bonded kernel's roofline per size (issue 34): bench/roofline.py runs
# haloex-bench-nonbonded --as-md plain and under ncu (ROOFLINE_SIZES, default
# 11 250, 22 500, 90 000 and 720 000 atoms); the record is
# $out/nonbonded-roofline.json, ncu's CSVs packed in roofline-ncu.tar.gz.
stage_roofline() {
  local ncu; ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /usr/local/cuda/nsight-compute*/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  note "== roofline of the non-bonded kernel (ncu: ${ncu:-none})"
  [ -n "$ncu" ] || return 1
  local keep=/tmp/roofline-ncu resume=()
  rm -rf "$keep" && mkdir -p "$keep"
  # ROOFLINE_SEED: a committed directory of an earlier call's sizes, reused (--resume).
  if [ -n "${ROOFLINE_SEED:-}" ]; then cp "$root/$ROOFLINE_SEED"/* "$keep"/ && resume=(--resume); fi
  # shellcheck disable=SC2086
  timeout 400 python3 "$root/bench/roofline.py" --build "$build" --ncu "$ncu" --sizes ${ROOFLINE_SIZES:-11250 22500 90000 720000} \
    --steps "${ROOFLINE_STEPS:-100}" --keep "$keep" "${resume[@]}" --out "$out/nonbonded-roofline.json" 2>&1 | tee -a "$summary"
  local rc=${PIPESTATUS[0]}
  (cd /tmp && tar czf "$out/roofline-ncu.tar.gz" roofline-ncu 2>/dev/null)
  return "$rc"
}

stage_search() {
  note "== search steps on one GPU: --search device vs host"
  local n s nstlist
  for n in ${SEARCH_SIZES:-22500 180000 720000}; do
    for s in ${SEARCH_PLACES:-device host}; do
      for nstlist in ${SEARCH_NSTLIST:-50}; do
        timeout 300 "$build/bin/haloex-md" --device gpu --atoms $n --steps ${SEARCH_STEPS:-1000} --nstlist $nstlist \
          --search $s --quiet --json "$out/search-$n-$s-$nstlist.json" >"$out/search-$n-$s-$nstlist.log" 2>&1
        note "  $n atoms, search on the $s, nstlist $nstlist: rc=$?"
        grep -E 'Performance|Steady|Search step|of its pair|Start-up|error' "$out/search-$n-$s-$nstlist.log" \
          | sed 's/^/    /' | cut -c1-400 | tee -a "$summary"
      done
    done
    timeout 300 "$build/bin/haloex-md" --device gpu --atoms $n --steps ${SEARCH_STEPS:-1000} --quiet \
      --json "$out/search-$n-auto.json" >"$out/search-$n-auto.log" 2>&1
    note "  $n atoms, nstlist auto: rc=$?"
    grep -E 'nstlist|Performance|Steady|Search step|error' "$out/search-$n-auto.log" | sed 's/^/    /' | cut -c1-300 \
      | tee -a "$summary"
  done
  [ -n "${SEARCH_SKIP_MPS:-}" ] && return 0
  note "-- 2 and 4 ranks sharing the GPU (MPS): device vs host search, first 21 steps"
  start_mps
  local common=(--atoms 22500 --steps 21 --nstlist 10 --thermo-every 1)
  local grid np t
  for grid in 2:2x1x1 4:2x2x1; do
    np=${grid%%:*}
    for t in ${SEARCH_MPS_TRANSPORTS:-nvshmem staged}; do
      md_json "$np" "$out/dd-$t-${grid#*:}-device.json" --transport $t --search device --grid "${grid#*:}" "${common[@]}"
      md_json "$np" "$out/dd-$t-${grid#*:}-host.json" --transport $t --search host --grid "${grid#*:}" "${common[@]}"
      python3 "$root/bench/compare_energies.py" "$out/dd-$t-${grid#*:}-host.json" "$out/dd-$t-${grid#*:}-device.json" \
        --steps 21 --rtol 1e-6 2>&1 | tail -3 | tee -a "$summary"
    done
  done
  [ -n "${SEARCH_SKIP_LONG:-}" ] ||
    md_json 4 "$out/long-device-2x2.json" --transport nvshmem --search device --atoms 45000 --steps 3000 --grid 2x2x1
  stop_mps
}

# Atoms conserved (count and global-id fingerprint, checked at every search)
# over 10 000 steps with repartitioning every 50, search on the device, for
# every transport that runs here: 1 rank, and 2 and 4 ranks sharing the GPU
# under MPS (nccl refuses shared GPUs and is skipped there).
stage_conserve() {
  note "== atom conservation, 10 000 steps, search on the device"
  local common=(--atoms 22500 --steps ${CONSERVE_STEPS:-10000} --nstlist 50 --search device --thermo-every 1000)
  md_json 1 "$out/conserve-1.json" "${common[@]}"
  start_mps
  local np t
  for np in 2 4; do
    for t in ${CONSERVE_TRANSPORTS:-nvshmem staged ipc}; do
      md_json "$np" "$out/conserve-$t-$np.json" --transport "$t" "${common[@]}"
    done
  done
  stop_mps
}

# compute-sanitizer on the search step's new kernels: the device plan
# builder and migration (threads over the staged transport), and two ranks
# under MPS searching on the device over nvshmem (exchangeBlock's puts).
stage_sanitize_search() {
  note "== compute-sanitizer: search-step kernels"
  local t
  for t in memcheck synccheck; do
    sanitize_test $t test_particles_device '*g2x2x2*:*align4_g4x1x1*:*g3x3x3_2pulsesXYZ*:DeviceMigration.*' \
      particles particles 400
  done
  # One rank: the wrap-only migration and the plan builder's home prefix.
  for t in memcheck racecheck; do
    timeout 300 compute-sanitizer --tool $t --error-exitcode 9 "$build/bin/haloex-md" --device gpu --search device \
      --atoms 6000 --steps 30 --nstlist 10 --quiet --log none >"$out/sanitize-md-1rank-$t.log" 2>&1
    note "  haloex-md 1 rank, search on the device ($t): rc=$? $(grep -m1 -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/sanitize-md-1rank-$t.log")"
  done
  start_mps
  # With the step graphs (as before), then without: on an H100 on 2026-12-06
  # compute-sanitizer crashed inside cudaGraphUpload (results.md, Known problems).
  # The third run: graphs without programmatic dependent launch (HALOEX_PDL=0),
  # to tell whether the graphs' programmatic edges are what the crash needs.
  # The fourth: graphs without the explicit upload behind the first step
  # after a search (HALOEX_GRAPH_UPLOAD=0: the next launch uploads; the
  # default since the 30th session; the first three runs upload explicitly).
  local run graphs pdl upload tag
  for run in 1:1:1 0:1:1 1:0:1 1:1:0; do
    IFS=: read -r graphs pdl upload <<<"$run"
    tag=graphs$graphs-pdl$pdl$([ "$upload" = 0 ] && echo -upload0)
    HALOEX_PDL=$pdl HALOEX_GRAPH_UPLOAD=$upload timeout 300 "${mpirun_np[@]}" 2 -x HALOEX_PDL -x HALOEX_GRAPH_UPLOAD \
      compute-sanitizer --tool memcheck --error-exitcode 9 \
      "$build/bin/haloex-md" --allow-shared-gpus --transport nvshmem --search device --atoms 6000 --steps 30 \
      --nstlist 10 --grid 2x1x1 --quiet --cuda-graphs $graphs >"$out/sanitize-md-nvshmem-$tag.log" 2>&1
    note "  haloex-md 2 ranks nvshmem, search on the device, --cuda-graphs $graphs, HALOEX_PDL=$pdl, HALOEX_GRAPH_UPLOAD=$upload (memcheck): rc=$? $(grep -m1 -E 'ERROR SUMMARY' "$out/sanitize-md-nvshmem-$tag.log")"
  done
  stop_mps
}

# haloex-md and GROMACS 2026.3 on the same system in one run, one GPU, both
# with the v-rescale thermostat (GROMACS tunes nstlist and prunes only with a
# thermostat): every size at each code's automatic settings, then both codes'
# nstlist tuned by hand at the smallest and largest size. GROMACS comes as a
# carried package (GMX_TARBALL, else the first .devsrc/gromacs-*.tar.xz, which
# the carry brings along; built apart by scripts/device/gromacs_package.sh,
# not part of the repository).
# The carried GROMACS package unpacked once into /root/gmx; 1 (and a note)
# when there is none.
unpack_gromacs() {
  [ -x /root/gmx/bin/gmx ] && return 0
  local tarball=${GMX_TARBALL:-} found
  if [ -z "$tarball" ]; then
    found=("$root"/.devsrc/gromacs-*.tar.xz)
    [ -f "${found[0]}" ] && tarball=${found[0]}
  fi
  if [ -z "$tarball" ] || [ ! -f "$tarball" ]; then
    note "gromacs: SKIPPED, no GROMACS package (set GMX_TARBALL, or put gromacs-*.tar.xz in .devsrc/ before the carry)"
    return 1
  fi
  mkdir -p /root/gmx && tar -xJf "$tarball" -C /root/gmx
  /root/gmx/bin/gmx --version 2>&1 | grep -E '^GROMACS version' | tee -a "$summary"
}

stage_gromacs() {
  note "== haloex-md and GROMACS side by side (bench/gromacs_bench.py), one GPU"
  unpack_gromacs || return 0
  local gmx=/root/gmx/bin/gmx steps=${GMX_STEPS:-10000} n k
  for n in ${GMX_SIZES:-5626 11250 22500 45000 90000 180000 360000 720000}; do
    timeout 300 "$build/bin/haloex-md" --device gpu --atoms $n --steps $steps --thermostat v-rescale --quiet \
      --json "$out/hx-$n-auto.json" >"$out/hx-$n-auto.log" 2>&1
    note "  haloex $n auto: rc=$? $(grep -E 'Performance:' "$out/hx-$n-auto.log" | sed 's/^ *//')"
  done
  timeout 480 python3 "$root/bench/gromacs_bench.py" --gmx "$gmx" --haloex-md "$build/bin/haloex-md" \
    --atoms ${GMX_SIZES:-5626 11250 22500 45000 90000 180000 360000 720000} --steps $steps --nstlist auto \
    --thermostat v-rescale --workdir /tmp/gmxbench --out "$out/gromacs-auto.json" >"$out/gromacs-auto.log" 2>&1
  note "  gromacs auto: rc=$?"
  # GMX_TUNE_SIZES=none: no tuned runs (a short lease).
  if [ "${GMX_TUNE_SIZES:-}" != none ]; then
    for n in ${GMX_TUNE_SIZES:-22500 720000}; do
      for k in ${GMX_TUNE_NSTLIST:-100 200}; do
        timeout 300 "$build/bin/haloex-md" --device gpu --atoms $n --steps $steps --thermostat v-rescale --nstlist $k \
          --quiet --json "$out/hx-$n-$k.json" >"$out/hx-$n-$k.log" 2>&1
        note "  haloex $n nstlist $k: rc=$? $(grep -E 'Performance:' "$out/hx-$n-$k.log" | sed 's/^ *//')"
      done
    done
    timeout 400 python3 "$root/bench/gromacs_bench.py" --gmx "$gmx" --haloex-md "$build/bin/haloex-md" \
      --atoms ${GMX_TUNE_SIZES:-22500 720000} --steps $steps --nstlist ${GMX_TUNE_NSTLIST:-100 200} --cuda-graph off on \
      --thermostat v-rescale --workdir /tmp/gmxbench-tuned --out "$out/gromacs-tuned.json" \
      >"$out/gromacs-tuned.log" 2>&1
    note "  gromacs tuned: rc=$?"
  fi
  python3 - "$out" <<'PY' | tee -a "$summary"
import glob, json, os, sys
out = sys.argv[1]
gmx = []
for f in ("gromacs-auto.json", "gromacs-tuned.json"):
    p = os.path.join(out, f)
    if os.path.exists(p):
        gmx += json.load(open(p))
for r in gmx:
    print(f"  gromacs {r.get('atoms')} nstlist {r.get('nstlist')} ({'auto' if r.get('nstlist_auto') else 'set'}) "
          f"rlist {r.get('rlist')}{', CUDA graphs' if r.get('cuda_graph') else ''}: {r.get('us_per_step')} us/step, "
          f"drift {r.get('drift')}, gpu update "
          f"{r.get('gpu_update')} {r.get('error', '')}")
for p in sorted(glob.glob(os.path.join(out, "hx-*.json"))):
    r = json.load(open(p))
    print(f"  haloex {r['atoms']} nstlist {r['settings']['nstlist']} rlist {r['settings']['rlist']:.3f}: "
          f"{r['us_per_step']:.1f} us/step all steps ({r['us_per_step_steady']:.1f} steady), drift "
          f"{r.get('conserved_drift_per_atom'):.2g}")
PY
  # One committable record of both codes, with this machine's header.
  python3 "$root/bench/gromacs_record.py" --haloex "$out"/hx-*.json \
    --gromacs "$out/gromacs-auto.json" "$out/gromacs-tuned.json" --setting thermostat=v-rescale \
    --setting steps="$steps" --benchmark "haloex-md vs GROMACS 2026.3, one GPU, both codes in one call (run.sh stage gromacs)" \
    --out "$out/md-vs-gromacs.json" 2>&1 | sed "s/^/  /" | tee -a "$summary"
}

# Issue 33 part 4: GROMACS 2026.3 on the same GPUs as haloex-md, one
# thread-MPI rank per GPU (-nb gpu -update gpu; GPU direct communication,
# GROMACS's default for thread-MPI), both with v-rescale (GROMACS tunes
# nstlist only with a thermostat), at 11 250 and 22 500 atoms per GPU
# (GMXDD_SIZES), on every grid of strong_scaling_grids: GROMACS at its
# automatic nstlist and at 100 (its best on one GPU), haloex-md nvshmem
# direct at its automatic settings. Records gromacs-dd-<grid>.json and
# hxdd-<grid>-<atoms>.json, each written as its runs end, and both codes of
# a grid as md-vs-gromacs-<grid>.json (~3 min per grid).
stage_gromacs_dd() {
  note "== GROMACS and haloex-md on $ngpu GPUs, one rank per GPU (bench/gromacs_bench.py --ntmpi)"
  [ "$ngpu" -ge 2 ] || { note "  needs two or more GPUs: $ngpu visible"; return 1; }
  unpack_gromacs || return 0
  local specs spec n grid per a atoms dd steps=${GMX_STEPS:-10000}
  mapfile -t specs < <(strong_scaling_grids)
  for spec in "${specs[@]}"; do
    n=${spec%%:*}; grid=${spec#*:}; atoms=()
    IFS=x read -r -a dd <<<"$grid"
    for per in ${GMXDD_SIZES:-11250 22500}; do atoms+=($((per * n))); done
    for a in "${atoms[@]}"; do
      timeout 300 "${mpirun_np[@]}" "$n" "$build/bin/haloex-md" --transport nvshmem --nvshmem-path direct \
        --grid "$grid" --atoms "$a" --steps "$steps" --thermostat v-rescale --quiet \
        --json "$out/hxdd-$grid-$a.json" >"$out/hxdd-$grid-$a.log" 2>&1
      note "  haloex $grid $a atoms: rc=$? $(grep -E 'Performance:|Steady state:' "$out/hxdd-$grid-$a.log" | sed 's/^ *//' | tr '\n' ' ')"
    done
    timeout 500 python3 "$root/bench/gromacs_bench.py" --gmx /root/gmx/bin/gmx --haloex-md "$build/bin/haloex-md" \
      --ntmpi "$n" --dd "${dd[@]}" --atoms "${atoms[@]}" --steps "$steps" --nstlist auto 100 \
      --thermostat v-rescale --workdir "/tmp/gmxdd-$grid" --out "$out/gromacs-dd-$grid.json" \
      >"$out/gromacs-dd-$grid.log" 2>&1
    note "  gromacs $grid: rc=$?"
    python3 - "$out/gromacs-dd-$grid.json" <<'PY' | tee -a "$summary"
import json, sys
try:
    records = json.load(open(sys.argv[1]))
except (OSError, ValueError) as e:
    sys.exit(f"    no record: {e}")
for r in records:
    print(f"    gromacs {r.get('atoms')} atoms nstlist {r.get('nstlist')} ({r.get('nstlist_requested')}), dd "
          f"{r.get('dd_grid')}, direct comm {r.get('gpu_direct_comm')}: {r.get('us_per_step')} us/step "
          f"({r.get('us_per_step_without_search_and_dd')} without search and DD) {r.get('error', '')[:200]}")
PY
    python3 "$root/bench/gromacs_record.py" --haloex "$out"/hxdd-"$grid"-*.json --gromacs "$out/gromacs-dd-$grid.json" \
      --setting thermostat=v-rescale --setting steps="$steps" --setting grid="$grid" \
      --benchmark "haloex-md (nvshmem direct) vs GROMACS 2026.3 (thread-MPI, GPU direct communication), $n GPUs, grid $grid" \
      --out "$out/md-vs-gromacs-$grid.json" 2>&1 | sed "s/^/  /" | tee -a "$summary"
  done
}

# Conserved-energy drift of NVE runs on one GPU under the settings that
# shape it (pair-list buffer and life, rolling pruning), fitted by the run
# itself after the start's relaxation (--drift-from NVE_FROM_PS, 4 ps: the
# lattice start relaxes in its first picoseconds).
stage_nve_drift() {
  # NVE_BINARIES: haloex-md builds to compare (e.g. /tmp/haloex-md-A after
  # stage ab; builds before 2026-12-03 lack --drift-from).
  local from=${NVE_FROM_PS:-4} args bin r i
  i=$(find "$out" -maxdepth 1 -name 'nve-*.log' | wc -l)  # numbered on from earlier calls in this run
  note "== NVE drift, ${NVE_ATOMS:-6000} atoms, ${NVE_STEPS:-12000} steps (kJ/mol/ps per atom, fitted from $from ps)"
  for bin in ${NVE_BINARIES:-$build/bin/haloex-md}; do
    while IFS= read -r args; do
      for r in $(seq "${NVE_REPEATS:-1}"); do
        i=$((i + 1))
        # shellcheck disable=SC2086
        timeout 300 "$bin" --device gpu --atoms "${NVE_ATOMS:-6000}" --steps "${NVE_STEPS:-12000}" \
          --thermo-every 100 --drift-from "$from" --quiet --json "$out/nve-$i.json" $args >"$out/nve-$i.log" 2>&1
        note "  $(basename "$bin") [$args] #$r rc=$? $(grep -E 'Conserved-energy drift' "$out/nve-$i.log" | cut -c25-120) | $(grep -E '^ +rc ' "$out/nve-$i.log" | sed 's/^ *//' | cut -c1-80)"
      done
    done <<EOF2
${NVE_VARIANTS:---search device
--search host}
EOF2
  done
}

# haloex-md with option variants side by side (MDV_VARIANTS, one per line;
# an empty line is the defaults) at MDV_SIZES, MDV_REPEATS rounds, the order
# of the variants reversed every other round: what an option costs.
stage_md_variants() {
  note "== haloex-md variants, ${MDV_STEPS:-3000} steps (all steps and steady state, us/step)"
  local n r args list
  # Numbered on from earlier calls in this run: a stage may call this twice.
  local i
  i=$(find "$out" -maxdepth 1 -name 'mdv-*.log' | wc -l)
  mapfile -t list <<<"${MDV_VARIANTS:?set MDV_VARIANTS}"
  for n in ${MDV_SIZES:-22500 720000}; do
    for r in $(seq "${MDV_REPEATS:-2}"); do
      local order=("${list[@]}")
      [ $((r % 2)) = 0 ] && mapfile -t order < <(printf '%s\n' "${list[@]}" | tac)
      for args in "${order[@]}"; do
        i=$((i + 1))
        # shellcheck disable=SC2086
        timeout 300 "$build/bin/haloex-md" --device gpu --atoms "$n" --steps "${MDV_STEPS:-3000}" --quiet --log none \
          --json "$out/mdv-$i.json" $args >"$out/mdv-$i.log" 2>&1
        note "  $n atoms [$args] #$r rc=$? $(grep -E 'Performance|Steady' "$out/mdv-$i.log" | sed 's/^ *//' | cut -c1-90 | tr '\n' ' ') $(grep -oiE 'inner[^,;)]*' "$out/mdv-$i.log" | head -1)"
      done
    done
  done
}

# Issue 34 part 5 after a kernel change: the NVE drift at the automatic
# settings at every size (NVE_SIZES), 20 000 steps fitted from 10 ps, one
# run each (~2 min on one H200).
stage_nve_sizes() {
  local n
  for n in ${NVE_SIZES:-5626 11250 22500 45000 90000 180000 360000 720000}; do
    NVE_ATOMS=$n NVE_STEPS=20000 NVE_FROM_PS=10 NVE_REPEATS=1 NVE_VARIANTS="--search device" stage_nve_drift
  done
}

# Issue 34 part 5 (docs/results.md, "The NVE drift at 180 000 atoms"): the
# short-list rule (a GPU list living under 0.12 ps held to a fifth of
# --buffer-tolerance) at the sizes whose automatic choice it changed: the NVE
# drift at the automatic settings (target |drift| <= 1e-5 kJ/mol/ps per atom,
# 20 000 steps fitted from 10 ps), then the step against the old choice given
# explicitly, alternating (~4 min on one H200).
stage_short_lists() {
  NVE_ATOMS=180000 NVE_STEPS=20000 NVE_FROM_PS=10 NVE_REPEATS=2 NVE_VARIANTS="--search device" stage_nve_drift
  NVE_ATOMS=720000 NVE_STEPS=20000 NVE_FROM_PS=10 NVE_REPEATS=1 NVE_VARIANTS="--search device" stage_nve_drift
  MDV_SIZES="90000 180000" MDV_REPEATS=3 MDV_VARIANTS=$'\n--nstlist 50 --rlist 0.985\n--nstlist 40 --rlist 0.96' \
    stage_md_variants
  MDV_SIZES="720000" MDV_REPEATS=3 MDV_STEPS=2000 MDV_VARIANTS=$'\n--nstlist 40 --rlist 0.96' stage_md_variants
}

# Issue 34 parts 3 and 4 and issue 33's kernel changes, verified: the GPU
# tests of --fuse-update (one rank: scatter, leapfrog and the next gather in
# one kernel), --sort-atoms (home atoms in the pair search's cell order at
# every search), the exchange kernels' timestamps and signals per block
# (HALOEX_EXCHANGE_SIGNALS=block), with the MD and transport tests around
# them (2, 4 and 8 ranks under MPS included); memcheck and racecheck on the
# MD tests (~8 min on one H200). Then fused-update and signals-ab measure them.
stage_step_tests() {
  CTEST_R='MdEngineGpu|DeviceMigration|DevicePlanBuilder|ParticleStoreReorder|CellOrderGpu|test_md_cell_order_gpu|test_md_transports_gpu|NonbondedGpu|test_md_exchange_parts|FusedExchangeLoadStore|test_transport_device_np' \
    stage_ctest_select
  local t
  # STEP_SANITIZE=0: the tests alone (a short lease runs the sanitizers later).
  [ "${STEP_SANITIZE:-1}" = 0 ] && return 0
  for t in memcheck racecheck; do
    sanitize_test $t test_md_engine_gpu '*FusedUpdate*:*SortAtoms*' fused "fused update, cell order"
    sanitize_test $t test_md_cell_order_gpu '*' cellorder "cell order and build"
  done
  # (Not the fused kernels' test: its two virtual ranks wait for each other
  # from two streams of one process, which a sanitizer may serialise.)
}

# The step with neither, either and both of --fuse-update and --sort-atoms at
# every size (each given: auto turns both on for one rank), alternating
# (~4 min on one H200); then the 2-rank step under MPS with and without the
# cell order (the one-GPU estimate's runs, ~2 min).
stage_fused_update() {
  local variants=$'--fuse-update 0 --sort-atoms 0\n--fuse-update 1 --sort-atoms 0\n--fuse-update 0 --sort-atoms 1\n--fuse-update 1 --sort-atoms 1'
  MDV_SIZES="5626 11250 22500 90000" MDV_REPEATS=3 MDV_STEPS=4000 MDV_VARIANTS=$variants stage_md_variants
  MDV_SIZES="720000" MDV_REPEATS=3 MDV_STEPS=2000 MDV_VARIANTS=$variants stage_md_variants
  ESTIMATE_VARIANTS=nvshmem/direct+unsorted+unfused-update,nvshmem/direct+sorted+unfused-update ESTIMATE_SIZES=11250,22500 \
    stage_md_estimate
}

# The fused update with a halo (--fuse-update with several ranks): the
# one-GPU estimate (2 ranks under MPS, half the SMs each, against one rank)
# at 11 250 and 22 500 atoms per rank, nvshmem direct without it and the
# cell order, with it alone, and at auto (both, since the two together
# measured faster) (~3 min).
stage_fused_halo() {
  ESTIMATE_VARIANTS=nvshmem/direct+unsorted+unfused-update,nvshmem/direct+unsorted+fused-update,nvshmem/direct \
    ESTIMATE_SIZES=11250,22500 stage_md_estimate
}

# The pair list's lifetime with several ranks (issue 33): the automatic
# nstlist is fitted to one rank (at 11 250 atoms it picks 150 steps and
# rlist 1.13 nm), but a longer list also widens every halo and the non-local
# kernel's work, and a multi-rank search step costs twice one rank's. The
# one-GPU estimate at nstlist auto, 40 and 80 (~4 min).
stage_multi_rank_nstlist() {
  ESTIMATE_VARIANTS=nvshmem/direct,nvshmem/direct+nstlist=40,nvshmem/direct+nstlist=80 ESTIMATE_SIZES=11250,22500 \
    stage_md_estimate
}

# Graphs of several steps on several ranks (issue 33): the two-rank step
# graph starts 4.7-5.1 us after the last one ends, one rank's 1.5. A = the
# default (graphs of four steps since 2026-12-06), B = --steps-per-graph 1
# (a graph per step), the same build: the GPU tests,
# then two ranks 2x1x1 at 22 500 atoms with half the SMs each and without a
# cap, four ranks 2x2x1 at 45 000, one rank at 11 250 with half the SMs (the
# estimate's pair), 3 alternating repeats; then A's kernel trace (the gap
# inside a graph of several steps). ~5 min.
stage_steps_per_graph_ab() {
  CTEST_R='StepsPerGraph|test_md_transports_gpu_np[24]' stage_ctest_select
  MD_AB_B_ARGS="--steps-per-graph 1" switch_ab_runs
  MD_AB_OTHER="$build/bin/haloex-md" MD_AB_B_ARGS="--steps-per-graph 1" MD_AB_REPEATS=3 MD_AB_STEPS=3000 \
    MD_AB_RANKS=1 MD_AB_ATOMS=11250 MD_AB_SM=50 stage_md_ab_bins
  TRACE_SM=50 TRACE_SIZES=' ' stage_kernel_trace
}

# Issue 34 part 4 (fewer launches at small sizes): the normal steps as
# graphs of several steps (--steps-per-graph 4 and 16) against a graph per
# step, at the three sizes whose steady goals are missed, 3 alternating
# repeats (~3 min on one H200).
stage_steps_per_graph() {
  MDV_SIZES="5626 11250 22500" MDV_REPEATS=3 MDV_STEPS=4000 \
    MDV_VARIANTS=$'--steps-per-graph 1\n--steps-per-graph 4\n--steps-per-graph 16' stage_md_variants
}

# The sizes the lease of 2026-12-05 left out of fused-update, for the
# options' defaults (where the fused update stops paying): 180 000 and
# 360 000 atoms, the four variants alternating, 3 repeats (~4 min).
stage_fused_update_large() {
  MDV_SIZES="180000 360000" MDV_REPEATS=3 MDV_STEPS=2000 \
    MDV_VARIANTS=$'--fuse-update 0 --sort-atoms 0\n--fuse-update 1 --sort-atoms 0\n--fuse-update 0 --sort-atoms 1\n--fuse-update 1 --sort-atoms 1' \
    stage_md_variants
}

# Issue 34 part 5's cost: the short-list rule's 0.995 nm at 40 steps drifts
# half the goal and costs 7-9 % against 0.96 nm (2026-12-05). The NVE drift
# at 0.975 nm (180 000 atoms twice, 720 000 once; 20 000 steps fitted from
# 10 ps), then its step against the automatic choice and 0.96 nm (~5 min).
stage_short_list_radius() {
  NVE_ATOMS=180000 NVE_STEPS=20000 NVE_FROM_PS=10 NVE_REPEATS=2 NVE_VARIANTS="--search device --nstlist 40 --rlist 0.975" \
    stage_nve_drift
  NVE_ATOMS=720000 NVE_STEPS=20000 NVE_FROM_PS=10 NVE_REPEATS=1 NVE_VARIANTS="--search device --nstlist 40 --rlist 0.975" \
    stage_nve_drift
  MDV_SIZES="180000 720000" MDV_REPEATS=3 MDV_STEPS=2000 \
    MDV_VARIANTS=$'\n--nstlist 40 --rlist 0.975\n--nstlist 40 --rlist 0.96' stage_md_variants
}

# Issue 34: the entry length at small sizes with the four-pair tile (a warp
# takes an entry two j clusters at a time, then one transposing reduction):
# haloex-bench-nonbonded --as-md at each --max-j (0: the automatic choice),
# ENTRY_REPEATS rounds over the lengths, one record (entry-length.json) with
# every run and the local kernel's median per size and length (~2 min).
stage_entry_length() {
  note "== entry length: haloex-bench-nonbonded --as-md --max-j at each length (bench/entry_length.py)"
  # shellcheck disable=SC2086
  python3 "$root/bench/entry_length.py" --bench "$build/bin/haloex-bench-nonbonded" \
    --sizes ${ENTRY_SIZES:-5626 11250 22500 45000} --lengths ${ENTRY_LENGTHS:-0 8 16 32 64 128} \
    --repeats "${ENTRY_REPEATS:-3}" --out "$out/entry-length.json" 2>&1 | sed "s/^/  /" | tee -a "$summary"
}

# Issue 34 part 5: what the outer list's radius costs the force kernel with
# the rolling prune's inner list held at 0.92 nm (8 parts), and what each
# list holds (haloex-bench-nonbonded's census): at 0.96, 0.975, 0.995 and
# 1.03 nm, 180 000 and 720 000 atoms; beside them the kernel without pruning
# on lists of 0.92 and 0.995 nm, the cost of each list evaluated whole
# (~2 min on one H200).
stage_outer_radius() {
  note "== the force kernel against the outer radius (inner 0.92 nm, 8 parts; inner 0: no pruning)"
  python3 "$root/bench/outer_radius.py" --bench "$build/bin/haloex-bench-nonbonded" --sizes 180000 720000 \
    --out "$out/nonbonded-outer-radius.json" 2>&1 | sed "s/^/  /" | tee -a "$summary"
}

# The "no host synchronisation in a step" claim checked by CUPTI: host-blocking
# CUDA calls (any library's) inside the steps without search, per transport.
stage_syncs() {
  note "== host-blocking CUDA calls inside the steps without search (CUPTI, --count-api-syncs)"
  local g
  for g in 1 0; do
    timeout 300 "$build/bin/haloex-md" --device gpu --atoms 22500 --steps 1000 --cuda-graphs $g --count-api-syncs \
      --quiet --json "$out/syncs-1rank-graphs$g.json" >"$out/syncs-1rank-graphs$g.log" 2>&1
    note "  1 rank, graphs $g: rc=$? $(grep -E 'host-blocking' "$out/syncs-1rank-graphs$g.log" | sed 's/^ *//')"
  done
  start_mps
  local t
  for t in ${SYNCS_TRANSPORTS:-nvshmem staged ipc}; do
    md_json 2 "$out/syncs-2ranks-$t.json" --transport "$t" --grid 2x1x1 --atoms 22500 --steps 1000 --count-api-syncs
    grep -E 'host-blocking' "$out/syncs-2ranks-$t.json.log" | sed 's/^ */    /' | tee -a "$summary"
  done
  stop_mps
}

# A/B of one change in one lease: haloex-md as built (B), and rebuilt with
# the files under $AB_DIR (a copy of their previous version at the same
# paths, e.g. .devsrc/ab/proxies/md/cuda/pair_search.cu) in place (A); both run
# the search-step sizes with the search on the device, alternating A B A B
# (AB_NSTLIST=0: each picks its own nstlist).
# /tmp/haloex-md-A: haloex-md rebuilt with the files under $AB_DIR in place
# (their previous version), the build then restored (/tmp/haloex-md-B).
build_variant_a() {
  local dir=${AB_DIR:-$root/.devsrc/ab}
  [ -d "$dir" ] || { note "ab: no $dir"; return 1; }
  note "-- A = previous version of $(cd "$dir" && find . -type f | sed 's|^\./||' | tr '\n' ' ')"
  cp "$build/bin/haloex-md" /tmp/haloex-md-B
  local f saved=/tmp/ab-saved
  rm -rf "$saved"; mkdir -p "$saved"
  (cd "$dir" && find . -type f) | while read -r f; do
    mkdir -p "$saved/$(dirname "$f")"; cp "$root/$f" "$saved/$f"; cp "$dir/$f" "$root/$f"
  done
  cmake --build "$build" --target haloex-md >"$out/ab-build.log" 2>&1 || { note "ab: build of A FAILED"; tail -30 "$out/ab-build.log"; return 1; }
  cp "$build/bin/haloex-md" /tmp/haloex-md-A
  cp -r "$saved/." "$root/"
  cmake --build "$build" --target haloex-md >>"$out/ab-build.log" 2>&1
}

# haloex-md of another commit (pack.sh --other COMMIT: .devsrc/other.tar.gz)
# as /tmp/haloex-md-A, for md-ab-bins (MD_AB_OTHER=/tmp/haloex-md-A): an A/B
# of two whole commits in one lease.
# haloex-md of another source tree (SRC) in SRC/build, without tests; the
# log to LOG, its tail printed where the build fails.
build_md_tree() {  # SRC LOG
  { cmake -S "$1" -B "$1/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
      -DHALOEX_BUILD_TESTS=OFF && cmake --build "$1/build" -j "$(nproc)" --target haloex-md; } >"$2" 2>&1 \
    || { tail -30 "$2"; return 1; }
}

stage_build_other() {
  local tarball="$root/.devsrc/other.tar.gz" src=/tmp/hx-other
  [ -f "$tarball" ] || { note "build-other: no $tarball (pack.sh --other COMMIT)"; return 1; }
  note "== build of the other commit $(cat "$root/.devsrc/other-commit" 2>/dev/null) (haloex-md, and its haloex-bench-nonbonded where it has one)"
  rm -rf "$src" && mkdir -p "$src" && tar xzf "$tarball" -C "$src"
  local t0=$SECONDS
  build_md_tree "$src" "$out/build-other.log" || { note "build-other FAILED"; return 1; }
  cp "$src/build/bin/haloex-md" /tmp/haloex-md-A
  # The kernels' A (stage kernel-ab); a commit before --as-md (2689f13) has a bench program kernel-ab cannot drive.
  if cmake --build "$src/build" -j "$(nproc)" --target haloex-bench-nonbonded >>"$out/build-other.log" 2>&1; then
    cp "$src/build/bin/haloex-bench-nonbonded" /tmp/haloex-bench-nonbonded-A
  fi
  note "build-other ok ($((SECONDS - t0)) s): /tmp/haloex-md-A$([ -x /tmp/haloex-bench-nonbonded-A ] && echo ', /tmp/haloex-bench-nonbonded-A')"
}

# Only /tmp/haloex-md-A (e.g. for md-ab-bins with MD_AB_OTHER=/tmp/haloex-md-A).
stage_ab_build() {
  note "== A/B build"
  build_variant_a
}

# A/B of one change in one lease: haloex-md as built (B), and rebuilt with
# the files under $AB_DIR (a copy of their previous version at the same
# paths, e.g. .devsrc/ab/proxies/md/cuda/pair_search.cu) in place (A); both run
# the search-step sizes with the search on the device, alternating A B A B
# (AB_NSTLIST=0: each picks its own nstlist).
stage_ab() {
  note "== A/B${AB_C_ENV:+ (C = B with $AB_C_ENV)}"
  build_variant_a || return 1
  # AB_C_ENV="VAR=value ...": a third variant C, the B binary with those
  # variables set (e.g. a switch inside B), in the same alternation.
  cp /tmp/haloex-md-B /tmp/haloex-md-C
  local n v r order
  for n in ${SEARCH_SIZES:-22500 180000 720000}; do
    for r in $(seq "${AB_REPEATS:-2}"); do
      # A first, then B first: phases that drift over successive runs
      # (seen at 720 000 atoms) do not all land on one side.
      order=$([ $((r % 2)) = 1 ] && echo A B || echo B A)
      [ -n "${AB_C_ENV:-}" ] && order=$([ $((r % 2)) = 1 ] && echo A B C || echo C B A)
      for v in $order; do
        env $([ $v = C ] && echo "${AB_C_ENV:-}") timeout 300 "/tmp/haloex-md-$v" --device gpu --atoms $n \
          --steps ${SEARCH_STEPS:-1000} --nstlist ${AB_NSTLIST:-50} \
          --quiet --log none --json "$out/ab-$n-$v-$r.json" >"$out/ab-$n-$v-$r.log" 2>&1
        note "  $n atoms $v (repeat $r): rc=$? $(grep -E 'Performance|Search step|of its pair' "$out/ab-$n-$v-$r.log" | sed 's/^ *//' | cut -c1-330 | tr '\n' ' ')"
      done
    done
  done
}

# The MD kernels with and without relocatable device code, one build
# (bench/rdc_cost.py): the -rdc cost of the non-bonded kernel, measured.
stage_rdc_cost() {
  note "== -rdc cost of the MD kernels (bench/rdc_cost.py)"
  python3 "$root/bench/rdc_cost.py" --build "$build" --out "$out/rdc-cost.json" ${RDC_ARGS:-} 2>&1 | tail -8 | tee -a "$summary"
}

# The one-GPU estimate of the multi-rank step (bench/md_bench.py estimate):
# ranks sharing the GPU under MPS, each capped to ESTIMATE_SM (50) % of the
# SMs, one rank with N atoms against two with 2N, with the device timeline's
# parts with ESTIMATE_PARTS=1 (their events sit on the step's critical
# path). Never a multi-GPU result.
# The MD kernels of two builds on this GPU (issue 34: a kernel change is kept
# only if faster): build-other's haloex-bench-nonbonded (A) against this
# build's (B), KERNEL_AB_REPEATS (default 5) alternating runs each with
# haloex-md's pair-list settings, medians, B / A and a verdict per size
# (bench/kernel_ab.py); the record is $out/kernel-ab.json.
stage_kernel_ab() {
  note "== kernel A/B: A = $(cat "$root/.devsrc/other-commit" 2>/dev/null || echo '?'), B = this build"
  [ -x /tmp/haloex-bench-nonbonded-A ] || { note "  no /tmp/haloex-bench-nonbonded-A: run build-other first (pack.sh --other COMMIT)"; return 1; }
  # shellcheck disable=SC2086
  python3 "$root/bench/kernel_ab.py" --a /tmp/haloex-bench-nonbonded-A --b "$build/bin/haloex-bench-nonbonded" \
    --a-commit "$(cat "$root/.devsrc/other-commit" 2>/dev/null)" --sizes ${KERNEL_AB_SIZES:-11250 22500 90000 720000} \
    --repeats "${KERNEL_AB_REPEATS:-5}" --steps "${KERNEL_AB_STEPS:-200}" --out "$out/kernel-ab.json" 2>&1 | tee -a "$summary"
}

# A stack of kernel changes in one allocation (issue 34: each kept only if
# faster): every .devsrc/variants/NN-NAME.patch (pack.sh --variant
# NAME=COMMIT, a difference from HEAD) applied to this tree in turn, its
# haloex-bench-nonbonded built as /tmp/haloex-bench-nonbonded-NAME and the
# patch taken back; then all of them and HEAD's (A) in one rotation
# (bench/kernel_ab.py --variant), each against A and against the one before.
# The record is $out/kernel-variants.json.
apply_patch() {  # PATCH [-R]: git apply where git is, else patch(1)
  if command -v git >/dev/null; then (cd "$root" && git apply ${2:+"$2"} "$1"); else patch -d "$root" -p1 ${2:+"$2"} <"$1"; fi
}
stage_kernel_variants() {
  local patches=("$root"/.devsrc/variants/*.patch) patch name labels=() t0=$SECONDS
  [ -f "${patches[0]}" ] || { note "kernel-variants: no .devsrc/variants/*.patch (pack.sh --variant NAME=COMMIT[:PATH])"; return 1; }
  local packed
  packed=$(cat "$root/.devsrc/variants/count" 2>/dev/null || echo none)
  [ "$packed" = "${#patches[@]}" ] || {
    note "kernel-variants: pack.sh recorded $packed variant(s), ${#patches[@]} patch(es) found: the pack was cut short; run pack.sh again"
    return 1
  }
  note "== kernel variants: A = $(cat "$root/.commit" 2>/dev/null || echo HEAD); ${#patches[@]} variant(s)"
  cmake --build "$build" --target haloex-bench-nonbonded >"$out/kernel-variants-build.log" 2>&1 || { note "  A's build FAILED"; return 1; }
  cp "$build/bin/haloex-bench-nonbonded" /tmp/haloex-bench-nonbonded-base
  for patch in "${patches[@]}"; do
    name=$(basename "$patch" .patch); name=${name#*-}
    if ! apply_patch "$patch" >>"$out/kernel-variants-build.log" 2>&1; then
      note "  variant $name: the patch does not apply"; continue
    fi
    if cmake --build "$build" --target haloex-bench-nonbonded >>"$out/kernel-variants-build.log" 2>&1; then
      cp "$build/bin/haloex-bench-nonbonded" "/tmp/haloex-bench-nonbonded-$name"
      labels+=("$name=/tmp/haloex-bench-nonbonded-$name")
      note "  variant $name ($(cat "${patch%.patch}.commit" 2>/dev/null)) built"
    else
      grep -E -A8 'error' "$out/kernel-variants-build.log" | tail -30; note "  variant $name: build FAILED"
    fi
    apply_patch "$patch" -R
  done
  cmake --build "$build" >>"$out/kernel-variants-build.log" 2>&1  # this tree's own again, for later stages
  note "  builds: $((SECONDS - t0)) s"
  [ ${#labels[@]} -gt 0 ] || return 1
  note "  B = ${labels[0]%%=*}; the others under their names"
  local b="${labels[0]#*=}" extra=() v
  for v in "${labels[@]:1}"; do extra+=(--variant "$v"); done
  # shellcheck disable=SC2086
  python3 "$root/bench/kernel_ab.py" --a /tmp/haloex-bench-nonbonded-base --b "$b" "${extra[@]}" \
    --a-commit "$(cat "$root/.commit" 2>/dev/null)" --sizes ${KERNEL_AB_SIZES:-11250 22500 90000 720000} \
    --repeats "${KERNEL_AB_REPEATS:-3}" --steps "${KERNEL_AB_STEPS:-200}" --out "$out/kernel-variants.json" 2>&1 \
    | grep -v '^repeat' | tee -a "$summary"
}

stage_md_estimate() {
  note "== one-GPU estimate of the 2-rank step (MPS, ${ESTIMATE_SM:-50} % of the SMs per rank)"
  start_mps
  python3 "$root/bench/md_bench.py" estimate --build "$build" --ranks 2 --sm-percent "${ESTIMATE_SM:-50}" \
    --repeats "${ESTIMATE_REPEATS:-3}" ${ESTIMATE_SIZES:+--sizes $ESTIMATE_SIZES} ${QUICK:+--quick} \
    ${ESTIMATE_VARIANTS:+--variants $ESTIMATE_VARIANTS} \
    ${ESTIMATE_PARTS:+--timeline-parts} --out "$out" 2>&1 \
    | tee -a "$summary"
  stop_mps
}

stage_md_single() {
  note "== haloex-md on one GPU: sizes 5.6k..720k (bench/md_bench.py single)"
  python3 "$root/bench/md_bench.py" single --build "$build" --out "$out" ${QUICK:+--quick} 2>&1 | tee -a "$summary"
}

# The nstlist cost model against measured runs: every size at several fixed
# nstlist and at the automatic choice (bench/md_bench.py nstlist), then the
# least-squares refit and which nstlist each model picks (bench/fit_nstlist.py).
stage_nstlist_fit() {
  note "== nstlist cost model: md_bench.py nstlist, then fit_nstlist.py"
  python3 "$root/bench/md_bench.py" nstlist --build "$build" --out "$out" ${NSTLIST_SIZES:+--sizes $NSTLIST_SIZES} \
    ${NSTLISTS:+--nstlists $NSTLISTS} 2>&1 | tee -a "$summary"
  local record
  record=$(ls -t "$out"/md-nstlist-*.json 2>/dev/null | head -1)
  [ -n "$record" ] || { note "nstlist-fit: no record"; return 1; }
  python3 "$root/bench/fit_nstlist.py" "$record" --json "$out/nstlist-fit.json" 2>&1 | tee -a "$summary"
}

stage_md_quality() {
  note "== MD quality on one GPU: NVE drift, buffer recount, GPU vs CPU energies"
  "$build/bin/tests/test_md_engine_gpu" --gtest_repeat=3 2>&1 | grep -E 'NVE:|step 0:|OK|FAILED|exception' | tee -a "$summary"
  timeout 300 "$build/bin/haloex-md" --device gpu --atoms 22500 --steps 2000 --measure-buffer --quiet \
    --json "$out/buffer-22500.json" 2>&1 | grep -E 'buffer check|us/step' | tee -a "$summary"
}

stage_jacobi() {
  note "== haloex-jacobi, all transports side by side (bench/jacobi_bench.py)"
  start_mps
  timeout 400 python3 "$root/bench/jacobi_bench.py" --exe "$build/bin/haloex-jacobi" --np "${JACOBI_NP:-2}" \
    ${SHARED:+--shared-gpus} ${QUICK:+--quick} --out "$out/jacobi-${SHARED:+shared-}$(date +%F).json" 2>&1 \
    | grep -E 'summary \(|\^2 |met |MISSED|SKIPPED|FAILED|wrote' | tail -40 | tee -a "$summary"
  stop_mps
}

# The fused kernel's interior work item (--tile-cells) at the sizes where it
# matters, nvshmem alone; the stage `jacobi` then runs every transport.
stage_jacobi_tiles() {
  note "== haloex-jacobi nvshmem: --tile-cells sweep at 8192^2 and 16384^2 per GPU"
  local n tile
  for n in 4096 8192 16384; do
    for tile in 1024 4096 16384 65536 262144; do
      timeout 60 "${mpirun_np[@]}" 2 "$build/bin/haloex-jacobi" --per-rank --nx $n --ny $n --niter 200 \
        --transport nvshmem --tile-cells $tile --csv >"$out/jacobi-tile-$n-$tile.log" 2>&1
      note "  rc=$? n=$n tile=$tile: $(grep -v '^#' "$out/jacobi-tile-$n-$tile.log" | grep nvshmem | tail -1)"
    done
  done
}

# haloex-jacobi on the halo API against the binary before it: the jacobi GPU
# tests and those of the library code it now runs on (the halo API on every
# device backend, halo-stress over staged/ipc/nccl: exchangeBlock(s)), then
# staged, ipc, nccl (it must skip with its reason: two ranks on one GPU) and
# nvshmem on 2 ranks sharing the GPU under MPS, at 1024^2 and
# 4096^2 cells per rank (JACOBI_API_SIZES), 3 timed runs each. With
# JACOBI_OLD_BIN=/path/haloex-jacobi (an earlier build) every size also runs
# that binary, right after this one, for an A/B in one lease. About 2-3 minutes.
stage_jacobi_api() {
  note "== haloex-jacobi on the halo API: its GPU tests and the halo API's, then 2 ranks on one GPU (MPS)"
  start_mps
  # JACOBI_API_SKIP_CTEST=1: the timed runs only (after stage test-gpu ran the tests).
  if [ -z "${JACOBI_API_SKIP_CTEST:-}" ]; then
    (cd "$build" && ctest --output-on-failure --timeout 120 -j 4 -L gpu -E 'np8|2x2x2' \
      -R 'jacobi|ParticleHaloBackend|test_particle_halo_device|halo_stress_(staged|ipc|nccl)' \
      >"$out/jacobi-api-ctest.log" 2>&1)
    local rc=$?
    grep -E 'tests passed|tests failed|\*\*\*Failed|Timeout|Not Run' "$out/jacobi-api-ctest.log" | tee -a "$summary"
    [ $rc -eq 0 ] || grep -E -B5 -A30 'FAILED|Failure|differ' "$out/jacobi-api-ctest.log" | head -80
  fi
  local bins=("new:$build/bin/haloex-jacobi") n b label exe log
  if [ -n "${JACOBI_OLD_BIN:-}" ]; then
    if [ -x "$JACOBI_OLD_BIN" ]; then bins+=("old:$JACOBI_OLD_BIN"); else note "  JACOBI_OLD_BIN=$JACOBI_OLD_BIN is not executable: this build only"; fi
  fi
  # JACOBI_API_ABBA=1: new, old, old, new (an order effect shows as a split).
  [ -n "${JACOBI_API_ABBA:-}" ] && [ ${#bins[@]} -eq 2 ] && bins=("${bins[0]}" "${bins[1]}" "${bins[1]}" "${bins[0]}")
  for n in ${JACOBI_API_SIZES:-1024 4096}; do
    for b in "${bins[@]}"; do
      label=${b%%:*}
      exe=${b#*:}
      log="$out/jacobi-api-$label-$n.log"
      timeout 150 "${mpirun_np[@]}" 2 "$exe" --per-rank --nx "$n" --ny "$n" --niter "${JACOBI_API_NITER:-500}" \
        --warmup 20 --repeat 3 --allow-shared-gpus --transport "${JACOBI_API_TRANSPORTS:-staged,ipc,nccl,nvshmem}" \
        >"$log" 2>&1
      note "  $label ${n}^2 per rank: rc=$? ($exe)"
      sed -n '/^summary (/,$p' "$log" | grep -E '^(staged|ipc|nccl|nvshmem) ' | cut -c1-250 | sed "s/^/    $label ${n}^2  /" \
        | tee -a "$summary"
      [ -s "$log" ] && grep -qE '^summary \(' "$log" || tail -15 "$log"
    done
  done
  stop_mps
}

stage_commbench() {
  note "== haloex-commbench (bench/commbench.py)"
  start_mps
  timeout 300 python3 "$root/bench/commbench.py" --exe "$build/bin/haloex-commbench" ${SHARED:+--shared-gpus} \
    ${QUICK:+--quick} --out "$out/commbench-${SHARED:+shared-}$(date +%F).json" 2>&1 | tail -40 | tee -a "$summary"
  stop_mps
}

stage_md_stability() {
  note "== MD stability at the default buffer: 6000 atoms, 6000 steps"
  local r
  for r in "--rlist 0.985" "--rlist 0.985 --cuda-graphs 0" "--rlist 1.04" "--rlist 0.985 --nstlist 20"; do
    timeout 120 "$build/bin/haloex-md" --device gpu --atoms 6000 --steps 6000 --thermo-every 1000 $r \
      >"$out/stab.log" 2>&1
    note "  1 rank $r: rc=$? $(grep -cE '^ +[0-9]+ ' "$out/stab.log") energy lines; $(grep -E 'error|us/step without' "$out/stab.log" | head -1 | cut -c1-150)"
    grep -E '^ +[0-9]+ ' "$out/stab.log" | awk '{print "    step", $1, "total", $7, "T", $9}' | tail -3 | tee -a "$summary"
  done
  start_mps
  md_json 2 "$out/stab-2rank.json" --transport nvshmem --atoms 6000 --steps 6000 --thermo-every 1000 --rlist 0.985 --grid 2x1x1
  stop_mps
}

stage_sanitize() {
  note "== compute-sanitizer (memcheck, synccheck) on small cases"
  local t
  for t in memcheck synccheck; do
    sanitize_test $t test_md_nonbonded_gpu 'NonbondedGpu.Ref3000MatchesOracle' nb "nonbonded+pair search"
    sanitize_test $t test_md_integrate_gpu '*' int integrate
  done
  start_mps
  for t in memcheck synccheck; do
    for path in direct tma put; do
      timeout 90 "${mpirun_np[@]}" 2 compute-sanitizer --tool $t --error-exitcode 9 \
        "$build/bin/haloex-halo-stress" --allow-shared-gpus --transport nvshmem --nvshmem-path $path --grid 2x1x1 \
        --atoms 3000 --steps 10 --repartition-every 5 >"$out/sanitize-nvshmem-$path-$t.log" 2>&1
      note "  nvshmem fused kernels $path ($t): rc=$? $(grep -m1 -E 'ERROR SUMMARY' "$out/sanitize-nvshmem-$path-$t.log")"
    done
  done
  stop_mps
}

# The fusion ablation (docs/nvshmem.md, per-pulse launches): MD on 2 ranks
# sharing the GPU under MPS, nvshmem direct fused against one launch per
# pulse (with and without graphs): energies equal over 50 steps, then a
# longer per-pulse run across repartitionings.
stage_ablation_check() {
  note "== nvshmem per-pulse launches: MD energies against the fused kernels (2 ranks, MPS)"
  start_mps
  local common=(--atoms 22500 --steps 60 --thermo-every 1 --grid 2x1x1 --transport nvshmem --nvshmem-path direct)
  md_json 2 "$out/ab-fused.json" "${common[@]}"
  md_json 2 "$out/ab-perpulse.json" "${common[@]}" --nvshmem-launch per-pulse
  md_json 2 "$out/ab-perpulse-nograph.json" "${common[@]}" --nvshmem-launch per-pulse --cuda-graphs 0
  python3 "$root/bench/compare_energies.py" "$out/ab-fused.json" "$out/ab-perpulse.json" "$out/ab-perpulse-nograph.json" \
    --steps 50 --rtol 1e-5 2>&1 | tee -a "$summary"
  md_json 4 "$out/ab-perpulse-long.json" --transport nvshmem --nvshmem-launch per-pulse --atoms 45000 --steps 3000 \
    --nstlist 50 --grid 2x2x1
  stop_mps
}

# haloex-md's refusals that depend on what this machine's build has: a
# trajectory in a format the build lacks (H5MD without HDF5) is refused
# before step 0 with the reason, and nothing is written.
stage_cli_refusals() {
  note "== haloex-md refusals on this build"
  local dir=/tmp/refusals; rm -rf "$dir"; mkdir -p "$dir"
  (cd "$dir" && timeout 60 "$build/bin/haloex-md" --device gpu --atoms 3000 --steps 10 --traj traj.h5 --log none \
    >"$out/refusal-h5md.log" 2>&1)
  note "  --traj traj.h5: rc=$? $(grep -m1 -iE 'h5md|hdf5' "$out/refusal-h5md.log" | cut -c1-240); files left: $(ls "$dir" | tr '\n' ' ')"
  "$build/bin/haloex-md" --version 2>&1 | grep -iE 'h5md|hdf5' | head -2 | tee -a "$summary"
}

# The on/off environment switches (haloex::detail::environmentSwitch) on a
# GPU run: a value other than 0 or 1 stops haloex-md with the switch's
# message (rc and first line noted), and 0 and 1 run. ~30 s.
stage_switch_refusals() {
  note "== environment switches: values other than 0 or 1 refused"
  local sw value log
  for sw in HALOEX_PDL HALOEX_CELL_ORDER_GRAPH HALOEX_SEARCH_GRAPH HALOEX_COLUMN_SORT HALOEX_FORWARD_FIRST \
    HALOEX_HOME_STORES HALOEX_HOME_SIGNALS HALOEX_GRAPH_UPLOAD HALOEX_FORWARD_COPY HALOEX_REVERSE_RECORDS; do
    for value in off 1 0; do
      log="$out/switch-$sw-$value.log"
      env "$sw=$value" timeout 60 "$build/bin/haloex-md" --device gpu --atoms 3000 --steps 20 --log none --quiet \
        >"$log" 2>&1
      note "  $sw=$value: rc=$? $(grep -m1 -E "$sw|Performance" "$log" | cut -c1-200)"
    done
  done
}

# examples/fused_stencil on 4 thread ranks (one process, one context), which
# hung under ctest -j4 with MPS: alone, with and without MPS, with the default
# and the largest number of hardware work queues (CUDA_DEVICE_MAX_CONNECTIONS).
stage_stencil_threads() {
  note "== fused_stencil --threads 4, alone"
  local mps conn r
  for mps in off on; do
    [ $mps = on ] && start_mps
    for conn in default 32; do
      for r in 1 2 3; do
        if [ $conn = default ]; then
          timeout 60 "$build/bin/examples/fused_stencil" --threads 4 --wait-timeout 10 >"$out/stencil-$mps-$conn-$r.log" 2>&1
        else
          CUDA_DEVICE_MAX_CONNECTIONS=$conn timeout 60 "$build/bin/examples/fused_stencil" --threads 4 --wait-timeout 10 \
            >"$out/stencil-$mps-$conn-$r.log" 2>&1
        fi
        note "  MPS $mps, connections $conn, run $r: rc=$? $(grep -m1 -oE 'matches the host reference bitwise|waited .* seen [0-9]+' "$out/stencil-$mps-$conn-$r.log" | cut -c1-120)"
      done
    done
    [ $mps = on ] && stop_mps
  done
}

# The nccl-device provider of the device halo view on one GPU: one rank that
# is its own neighbour (thread and process), NCCL's log checked for any
# NVLS/multicast use (there must be none).
stage_nccl_device() {
  note "== nccl-device provider, one rank"
  local log="$out/nccl-device.log"
  timeout 120 "$build/bin/tests/test_device_halo_view" --gtest_filter='*NcclDevice*' >"$log" 2>&1
  note "  DeviceHaloView nccl-device: rc=$? $(grep -E '^\[  (PASSED|FAILED)  \]|SKIPPED|Skipped' "$log" | head -3 | tr '\n' ' ')"
  timeout 120 "$build/bin/examples/fused_stencil" --threads 1 --backend nccl-device --steps 300 >"$out/nccl-device-threads1.log" 2>&1
  note "  fused_stencil --threads 1 nccl-device: rc=$? $(grep -m1 -E 'matches|differs|error|SKIPPED' "$out/nccl-device-threads1.log" | cut -c1-200)"
  NCCL_DEBUG=INFO timeout 120 "${mpirun_np[@]}" 1 "$build/bin/examples/fused_stencil" --backend nccl-device --steps 300 \
    --wait-timeout 20 >"$out/nccl-device-np1.log" 2>&1
  note "  fused_stencil np1 nccl-device: rc=$? $(grep -m1 -E 'matches|differs|error|SKIPPED' "$out/nccl-device-np1.log" | cut -c1-200)"
  grep -m2 -E 'nccl-device' "$out/nccl-device-np1.log" | cut -c1-240 | tee -a "$summary"
  note "  NCCL log lines naming NVLS or multicast: $(grep -ciE 'nvls|multicast|multimem' "$out/nccl-device-np1.log")"
  grep -iE 'nvls|multicast|multimem' "$out/nccl-device-np1.log" | head -5 | cut -c1-200 | tee -a "$summary"
}

# The two example tests that fail under `ctest -L gpu -j6` with MPS and pass
# alone: their fused_stencil is refused by cudaSetDevice
# (cudaErrorDevicesUnavailable). Each run 8 times with nothing beside it,
# then beside the CUPTI test (MdEngineGpu.NoHostBlockingCudaCallInsideNormalSteps,
# running at that moment in every failing ctest run), then beside a
# deliberately timed-out nvshmem run; the MPS server's log lines after each.
stage_mps_refusal() {
  note "== fused_stencil's cudaSetDevice under MPS, alone and beside other clients"
  start_mps
  local mode i t fails bg log
  for mode in alone cupti timeout; do
    fails=0
    bg=""
    case $mode in
      cupti) (for i in 1 2 3 4; do "$build/bin/tests/test_md_engine_gpu" \
                --gtest_filter='*NoHostBlocking*' >>"$out/mpsr-bg-cupti.log" 2>&1; done) & bg=$! ;;
      timeout) (for i in 1 2 3; do HALOEX_TEST_WITHHOLD_SIGNAL=1:0 timeout 60 "${mpirun_np[@]}" 2 -x HALOEX_TEST_WITHHOLD_SIGNAL \
                  "$build/bin/haloex-jacobi" --nx 64 --ny 64 --niter 20 --allow-shared-gpus --transport nvshmem \
                  --wait-timeout 2 >>"$out/mpsr-bg-timeout.log" 2>&1; done) & bg=$! ;;
    esac
    for i in $(seq 8); do
      for t in "--backend nccl-device --steps 10" "--backend ipc --steps 20 --withhold-from 6 --wait-timeout 1"; do
        log="$out/mpsr-$mode-$i-${t%% --steps*}.log"; log=${log// /_}
        timeout 60 "$build/bin/examples/fused_stencil" --threads 2 $t >"$log" 2>&1
        grep -q cudaErrorDevicesUnavailable "$log" && fails=$((fails + 1))
      done
    done
    [ -n "$bg" ] && wait "$bg"
    note "  $mode: $fails of 16 runs refused by cudaSetDevice (cudaErrorDevicesUnavailable)"
    grep -ihE "error|reject|refus|fail|fault|exception" /tmp/mpslog/server.log 2>/dev/null | tail -8 | cut -c1-200 | tee -a "$summary"
  done
  stop_mps
}

# The device tool brings back only a few files of $OUT (8 on 2026-12-05; the
# rest is lost with the machine): with more, everything goes into one
# tarball, results.tar.gz, and only it and summary.txt stay. run.sh does it
# at its end; a call whose `timeout` cut run.sh short runs `run.sh pack-out`
# after it:  timeout 560 bash scripts/device/run.sh STAGES; bash scripts/device/run.sh pack-out
pack_out() {
  [ "$(find "$out" -type f | wc -l)" -gt 8 ] || return 0
  rm -f /tmp/results.tar.gz
  # A run killed by timeout may leave a child writing: tar's "file changed" is no failure here.
  (cd "$out" && tar czf /tmp/results.tar.gz --warning=no-file-changed . 2>/dev/null
    [ -s /tmp/results.tar.gz ] && find . -mindepth 1 ! -name summary.txt -delete && mv /tmp/results.tar.gz results.tar.gz)
}
stage_pack_out() { :; }  # only the packing at the end (see pack_out)

for stage in "$@"; do
  if declare -F "stage_${stage//-/_}" >/dev/null; then
    "stage_${stage//-/_}" || note "stage $stage FAILED"
  else
    note "unknown stage $stage"
  fi
done
note "== done"
pack_out

