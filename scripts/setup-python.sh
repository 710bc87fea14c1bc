#!/usr/bin/env bash
# scripts/setup-python.sh VENV: creates or updates the project's Python environment.
#
# Exact versions from python/requirements-build.txt and python/requirements.txt are installed
# with --no-deps, then `pip check` proves the set complete and consistent, then pimc's own
# packages (python/pyproject.toml) are installed editable. A stamp (the hash of those files
# and of the interpreter) makes a second run a no-op. Packages come from PyPI at set-up time
# only; nothing is downloaded by tests.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${1:-build/venv}
inputs=(python/requirements-build.txt python/requirements.txt python/pyproject.toml)
base=$(command -v python3) || { echo "setup: no python3 on PATH" >&2; exit 1; }
want=$( { sha256sum "${inputs[@]}"; "$base" -c 'import sys; print(sys.version)'; } | sha256sum | cut -d' ' -f1)
stamp="$venv/.pimc-requirements"
if [ -x "$venv/bin/python3" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi

start=$(date +%s)
echo "setup: Python environment $venv from python/requirements.txt (with $base)"
rm -f "$stamp"
mkdir -p "$(dirname "$venv")"
"$base" -m venv "$venv"
pip=("$venv/bin/python3" -m pip --disable-pip-version-check --no-input)
log="$venv/install.log"
: > "$log"
run() { "$@" >> "$log" 2>&1 || { tail -n 60 "$log"; echo "setup: failed: $*" >&2; exit 1; }; }
run "${pip[@]}" install --no-deps -r python/requirements-build.txt
# llama-cpp-python compiles llama.cpp (CPU only) with the machine's cmake and compiler.
CMAKE_ARGS="-DGGML_CUDA=OFF -DLLAMA_CURL=OFF -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF" \
CMAKE_BUILD_PARALLEL_LEVEL="${PIMC_JOBS:-2}" \
  run "${pip[@]}" install --no-deps --no-build-isolation -r python/requirements.txt
run "${pip[@]}" check
run "${pip[@]}" install --no-deps --no-build-isolation -e python
echo "$want" > "$stamp"
echo "setup: Python environment ready: $(du -sh "$venv" | cut -f1), $(( $(date +%s) - start )) s"
