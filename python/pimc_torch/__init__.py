"""pimc_torch: export plain PyTorch modules to the pimc-fx-graph JSON + safetensors format.

    import pimc_torch
    pimc_torch.export(module, (x,), "out/")      # out/graph.json + out/graph.safetensors

See docs/torch-bridge.md and docs/frontend-graphs.md.
"""

from .exporter import ExportError, export, export_onnx, has_torch_export, trace  # noqa: F401
from .graph_format import GraphFormatError  # noqa: F401

__all__ = ["ExportError", "GraphFormatError", "export", "export_onnx", "has_torch_export", "trace"]
