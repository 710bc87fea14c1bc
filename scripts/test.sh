#!/usr/bin/env bash
# Sets up (scripts/setup.sh) and runs every test: lit, GoogleTest units and
# the golden comparisons against transformers and PyTorch, the oracles
# (onnxruntime, llama.cpp), end to end on pimsim and the regression suite.
#
#   scripts/test.sh              # build/ and its tests
#   scripts/test.sh --sanitize   # the same suite built with ASan + UBSan in build-asan/
#   scripts/test.sh -R lit       # extra arguments go to ctest
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--sanitize" ]; then
  shift
  # LLVM's and MLIR's shared libraries are not instrumented; leaks inside them
  # (static registries) are not pimc's, so LeakSanitizer is off and ASan reports
  # everything else. allow_user_poisoning=0: LLVM's BumpPtrAllocator poisons its
  # slabs by hand when its header is compiled with ASan (pimc's attribute storage)
  # and unpoisons each allocation, but libMLIR's uninstrumented copy of the same
  # allocator then hands out memory from that slab without unpoisoning it, so every
  # attribute MLIR uniques afterwards is a use-after-poison that is not one.
  export PIMC_BUILD_DIR=build-asan PIMC_CMAKE_ARGS="-DPIMC_SANITIZE=ON"
  export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:allow_user_poisoning=0:${ASAN_OPTIONS:-}"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
fi
scripts/setup.sh
ctest --test-dir "${PIMC_BUILD_DIR:-build}" --output-on-failure -j"${PIMC_JOBS:-2}" "$@"
