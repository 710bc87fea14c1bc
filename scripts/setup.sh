#!/usr/bin/env bash
# Installs everything pimc needs on Debian 12 (idempotent: only missing
# packages are installed), then configures and builds into ./build.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  cmake ninja-build g++ pkg-config
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  libgtest-dev libflatbuffers-dev flatbuffers-compiler
  python3 python3-numpy python3-torch
  libonnx-dev libprotobuf-dev libonnx-testdata python3-onnx
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

cmake -G Ninja -S . -B build -DCMAKE_BUILD_TYPE=Release > build.configure.log 2>&1 || {
  cat build.configure.log; exit 1; }
rm -f build.configure.log
ninja -C build -j"${PIMC_JOBS:-2}"

# onnxruntime (npm) is the external oracle of the ONNX end-to-end tests
# (docs/torch-bridge.md); it goes into build/npm. Its install script would
# download GPU files: the CPU binary is already in the package.
if [ ! -f build/npm/node_modules/onnxruntime-node/package.json ]; then
  if ! command -v npm >/dev/null 2>&1; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -q
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends nodejs npm
  fi
  echo "setup: installing onnxruntime-node into build/npm"
  ONNXRUNTIME_NODE_INSTALL=skip npm install --prefix build/npm --no-audit --no-fund \
    --ignore-scripts onnxruntime-node@1.30.0 > build/npm-install.log 2>&1 || {
    cat build/npm-install.log; exit 1; }
fi
