# shellcheck shell=bash
# Sourced by scripts/setup.sh: a build that shows its progress and keeps the
# compiler's words in a log.
#   build_with_progress BUILD_DIR LOG [TARGET...]
# The terminal gets ninja's [n/N] as one updating line (every ~10 % as a line
# of its own when the output is not a terminal: CI logs), then the number of
# compiler warnings; every line of the build, warnings included, goes to LOG.
# On failure the errors are printed from LOG. Returns the build's status.

build_with_progress() {
  local build="$1" log="$2"; shift 2
  local targets=() t tty=0
  for t in "$@"; do targets+=(--target "$t"); done
  [ -t 1 ] && tty=1
  # ninja's status prefix, whatever the caller's NINJA_STATUS says. Read line
  # by line in bash: awk would buffer the pipe and show the progress late.
  NINJA_STATUS="[%f/%t] " cmake --build "$build" -j "$(nproc)" "${targets[@]}" 2>&1 |
    {
      local line n total pct mark=10 warnings=0 shown=0
      : >"$log"
      while IFS= read -r line; do
        printf '%s\n' "$line" >>"$log"
        [[ "$line" =~ (^|[^A-Za-z])warning(\ \#[0-9A-Z-]+)?: ]] && warnings=$((warnings + 1))
        [[ "$line" =~ ^\[([0-9]+)/([0-9]+)\] ]] || continue
        n=${BASH_REMATCH[1]} total=${BASH_REMATCH[2]}
        pct=$((total > 0 ? 100 * n / total : 100))
        if [ "$tty" = 1 ]; then
          printf '\r[haloex setup] building: %d/%d (%d%%)' "$n" "$total" "$pct"
          shown=1
        elif [ "$pct" -ge "$mark" ] || [ "$n" = "$total" ]; then
          printf '[haloex setup] building: %d/%d (%d%%)\n' "$n" "$total" "$pct"
          while [ "$mark" -le "$pct" ]; do mark=$((mark + 10)); done
        fi
      done
      [ "$shown" = 1 ] && printf '\n'
      [ "$warnings" -gt 0 ] && printf '[haloex setup] %d compiler warning line(s), in %s\n' "$warnings" "$log"
      true
    }
  local status=${PIPESTATUS[0]}
  if [ "$status" -ne 0 ]; then
    grep -E -B2 -A12 'error|Error' "$log" | head -80
    printf '[haloex setup] build failed (exit %s); the whole output: %s\n' "$status" "$log"
  fi
  return "$status"
}
