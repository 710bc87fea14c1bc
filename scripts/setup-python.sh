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
inputs=(python/requirements-build.txt python/requirements.txt python/pyproject.toml
        scripts/setup-python.sh)
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
# Everything but llama-cpp-python, then llama-cpp-python: it compiles llama.cpp (CPU only)
# with the machine's cmake and compiler, for AVX2 rather than -march=native. A native build
# enables ggml's AMX kernels on CPUs that have AMX, and they crash there (SIGSEGV in
# ggml_backend_amx_mul_mat on Q8_0 weights, llama.cpp issue #20824); it would also not run
# on an older CPU. --no-cache-dir: pip's wheel cache does not key on CMAKE_ARGS.
llama=$(grep -E '^llama-cpp-python==' python/requirements.txt | cut -d' ' -f1)
grep -vE '^llama-cpp-python==' python/requirements.txt > "$venv/requirements-no-llama.txt"
run "${pip[@]}" install --no-deps --no-build-isolation -r "$venv/requirements-no-llama.txt"
CMAKE_ARGS="-DGGML_CUDA=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DLLAMA_CURL=OFF -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF" \
CMAKE_BUILD_PARALLEL_LEVEL="${PIMC_JOBS:-2}" \
  run "${pip[@]}" install --no-deps --no-build-isolation --no-cache-dir --force-reinstall "$llama"
run "${pip[@]}" check
run "${pip[@]}" install --no-deps --no-build-isolation -e python
echo "$want" > "$stamp"
echo "setup: Python environment ready: $(du -sh "$venv" | cut -f1), $(( $(date +%s) - start )) s"
