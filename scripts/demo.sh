#!/usr/bin/env bash
# The demo: builds pimc, writes a small Llama-architecture checkpoint with
# seeded random weights through transformers (save_pretrained; the golden is
# transformers' 32 greedy tokens), imports it into llm IR and generates the 32
# tokens with the reference interpreter, then compiles it for the default PIM
# target and runs it on pimsim (functional mode): the first 16 tokens (32 take
# ~3x as long to simulate) and the performance report.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
out=build/demo
py=build/venv/bin/python3   # the project's Python environment (scripts/setup.sh)
mkdir -p "$out"
"$py" python/pimc_testgen/make_checkpoints.py --out "$out" --only demo
ckpt="$out/demo"
echo
echo "== pimc import $ckpt -o $out/demo.mlir"
build/tools/pimc/pimc import "$ckpt" -o "$out/demo.mlir"
echo "   $(grep -c '= llm\.' "$out/demo.mlir") llm ops, $(wc -c < "$out/demo.mlir") bytes of IR; weights stay in the checkpoint"
golden() { "$py" -c "import json,sys; print(sys.argv[2].join(map(str, json.load(open(sys.argv[1]))[sys.argv[3]])))" "$ckpt/golden.json" "$@"; }
prompt=$(golden , prompt_ids)
expected=$(golden " " tokens)
steps=$(echo "$expected" | wc -w)
echo
echo "== pimc run-ref $out/demo.mlir --weights $ckpt --prompt-ids $prompt --max-new-tokens $steps"
report=$(build/tools/pimc/pimc run-ref "$out/demo.mlir" --weights "$ckpt" --prompt-ids "$prompt" --max-new-tokens "$steps")
echo "$report"
echo "transformers:  $expected"
if [ "$(echo "$report" | sed -n 's/^tokens: //p')" = "$expected" ]; then
  echo "the interpreter's $steps tokens match transformers'"
else
  echo "MISMATCH between the interpreter and transformers" >&2
  exit 1
fi

# The compiler: the same model compiled for the default target (hbm3-pim) and
# run on pimsim in functional mode through the runtime: tokens, then the
# simulated performance report. Greedy decoding is prefix-consistent, so the
# 16 tokens must equal the first 16 of transformers' (and the interpreter's).
echo
echo "== pimc compile $ckpt --target targets/hbm3-pim.json -o $out/demo.pimb"
build/tools/pimc/pimc compile "$ckpt" --target targets/hbm3-pim.json -o "$out/demo.pimb" \
  --dump-phases-to "$out/phases"
echo "   (phases: $out/phases/{llm,llm-dispatched,pim-tensor,pim}.mlir, program.pimasm)"
echo
echo "== pimc run $out/demo.pimb --weights $ckpt --prompt-ids $prompt --max-new-tokens 16 --mode functional"
run=$(build/tools/pimc/pimc run "$out/demo.pimb" --target targets/hbm3-pim.json --weights "$ckpt" \
  --prompt-ids "$prompt" --max-new-tokens 16 --mode functional \
  --stats "$out/demo.stats.json" --trace "$out/demo.perfetto.json")
echo "$run"
if [ "$(echo "$run" | sed -n 's/^tokens: //p')" = "$(echo "$expected" | cut -d' ' -f1-16)" ]; then
  echo "pimsim's 16 tokens match the first 16 of transformers' and the interpreter's"
else
  echo "MISMATCH between pimsim and the reference" >&2
  exit 1
fi
echo "(stats: $out/demo.stats.json; Perfetto trace: $out/demo.perfetto.json)"
