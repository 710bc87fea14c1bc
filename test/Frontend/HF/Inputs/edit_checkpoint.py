#!/usr/bin/env python3
"""Copy a seeded checkpoint (config.json and its safetensors files) with one change, for the
bad-input tests:

    edit_checkpoint.py SRC DST [--drop TENSOR] [--config JSON] [--fuse-experts]

--drop removes a tensor, --config replaces top-level config keys, --fuse-experts rewrites every
MoE block's per-expert tensors (mlp.experts.<e>.{gate,up,down}_proj.weight; Mixtral's
block_sparse_moe.experts.<e>.{w1,w3,w2}.weight) as the fused 3-D tensors transformers 5 keeps in
memory (mlp.experts.gate_up_proj [E, 2I, H], down_proj [E, H, I]; Mixtral's block named mlp).
"""
import argparse
import json
import os
import re

import safetensors.torch
import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--drop", action="append", default=[])
    ap.add_argument("--config", default=None)
    ap.add_argument("--fuse-experts", action="store_true")
    a = ap.parse_args()
    with open(os.path.join(a.src, "config.json")) as f:
        cfg = json.load(f)
    if a.config:
        cfg.update(json.loads(a.config))
    tensors = {}
    for fn in sorted(os.listdir(a.src)):
        if fn.endswith(".safetensors"):
            tensors.update(safetensors.torch.load_file(os.path.join(a.src, fn)))
    for name in a.drop:
        if name not in tensors:
            raise SystemExit("no tensor %r in %s" % (name, a.src))
        del tensors[name]
    if a.fuse_experts:
        # Mixtral's block_sparse_moe is `mlp` in memory, its w1 / w3 / w2 gate / up / down.
        role = {"gate_proj": "gate", "up_proj": "up", "down_proj": "down",
                "w1": "gate", "w3": "up", "w2": "down"}
        pat = re.compile(r"(.*)\.(?:block_sparse_moe|mlp)\.experts\.(\d+)\."
                         r"(gate_proj|up_proj|down_proj|w1|w3|w2)\.weight$")
        blocks = {}
        for name in list(tensors):
            m = pat.match(name)
            if m:
                blocks.setdefault(m.group(1), {})[(int(m.group(2)), role[m.group(3)])] = tensors.pop(name)
        if not blocks:
            raise SystemExit("no per-expert tensors in %s" % a.src)
        for layer, parts in blocks.items():
            n = 1 + max(e for e, _ in parts)
            prefix = layer + ".mlp.experts"
            tensors[prefix + ".gate_up_proj"] = torch.stack(
                [torch.cat([parts[(e, "gate")], parts[(e, "up")]]) for e in range(n)])
            tensors[prefix + ".down_proj"] = torch.stack([parts[(e, "down")] for e in range(n)])
            router = layer + ".block_sparse_moe.gate.weight"
            if router in tensors:
                tensors[layer + ".mlp.gate.weight"] = tensors.pop(router)
    os.makedirs(a.dst)
    with open(os.path.join(a.dst, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    safetensors.torch.save_file(tensors, os.path.join(a.dst, "model.safetensors"), metadata={"format": "pt"})


if __name__ == "__main__":
    main()
