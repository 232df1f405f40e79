# Sourced first by scripts/demo.sh and scripts/test.sh (the README's two commands), which need
# root (packages, network namespaces, eBPF). In a root shell (a fresh Debian 12 has no sudo) it
# does nothing; as another user with sudo it re-executes the script under sudo with the same
# arguments and environment, so the commands work as typed in both. WL_NO_SUDO=1 keeps the
# current user (test.sh then runs what needs no root and skips the rest, or fails under CI=true).
#   wl_as_root "${BASH_SOURCE[0]}" "$@"
wl_as_root() {
  local script
  script=$(readlink -f "$1")
  shift
  if [ "$(id -u)" -ne 0 ] && [ "${WL_NO_SUDO:-}" != 1 ] && command -v sudo >/dev/null 2>&1; then
    exec sudo --preserve-env "$BASH" "$script" "$@"
  fi
}
