#!/usr/bin/env bash
# Checks that every tracked C++/CUDA file (*.cpp *.hpp *.cu *.cuh) is as
# clang-format (14 or newer, with the repository's .clang-format) would write
# it. Exit 0: all formatted; 1: lists the files that differ and the command
# that fixes them; 77: skipped (no clang-format 14+, or not a git checkout),
# with the reason. ctest runs it as format_check.
#   scripts/check_format.sh          # check
#   scripts/check_format.sh --fix    # format those files in place (= scripts/format.sh)
# Environment: CLANG_FORMAT (the binary; default: clang-format-14, else clang-format).
# Only files git tracks: build trees, .deps and anything ignored are never read.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
fix=0
case "${1:-}" in
  --fix) fix=1 ;;
  "") ;;
  *) echo "usage: $0 [--fix]" >&2; exit 2 ;;
esac
skip() { # the check cannot run here: skipped (77); the fixer fails instead
  if [ "$fix" = 1 ]; then echo "error: $*" >&2; exit 1; fi
  echo "SKIPPED: $*"; exit 77
}

# shellcheck source=lib/llvm_tool.sh
. "$root/scripts/lib/llvm_tool.sh"
cf="$(llvm_tool clang-format CLANG_FORMAT)"
[ -n "$cf" ] \
  || skip "clang-format not found (install clang-format 14 or newer: apt-get install clang-format, or set CLANG_FORMAT)"
version="$("$cf" --version)"
major="$(llvm_major "$cf")"
[ -n "$major" ] && [ "$major" -ge 14 ] || skip "$cf is '$version'; the check needs clang-format 14 or newer"
git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1 || skip "$root is not a git checkout (the check reads git's list of files)"

cd "$root"
files=()
while IFS= read -r -d '' f; do
  [ -f "$f" ] && files+=("$f")   # tracked but deleted in the work tree: nothing to check
done < <(git ls-files -z -- '*.cpp' '*.hpp' '*.cu' '*.cuh')
[ ${#files[@]} -gt 0 ] || { echo "no C++/CUDA files tracked"; exit 0; }

jobs="$(nproc 2>/dev/null || echo 2)"
if [ "$fix" = 1 ]; then
  printf '%s\0' "${files[@]}" | xargs -0 -P "$jobs" -n 16 "$cf" --style=file:"$root/.clang-format" -i
  echo "formatted ${#files[@]} files with $cf ($version)"
  exit 0
fi

# One line per file that differs (short writes: the parallel jobs do not mix them).
export CF="$cf" STYLE="$root/.clang-format"
differ="$(printf '%s\0' "${files[@]}" | xargs -0 -P "$jobs" -n 16 sh -c '
  for f; do "$CF" --style=file:"$STYLE" "$f" | cmp -s - "$f" || printf "%s\n" "$f"; done' sh | sort)"
if [ -n "$differ" ]; then
  n="$(wc -l <<<"$differ")"
  echo "$n of ${#files[@]} C++/CUDA files are not formatted as .clang-format says ($cf: $version):"
  sed 's/^/  /' <<<"$differ"
  echo "fix them with: scripts/format.sh   (then review and commit the change)"
  [ "$major" -eq 14 ] || echo "note: the reference is clang-format 14 (Debian 12, as CI); version $major may format some constructs differently"
  exit 1
fi
echo "all ${#files[@]} C++/CUDA files are formatted ($cf: $version)"
