# Sourced by scripts/check_format.sh and scripts/run_clang_tidy.sh: finds an
# LLVM tool of at least version 14.
#   llvm_tool NAME OVERRIDE   prints the command: $OVERRIDE if set, else NAME-14,
#                             else NAME, or nothing when none is on the PATH
#   llvm_major COMMAND        prints its major version, or nothing
llvm_tool() {
  local name="$1" override="${!2:-}" c
  if [ -n "$override" ]; then
    command -v "$override" >/dev/null 2>&1 && echo "$override"
    return 0
  fi
  for c in "$name-14" "$name"; do
    if command -v "$c" >/dev/null 2>&1; then echo "$c"; return 0; fi
  done
}
llvm_major() { "$1" --version | sed -nE 's/.*version ([0-9]+)\..*/\1/p' | head -1; }
