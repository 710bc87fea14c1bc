"""torch_export.py NAME OUT_DIR

Exports a small PyTorch module with torch.onnx.export (opset 17) written the
way people write them (tuple-unpacked shapes, repeat_kv by expand+reshape,
masked_fill causal masks, topk routing), with seeded weights, and writes
NAME.onnx, NAME.inputs.safetensors (input_0) and NAME.expect.safetensors
(output_0, PyTorch's result) for `pimc run-ref`.
"""
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "python"))
from pimc_testgen import safetensors_io  # noqa: E402


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(d))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class LlamaBlock(nn.Module):
    def __init__(self, d=64, heads=4, kv_heads=2, T=8, ffn=128):
        super().__init__()
        self.h, self.kvh, self.hd = heads, kv_heads, d // heads
        self.q_proj = nn.Linear(d, d, bias=False)
        self.k_proj = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.v_proj = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.o_proj = nn.Linear(d, d, bias=False)
        self.norm1, self.norm2 = RMSNorm(d), RMSNorm(d)
        self.gate = nn.Linear(d, ffn, bias=False)
        self.up = nn.Linear(d, ffn, bias=False)
        self.down = nn.Linear(ffn, d, bias=False)
        inv = 1.0 / (10000 ** (torch.arange(0, self.hd, 2).float() / self.hd))
        freqs = torch.outer(torch.arange(T).float(), inv)
        emb = torch.cat((freqs, freqs), -1)
        self.register_buffer("cos", emb.cos())
        self.register_buffer("sin", emb.sin())
        self.register_buffer("mask", torch.tril(torch.ones(T, T, dtype=torch.bool)))

    def forward(self, x):
        B, T, D = x.shape
        h = self.norm1(x)
        q = self.q_proj(h).view(B, T, self.h, self.hd).transpose(1, 2)
        k = self.k_proj(h).view(B, T, self.kvh, self.hd).transpose(1, 2)
        v = self.v_proj(h).view(B, T, self.kvh, self.hd).transpose(1, 2)
        q = q * self.cos + rotate_half(q) * self.sin
        k = k * self.cos + rotate_half(k) * self.sin
        rep = self.h // self.kvh
        k = k[:, :, None].expand(B, self.kvh, rep, T, self.hd).reshape(B, self.h, T, self.hd)
        v = v[:, :, None].expand(B, self.kvh, rep, T, self.hd).reshape(B, self.h, T, self.hd)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(self.hd)
        att = att.masked_fill(~self.mask[:T, :T], float("-inf")).softmax(-1)
        o = (att @ v).transpose(1, 2).reshape(B, T, D)
        x = x + self.o_proj(o)
        h = self.norm2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class GPT2Block(nn.Module):
    def __init__(self, d=64, heads=4, T=8):
        super().__init__()
        self.h = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.fc = nn.Linear(d, 4 * d)
        self.proj = nn.Linear(4 * d, d)
        self.register_buffer("bias", torch.tril(torch.ones(T, T)).view(1, 1, T, T))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(self.ln1(x)).split(C, dim=2)
        q = q.view(B, T, self.h, C // self.h).transpose(1, 2)
        k = k.view(B, T, self.h, C // self.h).transpose(1, 2)
        v = v.view(B, T, self.h, C // self.h).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        x = x + self.c_proj(y)
        return x + self.proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class MoE(nn.Module):
    def __init__(self, d=64, experts=4, ffn=96, top_k=2):
        super().__init__()
        self.top_k, self.experts = top_k, experts
        self.router = nn.Linear(d, experts, bias=False)
        self.w1 = nn.ModuleList(nn.Linear(d, ffn, bias=False) for _ in range(experts))
        self.w3 = nn.ModuleList(nn.Linear(d, ffn, bias=False) for _ in range(experts))
        self.w2 = nn.ModuleList(nn.Linear(ffn, d, bias=False) for _ in range(experts))

    def forward(self, x):
        B, T, D = x.shape
        x2 = x.reshape(B * T, D)
        probs = self.router(x2).softmax(-1)
        top = torch.topk(probs, self.top_k, dim=-1)
        w = top[0] / top[0].sum(-1, keepdim=True)
        out = torch.zeros_like(x2)
        for e in range(self.experts):
            gate = (w * (top[1] == e)).sum(-1, keepdim=True)
            out = out + gate * self.w2[e](F.silu(self.w1[e](x2)) * self.w3[e](x2))
        return out.reshape(B, T, D)


class TinyLM(nn.Module):
    # Token embedding + block + tied-free head: Gather on a weight table.
    def __init__(self, vocab=50, d=64):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.block = LlamaBlock(d=d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, ids):
        return self.head(self.block(self.embed(ids)))


MODELS = {"llama": LlamaBlock, "gpt2": GPT2Block, "moe": MoE, "tinylm": TinyLM}


def main():
    name, out = sys.argv[1], sys.argv[2]
    # "<model>_dynamic": exported with dynamic batch and sequence axes.
    base, dynamic = (name[: -len("_dynamic")], True) if name.endswith("_dynamic") else (name, False)
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    m = MODELS[base]().eval()
    x = torch.randint(0, 50, (1, 8)) if base == "tinylm" else torch.randn(1, 8, 64)
    with torch.no_grad():
        y = m(x)
    axes = {"x": {0: "B", 1: "T"}, "y": {0: "B", 1: "T"}} if dynamic else None
    torch.onnx.export(m, (x,), os.path.join(out, name + ".onnx"), opset_version=17,
                      input_names=["x"], output_names=["y"], dynamic_axes=axes,
                      dynamo=False)  # the TorchScript exporter at opset 17 (docs/torch-bridge.md)
    safetensors_io.write_file(os.path.join(out, name + ".inputs.safetensors"), {"input_0": x})
    safetensors_io.write_file(os.path.join(out, name + ".expect.safetensors"), {"output_0": y})


if __name__ == "__main__":
    main()
