"""Random weights and inputs for the numerics checks of the raising passes.

Usage: raise-make-weights.py graph.mlir OUTDIR
Reads every `llm.weight "name" : tensor<...xf32>` and the argument types of
@forward (f32 activations, i64 token ids in [0, 8)), writes
OUTDIR/w.safetensors and OUTDIR/in.safetensors (input_0, ...). Weights named *inv_freq hold the real default-rope frequencies
(theta 1e4, as HF computes them) so the rope tables are a rope; *.attn.bias
is GPT-2's tril mask buffer; ln* / *norm* / *.ln_* are around 1 (norm
weights); the rest ~ N(0, 1/sqrt(K)).
"""
import re
import sys

import torch

from pimc_testgen.safetensors_io import write_file


def shape_of(text):
    dims = text.split("x")[:-1]
    return [int(d) for d in dims]


def main():
    path, out = sys.argv[1], sys.argv[2]
    src = open(path).read()
    gen = torch.Generator().manual_seed(0)
    weights = {}
    for name, ty in re.findall(r'llm\.weight "([^"]+)" : tensor<([0-9x]+f32)>', src):
        shape = shape_of(ty)
        if name.endswith("inv_freq"):
            d = 2 * shape[0]
            weights[name] = 1.0 / (10000.0 ** (torch.arange(0, d, 2, dtype=torch.int64).float() / d))
        elif name.endswith(".attn.bias"):
            # GPT-2's causal-mask buffer: tril(ones).view(1, 1, n, n).
            weights[name] = torch.tril(torch.ones(shape[-2:])).reshape(shape)
        elif name.startswith("ln") or "norm" in name or ".ln_" in name:
            weights[name] = 1.0 + 0.1 * torch.randn(shape, generator=gen)
        else:
            weights[name] = torch.randn(shape, generator=gen) / (shape[-1] ** 0.5)
    sig = re.search(r"func\.func @forward\(([^)]*)\)", src).group(1)
    inputs = {}
    for i, ty in enumerate(re.findall(r"tensor<([0-9x]+(?:f32|i64))>", sig)):
        if ty.endswith("i64"):
            # Token ids: small enough for any vocabulary in the tests.
            inputs["input_%d" % i] = torch.randint(0, 8, shape_of(ty), generator=gen)
        else:
            inputs["input_%d" % i] = torch.randn(shape_of(ty), generator=gen)
    write_file(out + "/w.safetensors", weights)
    write_file(out + "/in.safetensors", inputs)


if __name__ == "__main__":
    main()
