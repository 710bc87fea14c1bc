#!/usr/bin/env bash
# Fuzzing campaigns with libFuzzer, ASan and UBSan (docs/fuzzing.md).
#
#   scripts/fuzz.sh                      # every harness, 60 s each
#   scripts/fuzz.sh fx-graph 3600        # one harness, one hour
#   scripts/fuzz.sh all 600              # every harness, 10 minutes each
#   scripts/fuzz.sh all 3600 10000000    # the campaign goal: 10M executions or one hour each
#
# Installs clang-22 and libFuzzer (Debian) if missing, builds the instrumented harnesses into
# build-fuzz/ (clang++-22, -DPIMC_FUZZ=ON), and runs each from its committed seeds
# (fuzz/corpus/<name>) with a working corpus in build-fuzz/corpus/<name>. Findings (crash,
# leak, timeout, out-of-memory) go to build-fuzz/findings/<name>/; the summary line per
# harness gives executions, coverage and findings, and the run's log is
# build-fuzz/logs/<name>.log. Exit status 1 when any harness has a finding.
set -euo pipefail
cd "$(dirname "$0")/.."
harness=${1:-all}
seconds=${2:-60}
runs=${3:--1}
case "$seconds" in ''|*[!0-9]*) echo "fuzz.sh: seconds must be a number, got '$seconds'" >&2; exit 2;; esac
case "$runs" in -1) ;; ''|*[!0-9]*) echo "fuzz.sh: runs must be a number, got '$runs'" >&2; exit 2;; esac

all=$(ls fuzz/corpus)
if [ "$harness" = all ]; then
  list=$all
elif echo "$all" | grep -qx "$harness"; then
  list=$harness
else
  echo "fuzz.sh: unknown harness '$harness'; harnesses: $(echo $all)" >&2
  exit 2
fi

PIMC_EXTRA_PACKAGES="clang-22 libclang-rt-22-dev" PIMC_BUILD_DIR=build-fuzz \
  PIMC_CMAKE_ARGS="-DPIMC_FUZZ=ON -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22" \
  PIMC_NINJA_TARGETS="$(for h in $list; do printf 'pimc-fuzz-%s ' "$h"; done)" \
  scripts/setup.sh

# Per-harness input size limits: text formats stay small, programs and ONNX models are larger.
max_len() {
  case "$1" in
    program|onnx) echo 262144;;
    size-expr) echo 4096;;
    *) echo 65536;;
  esac
}

# allow_user_poisoning=0: LLVM's allocator poisons by hand only in instrumented code, and
# libMLIR is not instrumented (scripts/test.sh --sanitize explains the false report).
export ASAN_OPTIONS="detect_leaks=1:allow_user_poisoning=0:${ASAN_OPTIONS:-}"
status=0
mkdir -p build-fuzz/logs
for h in $list; do
  corpus=build-fuzz/corpus/$h findings=build-fuzz/findings/$h log=build-fuzz/logs/$h.log
  mkdir -p "$corpus" "$findings"
  cp -n fuzz/corpus/"$h"/* "$corpus"/ 2>/dev/null || true
  echo "fuzz: $h for ${seconds}s$([ "$runs" != -1 ] && echo " or $runs executions") (log: $log)"
  set +e
  build-fuzz/fuzz/pimc-fuzz-"$h" "$corpus" -max_total_time="$seconds" -runs="$runs" -timeout=10 \
    -rss_limit_mb=2048 -max_len="$(max_len "$h")" -print_final_stats=1 \
    -artifact_prefix="$findings/" > "$log" 2>&1
  rc=$?
  set -e
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || echo 0)
  found=$(find "$findings" -type f | wc -l)
  echo "fuzz: $h: $execs executions, coverage $cov, $found finding(s), exit $rc"
  if [ "$rc" -ne 0 ] || [ "$found" -ne 0 ]; then
    status=1
    grep -m1 -E 'ERROR: (AddressSanitizer|libFuzzer|LeakSanitizer)|runtime error' "$log" || true
  fi
done
exit $status
