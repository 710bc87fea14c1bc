#!/usr/bin/env bash
# Installs everything pimc needs on Debian 12, idempotently, then builds into ./build:
#   1. Debian packages (only the missing ones are installed);
#   2. the project's Python environment, build/venv: exact versions from
#      python/requirements*.txt (PyPI), made with the python3 on PATH; redone only when those
#      files change (docs/torch-bridge.md: size, time, how to add a package);
#   3. configure and build with ninja.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  cmake ninja-build g++ pkg-config
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  libgtest-dev libflatbuffers-dev flatbuffers-compiler
  python3 python3-venv
  libonnx-dev libprotobuf-dev libonnx-testdata
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

scripts/setup-python.sh build/venv

cmake -G Ninja -S . -B build -DCMAKE_BUILD_TYPE=Release > build.configure.log 2>&1 || {
  cat build.configure.log; exit 1; }
rm -f build.configure.log
ninja -C build -j"${PIMC_JOBS:-2}"
