#!/usr/bin/env bash
# Installs what is missing, builds everything (build/: the library, proxies,
# tools, examples and tests) and runs the whole test suite (ctest).
# GPU tests skip with a printed reason on machines without a GPU.
#   scripts/test.sh [extra ctest arguments, e.g. -L unit]
set -euo pipefail
# Never NVLink multicast, whatever the caller's environment says (ctest sets
# the same for every test: cmake/TestEnvironment.cmake).
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${HALOEX_BUILD_DIR:-$root/build}"
"$root/scripts/setup.sh" test
cd "$build"
# MPI tests start several processes; as root OpenMPI needs these.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
set +e
ctest --output-on-failure --timeout 600 "$@" 2>&1 | tee "$build/ctest.log"
status=${PIPESTATUS[0]}
set -e
echo
echo "[haloex test] summary:"
grep -E 'tests passed|tests failed' "$build/ctest.log" || true
skipped=$(grep -c '(Skipped)' "$build/ctest.log" || true)
echo "[haloex test] skipped: $skipped test(s); their reasons (count, reason):"
# gtest prints "file:line: Skipped" and the reason on the next line; the
# programs that exit 77 print "SKIPPED: reason".
log="$build/Testing/Temporary/LastTest.log"
if [ -f "$log" ]; then
  { grep -A1 -E ': Skipped$' "$log" | grep -vE ': Skipped$|^--$'; grep -ohE 'SKIPPED: .*' "$log"; } \
    | sed 's/^ *//' | cut -c1-160 | sort | uniq -c | sort -rn | head -15
fi
exit "$status"
