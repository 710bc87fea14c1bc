"""The bridge's Python API (api.test): export to a .json path, trace without writing, the
tracer fallback and input checks. Usage: api_use.py OUTDIR"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import edge_models                       # noqa: E402
import pimc_torch                        # noqa: E402
from pimc_torch import exporter          # noqa: E402

out = sys.argv[1]
torch.manual_seed(0)
net = edge_models.NeedsArg(4)
g = pimc_torch.export(net, (torch.ones(2, 4),), os.path.join(out, "net.json"))
print("export:", g["parameters"], [n["name"] for n in g["nodes"] if n["op"] == "placeholder"])
print("files:", sorted(os.listdir(out)))

g, tensors = pimc_torch.trace(net, (torch.ones(2, 4),), input_names=["hidden"])
print("trace:", sorted(tensors), g["nodes"][2]["name"], g["parameters"])

try:
    pimc_torch.trace(net, (torch.ones(2, 4), 3))
except pimc_torch.ExportError as e:
    print("error:", e)


# torch.export refusing a model (as it does for data-dependent shapes) falls back to make_fx and
# says why in the producer record.
def refuse(*args):
    raise exporter.ExportError("torch.export: cannot trace data-dependent shapes")


exporter.has_torch_export = lambda: True
exporter._trace_torch_export = refuse
g, _ = pimc_torch.trace(net, (torch.ones(2, 4),))
print("fallback:", g["producer"]["tracer"], "|", g["producer"]["fallback"])


# Without functionalisation an in-place op would reach the graph: refused by name.
class InPlace(torch.nn.Module):
    def forward(self, x):
        y = x * 2
        y.add_(1)
        return y


torch.func.functionalize = lambda f: f
try:
    pimc_torch.trace(InPlace(), (torch.ones(2),), tracer="make_fx")
except pimc_torch.ExportError as e:
    print("error:", e)
