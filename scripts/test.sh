#!/usr/bin/env bash
# Sets up (scripts/setup.sh) and runs every test: lit, GoogleTest units and
# the golden comparisons against transformers and PyTorch, the oracles
# (onnxruntime, llama.cpp), end to end on pimsim and the regression suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
ctest --test-dir build --output-on-failure -j"${PIMC_JOBS:-2}"
