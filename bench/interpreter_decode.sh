#!/usr/bin/env bash
# Benchmark (not a test): reference-interpreter decode speed on a
# Llama-3.2-1B-shaped bf16 checkpoint (hidden 2048, 16 layers, 32 q / 8 kv
# heads, intermediate 8192, vocab 128256, tied embeddings; seeded random
# weights), against the memory-bandwidth bound of this machine:
#   bound tokens/s = read bandwidth / weight bytes read per decode token
# (every weight matrix is streamed once per token; the tied embedding is read
# in full by the LM head). Run after scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
ckpt=${PIMC_BENCH_DIR:-build/bench-data}/llama3.2-1b
tokens=${PIMC_BENCH_TOKENS:-17}
if [ ! -f "$ckpt/model.safetensors" ]; then
  echo "writing $ckpt (2.5 GB, once)"
  build/venv/bin/python3 bench/make_shaped_checkpoint.py --preset llama3.2-1b --out "$ckpt"
fi
bw=$(build/bench/pimc-membw)
run=$(build/tools/pimc/pimc run-ref "$ckpt" --prompt-ids 128000,791,6460,315,8191,374 \
        --max-new-tokens "$tokens" --max-context 256 --json)
build/venv/bin/python3 - "$bw" "$run" <<'PY'
import json, sys
bw, run = json.loads(sys.argv[1]), json.loads(sys.argv[2])
weight_bytes = run["weight_bytes"]
rate = run["decode_tokens_per_second"]
read_bound = bw["read_gbps"] * 1e9 / weight_bytes
copy_bound = max(bw["copy_gbps_1thread"], bw["copy_gbps"]) * 1e9 / weight_bytes
print(f"weights:             {weight_bytes / 1e9:.3f} GB (bf16)")
print(f"memory bandwidth:    read {bw['read_gbps']:.2f} GB/s, copy {bw['copy_gbps_1thread']:.2f} GB/s (1 thread), "
      f"{bw['copy_gbps']:.2f} GB/s ({bw['threads']} threads)")
print(f"decode:              {rate:.3f} tokens/s over {len(run['tokens']) - 1} tokens "
      f"(prefill {run['prefill_seconds'] * 1e3:.0f} ms for {len(run['prompt_ids'])} tokens)")
print(f"bandwidth bound:     {read_bound:.3f} tokens/s (read)  {copy_bound:.3f} tokens/s (copy)")
print(f"fraction of bound:   {rate / read_bound:.1%} (read)  {rate / copy_bound:.1%} (copy); target >= 25%")
PY
