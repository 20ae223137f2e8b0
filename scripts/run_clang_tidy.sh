#!/usr/bin/env bash
# Runs clang-tidy (14 or newer, the checks of the repository's .clang-tidy,
# every warning an error) over the host C++ translation units of a CPU-only
# build tree, in parallel. CPU-only because Debian 12's clang-tidy 14 cannot
# parse the CUDA 13 headers: with HALOEX_ENABLE_CUDA=OFF the compilation
# database holds exactly the host C++ (no .cu, nothing that includes CUDA).
#   scripts/run_clang_tidy.sh BUILD_DIR [REGEX]
# BUILD_DIR: a CPU-only tree configured with -DCMAKE_EXPORT_COMPILE_COMMANDS=ON;
# when it has no CMakeCache.txt yet, this script configures one there. Only
# configured, never built: the sources need only configure-time headers.
# REGEX (optional): only the sources whose path matches it (grep -E).
# Exit 0: no finding; 1: findings (or a file clang-tidy could not parse);
# 77: skipped (no clang-tidy 14+), with the reason.
# Environment: CLANG_TIDY (the binary; default clang-tidy-14, else clang-tidy),
#              HALOEX_TIDY_JOBS (parallel runs; default nproc),
#              HALOEX_TIDY_XARGS=1 (xargs -P even where run-clang-tidy is installed).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: $0 BUILD_DIR [REGEX]" >&2; exit 2; }
build="$1"
filter="${2:-}"
skip() { echo "SKIPPED: $*"; exit 77; }
say() { printf '[haloex tidy] %s\n' "$*"; }

# shellcheck source=lib/llvm_tool.sh
. "$root/scripts/lib/llvm_tool.sh"
tidy="$(llvm_tool clang-tidy CLANG_TIDY)"
[ -n "$tidy" ] \
  || skip "clang-tidy not found (install clang-tidy 14 or newer: apt-get install clang-tidy, or set CLANG_TIDY)"
major="$(llvm_major "$tidy")"
version="$("$tidy" --version | sed -nE 's/.*version ([0-9][0-9.]*).*/\1/p' | head -1)"
[ -n "$major" ] && [ "$major" -ge 14 ] || skip "$tidy is version '${version:-unknown}'; the check needs clang-tidy 14 or newer"

mkdir -p "$build"
build="$(cd "$build" && pwd)"
if [ -f "$build/CMakeCache.txt" ] && ! grep -q '^HALOEX_ENABLE_CUDA:BOOL=OFF$' "$build/CMakeCache.txt"; then
  echo "$build is not a CPU-only tree: configure one with -DHALOEX_ENABLE_CUDA=OFF (clang-tidy 14 cannot parse the CUDA 13 headers)" >&2
  exit 1
fi
# Configured every time (a few seconds): the database then lists the sources
# as they are now, although the tree itself is never built.
args=(-DCMAKE_EXPORT_COMPILE_COMMANDS=ON)
[ -f "$build/CMakeCache.txt" ] || args+=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DHALOEX_ENABLE_CUDA=OFF)
cmake -S "$root" -B "$build" "${args[@]}" >"$build/tidy-configure.log" 2>&1 \
  || { cat "$build/tidy-configure.log"; exit 1; }
[ -f "$build/compile_commands.json" ] || {
  echo "$build has no compile_commands.json: configure it with -DCMAKE_EXPORT_COMPILE_COMMANDS=ON" >&2; exit 1; }

# The repository's own C++ sources from the database: not the build tree's
# generated files, not .cu (there are none in a CPU-only tree).
mapfile -t files < <(python3 - "$build/compile_commands.json" "$root" "$build" <<'PY'
import json, os, sys
db, root, build = sys.argv[1], os.path.realpath(sys.argv[2]), os.path.realpath(sys.argv[3])
seen = set()
for e in json.load(open(db)):
    f = os.path.realpath(os.path.join(e["directory"], e["file"]))
    if f in seen or not f.startswith(root + os.sep) or f.startswith(build + os.sep) or not f.endswith(".cpp"):
        continue
    seen.add(f)
    print(f)
PY
)
if [ -n "$filter" ]; then
  mapfile -t files < <(printf '%s\n' "${files[@]}" | grep -E -- "$filter" || true)
fi
[ ${#files[@]} -gt 0 ] || { echo "no translation units to check in $build${filter:+ matching $filter}" >&2; exit 1; }

jobs="${HALOEX_TIDY_JOBS:-$(nproc 2>/dev/null || echo 2)}"
say "$tidy $version on ${#files[@]} translation units, $jobs in parallel (checks: $root/.clang-tidy)"
start=$SECONDS
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
status=0
# Every warning of an enabled check is an error: .clang-tidy says
# WarningsAsErrors '*' (run-clang-tidy 14 has no --warnings-as-errors to pass
# on), and the xargs path passes --warnings-as-errors='*' as well.
runner="run-clang-tidy-$major"
command -v "$runner" >/dev/null 2>&1 || runner="run-clang-tidy"
if [ "${HALOEX_TIDY_XARGS:-0}" != 1 ] && command -v "$runner" >/dev/null 2>&1; then
  # run-clang-tidy keeps each file's output together; it takes regexes, so
  # each path is anchored and escaped.
  regexes=()
  for f in "${files[@]}"; do regexes+=("^$(printf '%s' "$f" | sed 's/[.[\*^$()+?{|]/\\&/g')\$"); done
  "$runner" -clang-tidy-binary "$(command -v "$tidy")" -p "$build" -j "$jobs" -quiet "${regexes[@]}" >"$log" 2>&1 \
    || status=$?
else
  printf '%s\0' "${files[@]}" | xargs -0 -P "$jobs" -n 1 sh -c '
    out="$("$0" -p "$1" --quiet --warnings-as-errors="*" "$2" 2>&1)" || { printf "%s\n" "$out"; exit 1; }' \
    "$tidy" "$build" >"$log" 2>&1 || status=$?
fi
sed -i 's/\x1b\[[0-9;]*m//g' "$log"   # run-clang-tidy's clang-tidy colours its output
# Only the findings (clang-tidy also prints "N warnings generated." for every file).
grep -vE '^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$|^Suppressed [0-9]+ warnings|^Use -header-filter|^[^ ]*clang-tidy[^ ]* .*-p=' "$log" || true
errors=$(grep -cE ': (warning|error): ' "$log" || true)
if [ "$status" -ne 0 ] || [ "$errors" -ne 0 ]; then
  say "FAILED: $errors finding(s) in $((SECONDS - start)) s; fix them, or (where a fix would be wrong) add // NOLINT(check) with the reason"
  exit 1
fi
say "no findings in ${#files[@]} translation units ($((SECONDS - start)) s)"
