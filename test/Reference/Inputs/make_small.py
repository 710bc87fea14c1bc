"""Input files for run-ref-bad-inputs.test: make_small.py <outdir>."""
import sys

import torch

from pimc_testgen.safetensors_io import write_file

d = sys.argv[1]
a = torch.tensor([[1.0, -2.0, 3.0], [-4.0, 5.0, -6.0]])
idx = torch.tensor([1, 0])
write_file(d + "/w.safetensors", {"w": torch.tensor([1.0, 2.0, -1.0]),
                                  "emb": torch.eye(4)})
write_file(d + "/in.safetensors", {"input_0": a, "input_1": idx})
# expected: gather rows [1, 0], times w; and > 0
s = a[idx] * torch.tensor([1.0, 2.0, -1.0])
write_file(d + "/out.safetensors", {"output_0": s, "output_1": s > 0})
write_file(d + "/out-one.safetensors", {"output_0": s})
write_file(d + "/out-shape.safetensors", {"output_0": s.reshape(3, 2), "output_1": s > 0})
write_file(d + "/out-dtype.safetensors", {"output_0": s, "output_1": (s > 0).long()})
write_file(d + "/one-input.safetensors", {"input_0": a})
write_file(d + "/bad-shape.safetensors", {"input_0": a.reshape(3, 2), "input_1": idx})
write_file(d + "/bad-dtype.safetensors", {"input_0": a, "input_1": idx.float()})
write_file(d + "/f64.safetensors", {"input_0": a.double(), "input_1": idx})
write_file(d + "/stray.safetensors", {"input_0": a, "input_1": idx, "x": a})
write_file(d + "/gap.safetensors", {"input_0": a, "input_2": idx})
write_file(d + "/bad-index.safetensors", {"input_0": a, "input_1": torch.tensor([0, 2])})
write_file(d + "/neg-index.safetensors", {"input_0": a, "input_1": torch.tensor([-1, -2])})
write_file(d + "/w-wrong.safetensors", {"w": torch.tensor([1.0, 2.0])})
write_file(d + "/nan.safetensors", {"input_0": torch.tensor([1.5, float("nan"), -2.5])})
write_file(d + "/trunc.safetensors", {"input_0": torch.tensor([1.5, -0.5, -2.5])})
