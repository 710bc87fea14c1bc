"""Inputs, weights and torch-computed expected outputs for run-ref tests.

usage: make_prims_case.py <case> <outdir>; writes <outdir>/{w,in,out}.safetensors.
The expected outputs are torch 1.13 CPU float32 results of the same
computation the .mlir file of the case spells in llm ops.
"""
import sys

import torch
import torch.nn.functional as F

from pimc_testgen.safetensors_io import write_file


def graph():
    g = torch.Generator().manual_seed(5)
    x = torch.randn(2, 4, 8, generator=g)
    # No ties: torch.topk does not promise an order for equal values (the
    # lower-index rule is unit-tested in KernelsTest.cpp).
    y = torch.randn(8, 6, generator=g)
    pos = torch.tensor([0, 1, 2, 3], dtype=torch.int64)
    pos_in = torch.tensor([0, 3, 0, 7], dtype=torch.int64)
    bias = torch.randn(6, generator=g)
    lw = torch.randn(8, generator=g).to(torch.bfloat16)
    lb = torch.randn(8, generator=g)
    out0 = torch.matmul(x, y) + bias
    ln = F.layer_norm(x, (8,), lw.float(), lb, eps=1e-5)
    v, i = torch.topk(x, 3, dim=-1)
    mask = torch.zeros(4, 4).masked_fill(pos_in[None, :] > pos_in[:, None], float("-inf"))
    cs = torch.cumsum((pos_in != 0).long(), dim=0)
    cn = torch.cos(torch.sin(torch.log(torch.sqrt(torch.relu(x)) + 1)))
    rc = torch.reciprocal(torch.abs(torch.erf(x)) + 1)
    mn = torch.minimum(torch.pow(cn, 2.0), rc)
    return ({"bias": bias, "ln.weight": lw, "ln.bias": lb},
            [x, y, pos_in], [out0, ln, v, i, mask, cs, mn])


def expert(x, g, u, d, act=F.silu):
    return F.linear(act(F.linear(x, g)) * F.linear(x, u), d)


def moe_case(T=6, H=16, I=8, E=4, seed=11):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(T, H, generator=g)
    wr = torch.randn(E, H, generator=g) * 0.5
    ws = {}
    for e in range(E):
        ws[e] = (torch.randn(I, H, generator=g) * 0.3, torch.randn(I, H, generator=g) * 0.3,
                 torch.randn(H, I, generator=g) * 0.3)
    return x, wr, ws


def moe():
    """Mixtral (softmax, top-2, renormalise) and Llama 4 (top-1 of the
    logits, sigmoid, weight on the expert input, shared expert), written
    the way the HF modules compute them."""
    x, wr, ws = moe_case()
    E = len(ws)
    # Mixtral: routing_weights = softmax(logits, float); topk; /= sum; index_add_.
    logits = F.linear(x, wr)
    probs = F.softmax(logits, dim=1, dtype=torch.float)
    rw, sel = torch.topk(probs, 2, dim=-1)
    rw = rw / rw.sum(dim=-1, keepdim=True)
    mix = torch.zeros_like(x)
    for e in range(E):
        idx, top = torch.where(sel == e)
        if idx.numel():
            mix.index_add_(0, idx, expert(x[idx], *ws[e]) * rw[idx, top, None])
    # Llama 4: top-1 of the router logits (+ bias), sigmoid of the chosen
    # logit scales the expert INPUT; ungated shared expert; gelu experts.
    g = torch.Generator().manual_seed(12)
    br = torch.randn(E, generator=g) * 0.1
    sg, su, sd = (torch.randn(8, 16, generator=g) * 0.3, torch.randn(8, 16, generator=g) * 0.3,
                  torch.randn(16, 8, generator=g) * 0.3)
    logits4 = F.linear(x, wr, br)
    top_v, top_i = torch.topk(logits4, 1, dim=1)
    scores = torch.full_like(logits4, float("-inf")).scatter_(1, top_i, top_v)
    scores = torch.sigmoid(scores)
    l4 = expert(x, sg, su, sd, F.gelu)
    for e in range(E):
        l4 = l4 + expert(x * scores[:, e:e + 1], *ws[e], F.gelu)
    weights = {"router": wr, "router_bias": br, "shared.gate": sg, "shared.up": su,
               "shared.down": sd}
    for e in range(E):
        weights["e%d.gate" % e], weights["e%d.up" % e], weights["e%d.down" % e] = ws[e]
    return weights, [x], [mix, l4]


def moe_qwen2():
    """Qwen2-MoE (HF Qwen2MoeSparseMoeBlock): softmax, top-2, no
    renormalisation (norm_topk_prob false), index_add_, then
    + sigmoid(shared_expert_gate(x)) * shared_expert(x). Also writes the
    result with the shared expert ungated (out_ungated.safetensors), which
    the gated llm.moe must not match."""
    x, wr, ws = moe_case(seed=21)
    E = len(ws)
    g = torch.Generator().manual_seed(22)
    sg, su, sd = (torch.randn(12, 16, generator=g) * 0.3, torch.randn(12, 16, generator=g) * 0.3,
                  torch.randn(16, 12, generator=g) * 0.3)
    wg = torch.randn(1, 16, generator=g)
    probs = F.softmax(F.linear(x, wr), dim=1, dtype=torch.float)
    rw, sel = torch.topk(probs, 2, dim=-1)
    routed = torch.zeros_like(x)
    expert_mask = F.one_hot(sel, num_classes=E).permute(2, 1, 0)
    for e in range(E):
        idx, top_x = torch.where(expert_mask[e])
        routed.index_add_(0, top_x, expert(x[None, top_x].reshape(-1, 16), *ws[e]) * rw[top_x, idx, None])
    shared = expert(x, sg, su, sd)
    gated = routed + torch.sigmoid(F.linear(x, wg)) * shared
    weights = {"router": wr, "shared.gate": sg, "shared.up": su, "shared.down": sd,
               "shared_expert_gate": wg}
    for e in range(E):
        weights["e%d.gate" % e], weights["e%d.up" % e], weights["e%d.down" % e] = ws[e]
    return weights, [x], [gated], {"ungated": [routed + shared]}


def main():
    case, out = sys.argv[1], sys.argv[2]
    result = {"graph": graph, "moe": moe, "moe_qwen2": moe_qwen2}[case]()
    weights, inputs, outputs = result[:3]
    extra = result[3] if len(result) > 3 else {}
    write_file(out + "/w.safetensors", weights)
    write_file(out + "/in.safetensors", {"input_%d" % i: t.contiguous() for i, t in enumerate(inputs)})
    write_file(out + "/out.safetensors", {"output_%d" % i: t.contiguous() for i, t in enumerate(outputs)})
    for name, ts in extra.items():
        write_file(out + "/out_%s.safetensors" % name,
                   {"output_%d" % i: t.contiguous() for i, t in enumerate(ts)})


if __name__ == "__main__":
    main()
