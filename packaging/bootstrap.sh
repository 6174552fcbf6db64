#!/usr/bin/env bash
# Set up everything the workbench needs on a Debian/Ubuntu machine, then open it or test it.
#
#   bash packaging/bootstrap.sh open [PATH]   set up, then open the workbench (default: saxpy example)
#   bash packaging/bootstrap.sh test [ARGS]   set up, then run lint, layering checks, the product test
#                                             (the one-folder bundle built from this checkout and its
#                                             self-test in a bare environment) and the test suite
#   bash packaging/bootstrap.sh setup         set up only
#
# Set-up: the system packages the examples need (installed when running as root, otherwise this
# stops and prints the exact install line), a virtual environment in .venv with the workbench
# installed in editable mode. Re-running is cheap: nothing is reinstalled when nothing changed.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"
mode=${1:-open}
[ $# -gt 0 ] && shift

# Rust with the NVPTX target and std sources (offline -Zbuild-std), wgpu's CPU Vulkan driver,
# SPIR-V tools, and the libraries Qt needs even offscreen.
APT_PACKAGES=(rustc-web cargo-web rust-web-src mesa-vulkan-drivers glslang-tools spirv-tools gdb
  libegl1 libgl1 libxkbcommon0 libfontconfig1 libdbus-1-3 libglib2.0-0)
# Qt's xcb platform plugin (a real window on X11) needs these since Qt 6.5.
APT_PACKAGES+=(libxcb-cursor0 libxcb-icccm4 libxcb-image0 libxcb-keysyms1 libxcb-randr0
  libxcb-render-util0 libxcb-shape0 libxcb-xinerama0 libxcb-xkb1 libxkbcommon-x11-0)
# The remote-host tests (tests/remote) start a real sshd on 127.0.0.1; `ssh` is the transport.
APT_PACKAGES+=(openssh-server openssh-client)

python=${PYTHON:-python3}
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "error: the workbench needs Python 3.11 or newer ('$python' is $("$python" --version 2>&1))." >&2
  echo "       Set PYTHON=/path/to/python3.11 and run again." >&2
  exit 1
fi
if ! "$python" -c 'import venv, ensurepip' 2>/dev/null; then
  APT_PACKAGES+=(python3-venv)
fi

missing_packages() {
  local pkg
  for pkg in "${APT_PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
      printf '%s ' "$pkg"
    fi
  done
}

install_system_packages() {
  if ! command -v dpkg-query >/dev/null 2>&1; then
    echo "note: not a Debian/Ubuntu system; install Rust (with rust-src), Vulkan drivers and spirv-tools" \
      "yourself (README.md, 'Optional toolchains')." >&2
    return
  fi
  local missing
  missing=$(missing_packages)
  [ -z "$missing" ] && return
  if [ "$(id -u)" -eq 0 ]; then
    echo "Installing system packages: $missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # shellcheck disable=SC2086
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
  else
    echo "error: missing system packages. Run this, then run the same command again:" >&2
    echo "  sudo apt-get update && sudo apt-get install -y $missing" >&2
    exit 1
  fi
}

# rustfmt and clippy (`workbench fmt` / `lint`, the window's Format and lints; docs/kernel-tests.md):
# rustup's components where rustup has a toolchain; else Debian's rustfmt (it needs only libc). Debian
# has no clippy for rustc-web (its rust-clippy is 1.63's): a note says how to get one. Offline, a
# failed `rustup component add` is a note, not an error.
install_rust_tools() {
  if command -v rustup >/dev/null 2>&1 && rustup show active-toolchain >/dev/null 2>&1; then
    local component missing=()
    for component in rustfmt clippy; do
      rustup component list --installed 2>/dev/null | grep -q "^$component" || missing+=("$component")
    done
    if [ ${#missing[@]} -gt 0 ]; then
      echo "Adding rustup components: ${missing[*]}"
      rustup component add "${missing[@]}" || echo "note: could not add ${missing[*]} (offline?)" >&2
    fi
    return
  fi
  if ! command -v rustfmt >/dev/null 2>&1 && command -v dpkg-query >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
    echo "Installing system packages: rustfmt"
    apt-get install -y -qq --no-install-recommends rustfmt >/dev/null || echo "note: could not install rustfmt" >&2
  fi
  command -v cargo-clippy >/dev/null 2>&1 ||
    echo "note: no clippy (workbench lint): rustup component add clippy (rustup from https://rustup.rs)" >&2
}

setup_venv() {
  local stamp=.venv/.workbench-installed want
  want=$(cat pyproject.toml | sha256sum | cut -d' ' -f1)
  if [ ! -x .venv/bin/python ]; then
    echo "Creating .venv"
    "$python" -m venv .venv
  fi
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "Installing the workbench and its Python dependencies into .venv"
    .venv/bin/python -m pip install -q --upgrade pip
    .venv/bin/python -m pip install -q -e '.[test]'
    echo "$want" > "$stamp"
  fi
}

private_runtime_dir() {
  # Mesa's Vulkan driver warns without a private XDG_RUNTIME_DIR.
  if [ -z "${XDG_RUNTIME_DIR:-}" ] || [ ! -w "${XDG_RUNTIME_DIR}" ]; then
    XDG_RUNTIME_DIR=$(mktemp -d /tmp/wb-xdg-XXXXXX)
    chmod 700 "$XDG_RUNTIME_DIR"
    export XDG_RUNTIME_DIR
  fi
}

install_system_packages
install_rust_tools
setup_venv
private_runtime_dir
export PYDEVD_DISABLE_FILE_VALIDATION=1

case "$mode" in
  setup)
    echo "Set up. Open the workbench with: .venv/bin/workbench resources/examples/saxpy"
    ;;
  open)
    if [ -z "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ] && [ "$(uname)" = Linux ]; then
      echo "note: no display found (DISPLAY/WAYLAND_DISPLAY unset); run this from a desktop session," \
        "or try: xvfb-run -a bash packaging/bootstrap.sh open" >&2
    fi
    exec .venv/bin/workbench "${@:-resources/examples/saxpy}"
    ;;
  test)
    export QT_QPA_PLATFORM=offscreen
    echo "== ruff"
    .venv/bin/ruff check workbench tests benchmarks
    .venv/bin/ruff format --check workbench tests benchmarks
    echo "== import-linter"
    .venv/bin/lint-imports
    # The product as users get it: the one-folder bundle (no .deb, its own build venv, never .venv),
    # self-tested with nothing of this environment (no PATH additions, no venv, a fresh HOME). A
    # failed build, a missing resource (packaging/check_bundle.py) or a failed check fails the test.
    # WB_TEST_BUNDLE=0 leaves it out (a quick local run; CI never sets it).
    if [ "${WB_TEST_BUNDLE:-1}" != 0 ]; then
      echo "== bundle: packaging/build.sh --bundle-only, then its --self-test (env -i, fresh HOME)"
      started=$SECONDS
      bash packaging/build.sh --bundle-only
      built=$SECONDS
      bare_home=$(mktemp -d)
      status=0
      env -i PATH=/usr/bin:/bin HOME="$bare_home" QT_QPA_PLATFORM=offscreen \
        dist/rust-gpu-workbench/workbench --self-test || status=$?
      rm -rf "$bare_home"
      echo "== bundle built in $(( built - started )) s, self-tested in $(( SECONDS - built )) s"
      if [ "$status" != 0 ]; then
        echo "error: the bundle's self-test failed (exit status $status): the product is broken" >&2
        exit "$status"
      fi
    fi
    echo "== pytest"
    exec .venv/bin/python -m pytest "$@"
    ;;
  *)
    echo "usage: bash packaging/bootstrap.sh open [PATH] | test [PYTEST ARGS] | setup" >&2
    exit 2
    ;;
esac
