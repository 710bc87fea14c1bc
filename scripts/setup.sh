#!/usr/bin/env bash
# Installs everything pimc needs on Debian 12, idempotently, then builds into ./build:
#   1. Debian packages (only the missing ones are installed);
#   2. the project's Python environment, build/venv: exact versions from
#      python/requirements*.txt (PyPI), made with the python3 on PATH; redone only when those
#      files change (docs/torch-bridge.md: size, time, how to add a package);
#   3. configure and build with ninja.
# PIMC_BUILD_DIR (default build) and PIMC_CMAKE_ARGS select another build tree and its options
# (scripts/test.sh --sanitize: build-asan with -DPIMC_SANITIZE=ON); PIMC_EXTRA_PACKAGES adds
# Debian packages (scripts/fuzz.sh: clang-22). The Python environment is always build/venv.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${PIMC_BUILD_DIR:-build}

packages=(
  cmake ninja-build g++ pkg-config
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  libgtest-dev libflatbuffers-dev flatbuffers-compiler
  python3 python3-venv
  libonnx-dev libprotobuf-dev libonnx-testdata
)
# shellcheck disable=SC2206
packages+=(${PIMC_EXTRA_PACKAGES:-})
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

# shellcheck disable=SC2086
cmake -G Ninja -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release \
    -DPIMC_PYTHON="$PWD/build/venv/bin/python3" ${PIMC_CMAKE_ARGS:-} > "$build_dir.configure.log" 2>&1 || {
  cat "$build_dir.configure.log"; exit 1; }
rm -f "$build_dir.configure.log"
ninja -C "$build_dir" -j"${PIMC_JOBS:-2}" ${PIMC_NINJA_TARGETS:-}
