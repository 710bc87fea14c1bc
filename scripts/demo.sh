#!/usr/bin/env bash
# The demo: builds pimc, writes a small Llama-architecture checkpoint with
# seeded random weights, imports it into llm IR and generates tokens with the
# reference interpreter, then runs a PIM attention kernel on pimsim.
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

# pimsim on its own: AttAcc's bank-level attention (one head group per
# channel, 16 channels) as macro-ops, on the default target.
echo
echo "== pimsim run examples/attacc-attention.s on targets/hbm3-pim.json"
build/sim/pimsim asm examples/attacc-attention.s -o "$out/attacc-attention.pimb"
build/sim/pimsim run "$out/attacc-attention.pimb" --target targets/hbm3-pim.json \
  --stats "$out/attacc-attention.stats.json" --trace "$out/attacc-attention.perfetto.json"
echo "(stats: $out/attacc-attention.stats.json; Perfetto trace: $out/attacc-attention.perfetto.json)"
