"""Small modules for the bridge's edge cases (test/Frontend/Torch/edge-cases.test)."""

import torch
import torch.nn as nn


class Constants(nn.Module):
    """Tensor attributes that are neither parameters nor buffers, a literal built in forward,
    detach, a two-output op read twice and a tuple of outputs."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.scale = torch.tensor([0.5, 2.0, float("inf"), -1.0])     # 4 elements: inline
        self.table = torch.arange(100, dtype=torch.float32).reshape(25, 4) / 100   # 100: stored

    def forward(self, a, b):
        h = self.proj(a).detach() * self.scale.clamp(max=4.0)
        offset = torch.tensor([1.0, 0.0, 0.0, 1.0])
        h = h + offset + self.table[:2].sum(0)
        values, indices = h.max(dim=-1)
        return h + b, values * 2, indices


class ItemUser(nn.Module):
    def forward(self, x):
        return x * x.sum().item()


class ReturnsInt(nn.Module):
    def forward(self, x):
        return x + 1, 3


class Broken(nn.Module):
    def forward(self, x):
        return x @ torch.ones(3, 3)


class NeedsArg(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.lin = nn.Linear(width, width)

    def forward(self, x):
        return self.lin(x)


class NoOnnx(nn.Module):
    """Traces fine; torch.onnx.export has no symbolic for aten::cumprod at opset 17."""

    def forward(self, x):
        return torch.cumprod(x, 1)
