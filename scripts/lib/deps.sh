# shellcheck shell=bash
# Sourced by scripts/setup.sh: what a profile needs, and installing what is
# missing from Debian/Ubuntu's packages. Every piece is a check (succeeds when
# present), the packages that provide it, and whether its absence stops the
# set-up (required) or only skips something, with the reason (optional).
#   deps_want required|optional CHECK "PACKAGES" "WHAT IS LOST WITHOUT IT"
#   deps_resolve                 install what is missing (or say why it cannot),
#                                print the skips; returns 1 when a required piece
#                                is still missing (the message says what to do)
# Environment: HALOEX_NO_INSTALL=1 (never call apt-get).

deps_say() { printf '[haloex setup] %s\n' "$*"; }

have_header() { # header found in the usual include directories?
  local h="$1" d
  for d in /usr/include /usr/local/include /usr/include/x86_64-linux-gnu /usr/include/aarch64-linux-gnu \
           /usr/include/hdf5/serial; do
    [ -e "$d/$h" ] && return 0
  done
  return 1
}
have_cmd() { command -v "$1" >/dev/null 2>&1; }
have_any_cmd() { local c; for c in "$@"; do have_cmd "$c" && return 0; done; return 1; }
have_pip() { python3 -m pip --version >/dev/null 2>&1; }

deps_checks=() deps_packages=() deps_kinds=() deps_losses=()
deps_want() {
  deps_kinds+=("$1") deps_checks+=("$2") deps_packages+=("$3") deps_losses+=("${4:-}")
}

# Why apt-get cannot be used here, or nothing when it can.
deps_no_apt_reason() {
  if [ "${HALOEX_NO_INSTALL:-0}" = 1 ]; then
    echo "HALOEX_NO_INSTALL=1 is set, so nothing is installed"
  elif ! have_cmd apt-get; then
    echo "this machine has no apt-get (not Debian/Ubuntu, or an image without a package manager)"
  elif [ "$(id -u)" -ne 0 ] && ! have_cmd sudo; then
    echo "apt-get needs root: run as root, or install sudo"
  fi
}

# apt-get update and install; on failure, one package at a time, so that one
# unavailable optional package does not keep the others out. The log keeps
# apt-get's own words.
deps_apt_install() {
  local log="$1"; shift
  local sudo="" p
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  # Fail fast where no registry answers (a GPU machine without network).
  local opts=(-o Acquire::Retries=0 -o Acquire::http::Timeout=20 -o Acquire::https::Timeout=20)
  if ! $sudo apt-get "${opts[@]}" update -qq >>"$log" 2>&1 || grep -qE '^(W|E): (Failed to fetch|Some index files failed)' "$log"; then
    deps_apt_unreachable=1
  fi
  if DEBIAN_FRONTEND=noninteractive $sudo apt-get "${opts[@]}" install -y -qq --no-install-recommends "$@" >>"$log" 2>&1; then
    return 0
  fi
  for p in "$@"; do
    DEBIAN_FRONTEND=noninteractive $sudo apt-get "${opts[@]}" install -y -qq --no-install-recommends "$p" >>"$log" 2>&1 || true
  done
}

deps_resolve() {
  local log="$1" i missing=() stop=() pkgs p
  deps_apt_unreachable=0
  for i in "${!deps_checks[@]}"; do
    eval "${deps_checks[$i]}" || missing+=("$i")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  pkgs=()
  for i in "${missing[@]}"; do read -r -a p <<<"${deps_packages[$i]}"; pkgs+=("${p[@]}"); done
  local why
  why="$(deps_no_apt_reason)"
  if [ -z "$why" ]; then
    deps_say "installing with apt-get: ${pkgs[*]} (log: $log)"
    : >"$log"
    deps_apt_install "$log" "${pkgs[@]}"
    if [ "$deps_apt_unreachable" = 1 ]; then
      why="apt-get reached no package registry (no network, or no mirror configured; see $log)"
    else
      why="apt-get could not install it (see $log)"
    fi
  fi
  for i in "${missing[@]}"; do
    eval "${deps_checks[$i]}" && continue
    if [ "${deps_kinds[$i]}" = required ]; then
      stop+=("$i")
    else
      deps_say "skipped: ${deps_packages[$i]} (${deps_losses[$i]}): $why"
    fi
  done
  [ ${#stop[@]} -eq 0 ] && return 0
  pkgs=()
  for i in "${stop[@]}"; do read -r -a p <<<"${deps_packages[$i]}"; pkgs+=("${p[@]}"); done
  deps_say "error: required and missing: ${pkgs[*]}"
  deps_say "  why not installed: $why"
  case "$why" in
    HALOEX_NO_INSTALL*) deps_say "  to do: apt-get install ${pkgs[*]}, or unset HALOEX_NO_INSTALL and run again" ;;
    *"reached no package registry"*)
      deps_say "  to do: install them on this machine from a reachable mirror or carried .deb files" \
               "(apt-get install ./pkg.deb), or build where a registry is reachable and copy the build over" ;;
    *) deps_say "  to do: install them with this system's package manager (Debian/Ubuntu names above), then run again" ;;
  esac
  return 1
}

# pip into the project's environment (.deps/python), never the system Python;
# fails fast without a registry. Prints nothing; the caller says what is lost.
deps_pip_install() {
  local log="$1" target="$2"; shift 2
  [ "${HALOEX_NO_INSTALL:-0}" = 1 ] && { echo "HALOEX_NO_INSTALL=1 is set" >"$log"; return 1; }
  have_pip || { echo "python3 -m pip is missing (Debian: python3-pip)" >"$log"; return 1; }
  python3 -m pip install -q --disable-pip-version-check --retries 1 --timeout 20 --target "$target" "$@" >"$log" 2>&1
}
