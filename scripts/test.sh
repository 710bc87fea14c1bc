#!/usr/bin/env bash
# Sets up (scripts/setup.sh) and runs every test: lit, GoogleTest units and
# the golden comparisons against PyTorch.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
ctest --test-dir build --output-on-failure -j"${PIMC_JOBS:-2}"
