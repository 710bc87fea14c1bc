#!/usr/bin/env python3
"""Write a full-size Llama-architecture HF checkpoint with seeded random weights.

    make_shaped_checkpoint.py --preset llama3.2-1b --out DIR [--sparse]

Presets follow the real models' config.json shapes. Weights are bf16 N(0, 0.02)
(norm weights 1), streamed to disk tensor by tensor so memory stays small.
--sparse writes the header and leaves the data as a hole (zeros, no disk
blocks): enough for tests that only read headers (import, IR size).
"""
import argparse
import json
import os
import struct
import sys

PRESETS = {
    # meta-llama/Llama-3.2-1B
    "llama3.2-1b": dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                        num_attention_heads=32, num_key_value_heads=8, vocab_size=128256,
                        tie_word_embeddings=True, rope_theta=500000.0,
                        max_position_embeddings=131072,
                        rope_scaling={"rope_type": "llama3", "factor": 32.0,
                                      "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                      "original_max_position_embeddings": 8192}),
    # meta-llama/Meta-Llama-3-8B
    "llama3-8b": dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                      num_attention_heads=32, num_key_value_heads=8, vocab_size=128256,
                      tie_word_embeddings=False, rope_theta=500000.0,
                      max_position_embeddings=8192, rope_scaling=None),
    # Not a real model: Llama-3's head dim 128 (2 banks' worth of V^T rows on
    # hbm3-pim) at a size the functional model runs in seconds
    # (test/Backend/kernel-library.test).
    "tiny-hd128": dict(hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                       num_attention_heads=2, num_key_value_heads=1, vocab_size=512,
                       tie_word_embeddings=False, rope_theta=500000.0,
                       max_position_embeddings=2048, rope_scaling=None),
    # meta-llama/Meta-Llama-3-70B
    "llama3-70b": dict(hidden_size=8192, intermediate_size=28672, num_hidden_layers=80,
                       num_attention_heads=64, num_key_value_heads=8, vocab_size=128256,
                       tie_word_embeddings=False, rope_theta=500000.0,
                       max_position_embeddings=8192, rope_scaling=None),
}


def tensor_shapes(c):
    H, I, V = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    hd = H // c["num_attention_heads"]
    q, kv = c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd
    shapes = {"model.embed_tokens.weight": [V, H], "model.norm.weight": [H]}
    if not c["tie_word_embeddings"]:
        shapes["lm_head.weight"] = [V, H]
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        shapes.update({
            p + "input_layernorm.weight": [H],
            p + "post_attention_layernorm.weight": [H],
            p + "self_attn.q_proj.weight": [q, H],
            p + "self_attn.k_proj.weight": [kv, H],
            p + "self_attn.v_proj.weight": [kv, H],
            p + "self_attn.o_proj.weight": [H, q],
            p + "mlp.gate_proj.weight": [I, H],
            p + "mlp.up_proj.weight": [I, H],
            p + "mlp.down_proj.weight": [H, I],
        })
    return shapes


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", required=True, choices=sorted(PRESETS))
    ap.add_argument("--out", required=True)
    ap.add_argument("--sparse", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    cfg = dict(model_type="llama", architectures=["LlamaForCausalLM"], hidden_act="silu",
               rms_norm_eps=1e-5, torch_dtype="bfloat16", attention_bias=False, mlp_bias=False,
               bos_token_id=128000, eos_token_id=128001)
    cfg.update(PRESETS[args.preset])
    shapes = tensor_shapes(cfg)
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name in sorted(shapes):
        n = 1
        for d in shapes[name]:
            n *= d
        header[name] = {"dtype": "BF16", "shape": shapes[name], "data_offsets": [offset, offset + 2 * n]}
        offset += 2 * n
    blob = json.dumps(header, separators=(",", ":")).encode()
    blob += b" " * (-(len(blob) + 8) % 8)

    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    path = os.path.join(args.out, "model.safetensors")
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(blob)) + blob)
        if args.sparse:
            f.truncate(8 + len(blob) + offset)
        else:
            import torch
            gen = torch.Generator().manual_seed(args.seed)
            for k, name in enumerate(sorted(shapes)):
                shape = shapes[name]
                if len(shape) == 1:
                    t = torch.ones(shape, dtype=torch.bfloat16)
                    f.write(t.view(torch.int16).numpy().tobytes())
                else:
                    rows_per_chunk = max(1, (1 << 24) // shape[1])
                    for r in range(0, shape[0], rows_per_chunk):
                        rows = min(rows_per_chunk, shape[0] - r)
                        t = (torch.randn(rows, shape[1], generator=gen) * 0.02).to(torch.bfloat16)
                        f.write(t.view(torch.int16).numpy().tobytes())
                print(f"\r  {k + 1}/{len(shapes)} tensors", end="", file=sys.stderr, flush=True)
            print(file=sys.stderr)
    os.replace(tmp, path)
    print(f"{args.out}: {args.preset}, {len(shapes)} tensors, {offset / 1e9:.2f} GB of bf16 weights"
          + (" (sparse)" if args.sparse else ""))


if __name__ == "__main__":
    main()
