"""Small modules that exercise FX-importer table entries the model stacks do not reach
(test/Frontend/FX/ops-vs-torch.test exports them with the bridge and compares the
interpreter with PyTorch)."""

import math

import torch
import torch.nn.functional as F
from torch import nn


class Routing(nn.Module):
    """MoE-style routing and reductions: topk, scatter, one_hot, index_add, log_softmax,
    cumsum, max.dim, argmax, amax, prod, gather by index."""

    def __init__(self):
        super().__init__()
        self.router = nn.Linear(8, 4, bias=False)
        self.register_buffer("order", torch.tensor([3, 1, 0, 2, 5, 4]))

    def forward(self, x):
        logits = self.router(x)                                   # [6, 4]
        probs = F.softmax(logits, dim=-1)
        w, idx = torch.topk(probs, 2, dim=-1)
        w = w / w.sum(dim=-1, keepdim=True)
        dense = torch.zeros_like(probs).scatter(1, idx, w)        # [6, 4]
        # F.one_hot reads num_classes with .item() (untraceable): compare instead.
        hot = (idx.unsqueeze(-1) == torch.arange(4)).long().sum(dim=1)  # [6, 4]
        counts = torch.cumsum(hot, dim=0).float()
        acc = torch.zeros(6, 8).index_add(0, self.order, x * 2.0)
        picked = x.index_select(0, self.order)
        mx, am = torch.max(logits, dim=0)
        lsm = F.log_softmax(logits, dim=0)
        top = logits.amax(dim=1, keepdim=True) - logits.argmax(dim=1, keepdim=True).float()
        return (dense + counts * 0.01 + lsm, acc - picked, mx + am.float(),
                top, torch.prod(probs + 1.0, dim=1))


class Dispatch(nn.Module):
    """Data-dependent selection traced at its example's counts: torch.where(mask) (nonzero +
    unbind), nonzero on a float tensor, advanced indexing with two index tensors (also
    negative ones) and with a leading None, index_add of the selected rows."""

    def forward(self, x):                                          # [6, 8]
        rows, cols = torch.where(x > 0.5)
        picked = x[rows, cols]                                     # [N]
        rows_neg = rows - 6                                        # -6..-1: from the end
        cols_neg = cols - 8
        again = x[rows_neg, cols_neg]
        lifted = x[None, rows]                                     # [1, N, 8]
        nz = torch.nonzero(torch.relu(x[:, :3] - 0.2)).float()     # [M, 2]
        acc = torch.zeros(6, 8).index_add(0, rows, lifted[0] * picked[:, None])
        return picked + again, acc, nz


class Shapes(nn.Module):
    """Views, slicing, concatenation, masks and element-wise math."""

    def forward(self, x, y):
        b, t, d = x.shape                                          # [2, 5, 6]
        h = x.view(b, t, 2, 3).permute(0, 2, 1, 3)                 # [2, 2, 5, 3]
        h = torch.cat([h[..., 1:], h[..., ::2]], dim=-1)           # [2, 2, 5, 4]
        a, c = h.chunk(2, dim=1)
        s = torch.stack([a.squeeze(1), c.squeeze(1)], dim=0)       # [2, 2, 5, 4]
        s = s.transpose(0, 1).reshape(b, 2 * t, 4)                 # [2, 10, 4]
        mask = torch.ones(2 * t, 4, dtype=torch.bool).triu(1)
        s = s.masked_fill(mask, -1.0)
        sel = torch.where(s > 0, s.exp(), -s.abs().sqrt())
        e = torch.erf(sel) + torch.clamp(sel, -0.5, 0.5) * torch.sigmoid(sel)
        z = y.unsqueeze(0).expand(b, -1, -1).repeat(1, 1, 2)       # [2, 10, 4]
        p = torch.pow(torch.abs(z) + 1.0, 1.5) + (z ** 2) - torch.rsqrt(z * z + 1.0)
        q = torch.reciprocal(p) - torch.log(p) + torch.minimum(e, z) - torch.maximum(e, z)
        r = F.gelu(q) + F.relu(q) * 0.5 + torch.tanh(q) / 3.0 + torch.sin(q) - torch.cos(q)
        out = 1.0 - r
        first, last = out.select(1, 0), out[:, -1]
        return out, first * last, F.silu(out).mean(dim=(0, 2))


class Norms(nn.Module):
    """LayerNorm with and without affine parameters, matmuls on activations, a Conv1D-style
    addmm and an unbind."""

    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(8)
        self.w = nn.Parameter(torch.randn(8, 12) / math.sqrt(8))
        self.b = nn.Parameter(torch.randn(12))
        with torch.no_grad():
            self.ln.weight.normal_()
            self.ln.bias.normal_()

    def forward(self, x):
        h = self.ln(x)                                             # [1, 4, 8]
        flat = h.view(-1, 8)
        y = torch.addmm(self.b, flat, self.w).view(1, 4, 12)       # Conv1D
        q, k, v = y.split(4, dim=-1)
        att = torch.softmax(torch.matmul(q, k.transpose(-1, -2)) / 2.0, dim=-1)
        o = torch.bmm(att, v) + F.layer_norm(v, (4,), eps=1e-6)
        u0, u1 = torch.unbind(o.view(2, 2, 4), dim=0)
        return o, u0 * u1


class Constants(nn.Module):
    """Tensor constants captured by the tracer: a small one (inline "value"), a large one
    (in the safetensors file), an integer index constant and a float buffer."""

    def __init__(self):
        super().__init__()
        self.big = torch.linspace(-1.0, 1.0, 96).view(12, 8)       # plain attribute
        self.register_buffer("scale", torch.full((8,), 0.25))

    def forward(self, x):                                          # [12, 8]
        small = torch.tensor([1.0, -2.0, 0.5, 4.0, 1.0, 1.0, 3.0, -1.0])
        idx = torch.tensor([11, 0, 5])
        y = x * small + self.big * self.scale
        return y[idx], y.sum(dim=0)


class Stats(nn.Module):
    """Hand-written norms and statistics: var / std / var_mean, amin, max / min over all
    elements, where with a scalar, square."""

    def forward(self, x):                                          # [3, 8]
        mu = x.mean(-1, keepdim=True)
        var = x.var(-1, keepdim=True, unbiased=False)
        y = (x - mu) / torch.sqrt(var + 1e-5)
        v, m = torch.var_mean(x, dim=0)
        s = x.std(1)
        z = torch.where(x > 0, x.square(), 0.0) + x.amin(dim=0)
        return y, v * m, s + x.max() - x.min(), z


class Diffs(nn.Module):
    """torch.diff as transformers' masking code uses it on position ids, and with n, prepend
    and append on floats."""

    def forward(self, x, ids):                                     # [3, 6] f32, [2, 5] i64
        a = torch.diff(x, dim=1)
        b = torch.diff(x, n=2, dim=-1, prepend=x[:, :1] * 2, append=x[:, -1:])
        c = torch.diff(ids, dim=-1) != 1
        return a, b, c.float()


class CacheUpdate(nn.Module):
    """A static KV cache's update at run-time positions (index_copy along the sequence axis, as
    transformers' StaticCache writes it) and a functional copy_."""

    def __init__(self):
        super().__init__()
        self.register_buffer("cache", torch.randn(1, 2, 6, 4))

    def forward(self, x, pos):                                     # [1, 2, 2, 4] f32, [2] i64
        updated = self.cache.index_copy(2, pos, x)
        y = torch.zeros(2, 2, 4).copy_(x[0] * 2)
        return updated, y
