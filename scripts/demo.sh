#!/usr/bin/env bash
# The demo: builds pimc, writes a small Llama-architecture checkpoint with
# seeded random weights, imports it into llm IR and generates tokens with the
# reference interpreter, then compiles it for the default PIM target and runs
# it on pimsim (functional mode): tokens and the performance report.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
out=build/demo
mkdir -p "$out"
/usr/bin/python3 python/pimc_testgen/make_checkpoints.py --out "$out" --only demo
ckpt="$out/demo"
echo
echo "== pimc import $ckpt -o $out/demo.mlir"
build/tools/pimc/pimc import "$ckpt" -o "$out/demo.mlir"
echo "   $(grep -c '= llm\.' "$out/demo.mlir") llm ops, $(wc -c < "$out/demo.mlir") bytes of IR; weights stay in the checkpoint"
prompt=$(/usr/bin/python3 -c "import json,sys; print(','.join(map(str, json.load(open(sys.argv[1]))['prompt_ids'])))" "$ckpt/golden.json")
echo
echo "== pimc run-ref $out/demo.mlir --weights $ckpt --prompt-ids $prompt --max-new-tokens 16"
report=$(build/tools/pimc/pimc run-ref "$out/demo.mlir" --weights "$ckpt" --prompt-ids "$prompt" --max-new-tokens 16)
echo "$report"
expected=$(/usr/bin/python3 -c "import json,sys; print(' '.join(map(str, json.load(open(sys.argv[1]))['tokens'])))" "$ckpt/golden.json")
echo "PyTorch reference:  $expected"
if [ "$(echo "$report" | sed -n 's/^tokens: //p')" = "$expected" ]; then
  echo "the interpreter's tokens match PyTorch"
else
  echo "MISMATCH between the interpreter and PyTorch" >&2
  exit 1
fi

# The compiler: the same model compiled for the default target (hbm3-pim) and
# run on pimsim in functional mode through the runtime: tokens, then the
# simulated performance report. The tokens must equal the reference's.
echo
echo "== pimc compile $ckpt --target targets/hbm3-pim.json -o $out/demo.pimb"
build/tools/pimc/pimc compile "$ckpt" --target targets/hbm3-pim.json -o "$out/demo.pimb" \
  --dump-phases-to "$out/phases"
echo "   (phases: $out/phases/{llm,llm-dispatched,pim}.mlir, program.pimasm)"
echo
echo "== pimc run $out/demo.pimb --weights $ckpt --prompt-ids $prompt --max-new-tokens 16 --mode functional"
run=$(build/tools/pimc/pimc run "$out/demo.pimb" --target targets/hbm3-pim.json --weights "$ckpt" \
  --prompt-ids "$prompt" --max-new-tokens 16 --mode functional \
  --stats "$out/demo.stats.json" --trace "$out/demo.perfetto.json")
echo "$run"
if [ "$(echo "$run" | sed -n 's/^tokens: //p')" = "$expected" ]; then
  echo "pimsim's tokens match the reference interpreter and PyTorch"
else
  echo "MISMATCH between pimsim and the reference" >&2
  exit 1
fi
echo "(stats: $out/demo.stats.json; Perfetto trace: $out/demo.perfetto.json)"
