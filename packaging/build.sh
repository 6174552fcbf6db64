#!/usr/bin/env bash
# Build the Rust GPU Workbench's desktop packages into dist/ (Linux; takes a few minutes):
#
#   dist/rust-gpu-workbench/                              the one-folder bundle (PyInstaller)
#   dist/rust-gpu-workbench_VERSION_ARCH.deb              installs it under /opt/rust-gpu-workbench,
#                                                         `workbench` in /usr/bin, a menu entry, an icon
#   dist/rust-gpu-workbench-VERSION-linux-ARCH.tar.gz     the bundle, for other distributions
#   dist/Rust_GPU_Workbench-VERSION-ARCH.AppImage         only where `appimagetool` is on PATH
#
# usage: packaging/build.sh [--with-cuda] [--no-deb | --bundle-only]
#   --with-cuda   also install pycuda (the `cuda` extra) into the build venv, so the bundle carries it
#                 (needs the CUDA toolkit: pycuda builds from source); without it the bundle reports
#                 CUDA unavailable, naming the reason.
#   --no-deb      the bundle and the tarball, no .deb
#   --bundle-only the one-folder bundle alone (no tarball, .deb or AppImage): what CI builds and
#                 self-tests (packaging/bootstrap.sh test)
#
# The build fails when the bundle lacks a file a project needs (packaging/check_bundle.py: every
# file of resources/examples, templates and crates, links followed, and each bundled project's
# kernel API crate).
#
# PyInstaller and the workbench's dependencies go into a separate build venv ($WB_BUILD_VENV,
# default dist/.build-venv), never into .venv. The version is workbench.__version__ (pyproject's
# dynamic version). Toolchains (cargo, rustc, nvcc, cargo-gpu) are not bundled: the installed
# workbench finds them on the user's PATH (`workbench doctor`).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

NAME=rust-gpu-workbench
INSTALL_DIR=/opt/$NAME
PYINSTALLER_REQ="pyinstaller>=6.10,<7"

with_cuda=0
make_deb=1
bundle_only=0
for arg in "$@"; do
  case "$arg" in
    --with-cuda) with_cuda=1 ;;
    --no-deb) make_deb=0 ;;
    --bundle-only) make_deb=0; bundle_only=1 ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    *) echo "error: unknown option $arg (try --help)" >&2; exit 2 ;;
  esac
done

python=${PYTHON:-python3}
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "error: building needs Python 3.11 or newer; set PYTHON=/path/to/python3.11" >&2
  exit 1
fi
version=$("$python" - <<'EOF'
import re
text = open("workbench/__init__.py", encoding="utf-8").read()
print(re.search(r'^__version__ = "([^"]+)"', text, re.M).group(1))
EOF
)
arch=$(dpkg --print-architecture 2>/dev/null || uname -m)
machine=$(uname -m)
started=$(date +%s)
step() { echo "== [$(( $(date +%s) - started ))s] $*"; }

mkdir -p dist
venv=${WB_BUILD_VENV:-$root/dist/.build-venv}

# ------------------------------------------------------------------ build venv
step "build venv $venv (PyInstaller and the workbench's dependencies)"
requirements=$root/dist/.build-requirements.txt
"$python" - "$with_cuda" "$PYINSTALLER_REQ" > "$requirements" <<'EOF'
import sys
import tomllib

project = tomllib.load(open("pyproject.toml", "rb"))["project"]
lines = list(project["dependencies"])
if sys.argv[1] == "1":
    lines += project["optional-dependencies"]["cuda"]
lines.append(sys.argv[2])
print("\n".join(lines))
EOF
want=$(sha256sum "$requirements" | cut -d' ' -f1)
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
if [ "$(cat "$venv/.requirements-installed" 2>/dev/null)" != "$want" ]; then
  "$venv/bin/python" -m pip install -q --upgrade pip
  "$venv/bin/python" -m pip install -q -r "$requirements"
  echo "$want" > "$venv/.requirements-installed"
fi

# ------------------------------------------------------------------ the bundle
step "PyInstaller one-folder bundle (packaging/workbench.spec)"
bundle=$root/dist/$NAME
rm -rf "$bundle"
"$venv/bin/python" -m PyInstaller --noconfirm --clean --log-level WARN \
  --distpath "$root/dist" --workpath "$root/dist/.pyinstaller-work" packaging/workbench.spec
test -x "$bundle/workbench"
bundle_version=$("$bundle/workbench" --version)
[ "$bundle_version" = "workbench $version" ] || {
  echo "error: the bundle says '$bundle_version', expected 'workbench $version'" >&2
  exit 1
}
step "bundle check (packaging/check_bundle.py)"
"$venv/bin/python" packaging/check_bundle.py "$bundle"
echo "bundle: $bundle ($(du -sh "$bundle" | cut -f1))"
if [ "$bundle_only" = 1 ]; then
  step "done: the bundle of workbench $version in $bundle"
  exit 0
fi

# ------------------------------------------------------------------ .tar.gz
step "tar.gz"
tarball=$root/dist/$NAME-$version-linux-$machine.tar.gz
tar -C "$root/dist" -czf "$tarball" "$NAME"
echo "tarball: $tarball ($(du -h "$tarball" | cut -f1))"

# ------------------------------------------------------------------ .deb
if [ "$make_deb" = 1 ]; then
  if ! command -v dpkg-deb >/dev/null 2>&1; then
    echo "note: dpkg-deb not found: no .deb (the bundle and the tarball are built)" >&2
  else
    step ".deb"
    stage=$root/dist/.deb-root
    rm -rf "$stage"
    mkdir -p "$stage$INSTALL_DIR" "$stage/usr/bin" "$stage/usr/share/applications" \
      "$stage/usr/share/icons/hicolor/scalable/apps" "$stage/usr/share/icons/hicolor/256x256/apps" \
      "$stage/usr/share/doc/$NAME" "$stage/DEBIAN"
    cp -a "$bundle/." "$stage$INSTALL_DIR/"
    ln -s "$INSTALL_DIR/workbench" "$stage/usr/bin/workbench"
    install -m 0644 resources/$NAME.desktop "$stage/usr/share/applications/$NAME.desktop"
    install -m 0644 resources/icons/$NAME.svg "$stage/usr/share/icons/hicolor/scalable/apps/$NAME.svg"
    install -m 0644 resources/icons/$NAME.png "$stage/usr/share/icons/hicolor/256x256/apps/$NAME.png"
    install -m 0644 LICENSE "$stage/usr/share/doc/$NAME/copyright"
    chmod -R u+rwX,go+rX,go-w "$stage"
    installed_kb=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
    cat > "$stage/DEBIAN/control" <<EOF
Package: $NAME
Version: $version
Architecture: $arch
Maintainer: Rust GPU Workbench developers <workbench@localhost>
Installed-Size: $installed_kb
Depends: libc6 (>= 2.31), libxcb1, libgl1, libegl1
Recommends: libvulkan1, mesa-vulkan-drivers, cargo, rustc
Suggests: nvidia-cuda-toolkit
Section: devel
Priority: optional
Description: edit, build, run, verify and time one Rust GPU kernel on every backend
 A desktop workbench and command line (workbench) for Rust GPU kernels: one kernel built for
 the CPU, rustc's NVPTX backend, rust-gpu (SPIR-V), Rust-CUDA and hand-written CUDA C++ and
 WGSL references, run on every device (CPU, CUDA, wgpu), verified element by element and timed.
 .
 Self-contained (Python, Qt, wgpu-native inside $INSTALL_DIR); the Rust and CUDA toolchains are
 found on PATH: "workbench doctor" lists what is missing, "workbench --self-test" checks it all.
EOF
    # No maintainer scripts: desktop-file-utils' and hicolor-icon-theme's dpkg triggers refresh the
    # menu and icon caches, and `dpkg -r` then leaves nothing behind. User files (~/.config,
    # ~/.cache, ~/rust-gpu-workbench) are never touched, so an upgrade or a removal keeps them.
    deb=$root/dist/${NAME}_${version}_${arch}.deb
    dpkg-deb --root-owner-group -Z"${WB_DEB_COMPRESSION:-xz}" --build "$stage" "$deb" >/dev/null
    rm -rf "$stage"
    echo "deb: $deb ($(du -h "$deb" | cut -f1), installed $(( installed_kb / 1024 )) MiB)"
  fi
fi

# ------------------------------------------------------------------ AppImage (optional)
if command -v appimagetool >/dev/null 2>&1; then
  step "AppImage"
  appdir=$root/dist/.AppDir
  rm -rf "$appdir"
  mkdir -p "$appdir/usr/lib"
  cp -a "$bundle" "$appdir/usr/lib/$NAME"
  cat > "$appdir/AppRun" <<EOF
#!/bin/sh
here=\$(dirname "\$(readlink -f "\$0")")
exec "\$here/usr/lib/$NAME/workbench" "\$@"
EOF
  chmod 0755 "$appdir/AppRun"
  cp resources/$NAME.desktop "$appdir/$NAME.desktop"
  cp resources/icons/$NAME.png "$appdir/$NAME.png"
  appimage=$root/dist/Rust_GPU_Workbench-$version-$machine.AppImage
  ARCH=$machine appimagetool --no-appstream "$appdir" "$appimage"
  rm -rf "$appdir"
  echo "AppImage: $appimage ($(du -h "$appimage" | cut -f1))"
else
  echo "note: appimagetool not found on PATH: no AppImage (the .deb and the tarball are built)"
fi

step "done: workbench $version in $root/dist"
